// Running nft: a script on stdin is one transaction (all of it or nothing), so a failed apply
// leaves the kernel's table as it was.
import { execFile, spawn } from "node:child_process";

export interface NftResult {
  ok: boolean;
  /** nft's own message on failure, first lines only */
  error?: string;
  ms: number;
}

export function runNft(script: string, args: string[] = ["-f", "-"], nftBin = "nft"): Promise<NftResult> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const child = spawn(nftBin, args, { stdio: ["pipe", "ignore", "pipe"] });
    let err = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (d: string) => {
      if (err.length < 8192) err += d;
    });
    child.on("error", (e) => resolve({ ok: false, error: e.message, ms: performance.now() - t0 }));
    child.on("close", (code) =>
      resolve(
        code === 0
          ? { ok: true, ms: performance.now() - t0 }
          : {
              ok: false,
              error: err.trim().split("\n").slice(0, 6).join("\n") || `nft exited ${code}`,
              ms: performance.now() - t0,
            },
      ),
    );
    child.stdin.on("error", () => {});
    child.stdin.end(script);
  });
}

/** nft's version line, or undefined when nft is missing or cannot talk to the kernel. */
export function nftVersion(nftBin = "nft"): Promise<string | undefined> {
  return new Promise((resolve) =>
    execFile(nftBin, ["--version"], (e, out) => resolve(e ? undefined : String(out).trim())),
  );
}

/** Deletes a table if it exists (one transaction: add then delete). */
export async function deleteTable(family: string, table: string, nftBin = "nft"): Promise<NftResult> {
  return runNft(`add table ${family} ${table}\ndelete table ${family} ${table}\n`, ["-f", "-"], nftBin);
}
