// Running nft: a script on stdin is one transaction (all of it or nothing), so a failed apply
// leaves the kernel's table as it was.
import { type ChildProcess, execFile, spawn } from "node:child_process";

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

const MARKER = "describe meta mark";
const MARKER_OUT = "meta expression, datatype mark";

/**
 * One nft process kept open (`nft -i`), for the small transactions of partial syncs: a line of
 * commands joined by ';' is one transaction there, as a file is for `nft -f`, and no process
 * starts per sync (that start was most of a partial sync's time on a busy machine). Each
 * transaction is followed by a command that only prints (`describe`), whose output marks its
 * end; what nft wrote to stderr before it is the transaction's error.
 */
export class NftSession {
  private child: ChildProcess | undefined;
  private out = "";
  private err = "";
  private wake: (() => void) | undefined;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly argv: string[] = ["nft"]) {}

  private start(): ChildProcess {
    if (this.child && this.child.exitCode === null && !this.child.killed) return this.child;
    const child = spawn(this.argv[0]!, [...this.argv.slice(1), "-i"], { stdio: ["pipe", "pipe", "pipe"] });
    child.stdout!.setEncoding("utf8");
    child.stderr!.setEncoding("utf8");
    child.stdout!.on("data", (d: string) => {
      this.out += d;
      if (this.out.includes(MARKER_OUT)) this.wake?.();
    });
    child.stderr!.on("data", (d: string) => {
      if (this.err.length < 8192) this.err += d;
    });
    child.stdin!.on("error", () => {});
    child.on("exit", () => this.wake?.());
    this.child = child;
    return child;
  }

  /** Applies a script (one command per line) as one transaction. */
  apply(script: string, timeoutMs = 30_000): Promise<NftResult> {
    const run = async (): Promise<NftResult> => {
      const t0 = performance.now();
      const line = script
        .split("\n")
        .map((l) => l.trim())
        .filter(Boolean)
        .join("; ");
      if (!line) return { ok: true, ms: 0 };
      const child = this.start();
      this.out = "";
      this.err = "";
      const done = new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), timeoutMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve(child.exitCode === null && this.out.includes(MARKER_OUT));
        };
      });
      child.stdin!.write(`${line}\n${MARKER}\n`);
      const finished = await done;
      this.wake = undefined;
      // stderr and stdout are two pipes: give an error written just before the marker time to land
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setTimeout(r, 1));
      const ms = performance.now() - t0;
      if (!finished) {
        this.close();
        return { ok: false, error: this.err.trim() || "nft -i did not answer", ms };
      }
      const error = this.err.trim();
      return error ? { ok: false, error: error.split("\n").slice(0, 6).join("\n"), ms } : { ok: true, ms };
    };
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => {});
    return p;
  }

  close(): void {
    this.child?.stdin?.end();
    this.child?.kill();
    this.child = undefined;
  }
}
