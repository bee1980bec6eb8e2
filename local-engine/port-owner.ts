// Who holds a TCP port, for a start that finds its port taken: one clear line naming the
// process (and whether it is an edgeplane of ours), instead of a stack trace.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** The inodes of sockets listening on `port` (IPv4 and IPv6), from /proc/net. */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let table: string;
    try {
      table = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of table.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      // local_address is ADDR:PORT in hex; st 0A is LISTEN; inode is the 10th field
      if (f.length > 9 && f[1].endsWith(`:${hexPort}`) && f[3] === "0A") inodes.add(f[9]);
    }
  }
  return inodes;
}

/** The process holding a socket listening on `port`, if this user can see it. */
export function portOwner(port: number): { pid: number; command: string } | undefined {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return undefined;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = readlinkSync(`/proc/${entry}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(target);
      if (m && inodes.has(m[1])) {
        let command = "";
        try {
          command = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
        } catch {}
        return { pid: Number(entry), command };
      }
    }
  }
  return undefined;
}

/** What a command line says it is: an edgeplane of ours (and its state), or something else. */
function whatItIs(command: string): string {
  const host = /local-engine\/engine-host\.ts (\S+)\/engine\.json/.exec(command);
  if (host) return `edgeplane? yes: an engine host, state in ${host[1]}`;
  if (/local-engine\/start\.ts/.test(command)) return "edgeplane? yes: npm start";
  if (/\bworkerd\b/.test(command)) return "edgeplane? maybe: a workerd";
  const short = command.length > 80 ? `${command.slice(0, 77)}...` : command;
  return `edgeplane? no: ${short || "unknown command"}`;
}

/** The one line a start prints when `port` is taken. */
export function portInUse(port: number): string {
  const owner = portOwner(port);
  const hint = "stop it, or choose another port with EDGEPLANE_PORT";
  if (!owner) return `port ${port} is in use (by a process not visible here); ${hint}`;
  return `port ${port} is in use by pid ${owner.pid} (${whatItIs(owner.command)}); ${hint}`;
}
