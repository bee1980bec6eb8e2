// Running the kernel's network tools (ip, bridge, nft) from the agent, in the agent's own
// network namespace: stdin for batches, stdout back, stderr in the error.
import { spawn } from "node:child_process";

export function run(cmd: string, args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout?.on("data", (d) => (out += d));
    p.stderr?.on("data", (d) => (err += d));
    p.on("error", reject);
    p.on("close", (code) =>
      code === 0
        ? resolve(out)
        : reject(new Error(`${cmd} ${args.join(" ")}: ${err.trim() || `exit ${code}`}`)),
    );
    if (p.stdin) {
      // a tool that exits before reading all of it must not take the agent down (EPIPE)
      p.stdin.on("error", () => {});
      p.stdin.end(input);
    }
  });
}

// What `ip -j` and `bridge -j` print, as far as the agent reads it (iproute2's JSON names).

export interface IpAddrInfo {
  family?: string;
  local?: string;
  prefixlen?: number;
}

export interface IpLink {
  ifname: string;
  mtu?: number;
  addr_info?: IpAddrInfo[];
  linkinfo?: {
    info_kind?: string;
    info_data?: { id?: number; port?: number; local?: string; link?: string; learning?: boolean };
  };
}

export interface IpRoute {
  /** "default" for the default route */
  dst: string;
  gateway?: string;
  dev?: string;
  flags?: string[];
}

export interface IpNeighbour {
  dst: string;
  lladdr?: string;
  state?: string[];
}

export interface FdbEntry {
  mac: string;
  dst?: string;
}

/** `ip -j ...` parsed ([] for no output), as the objects that command prints. */
export async function ipJson<T extends IpLink | IpRoute | IpNeighbour>(args: string[]): Promise<T[]> {
  const out = await run("ip", ["-j", ...args]);
  return out.trim() ? (JSON.parse(out) as T[]) : [];
}

/** Runs `ip -batch -` (or `bridge -batch -`) over the lines; every line is tried (-force). */
export async function batch(cmd: "ip" | "bridge", lines: string[]): Promise<void> {
  if (!lines.length) return;
  await run(cmd, ["-force", "-batch", "-"], `${lines.join("\n")}\n`);
}
