// What a run of hosts made, written down before it is made: one JSON line per thing in a file
// of the run, so whoever cleans up (the launcher's stop, or the guard process when the launcher
// died) knows every namespace, link, process, mount root, cgroup and directory to remove, even
// of a run that crashed half way through starting.
import { appendFileSync, existsSync, readFileSync } from "node:fs";

export type Made =
  /** a directory tree (removed last, after what is mounted under it) */
  | { kind: "dir"; path: string }
  /** a named network namespace (/run/netns/<name>); what is inside goes with it */
  | { kind: "netns"; name: string }
  /** a link of the machine's own namespace */
  | { kind: "link"; name: string }
  /** a process we started: killed by pid, checked against its start time (no reused pid is hit) */
  | { kind: "process"; pid: number; start: string; role: "edgelet" | "relay" | "containerd"; host: string }
  /** a containerd's CRI socket and state dir: its pods are removed before it stops */
  | { kind: "runtime"; host: string; socket: string; state: string }
  /** a cgroupfs path (relative to each hierarchy) under which that host's pods lived */
  | { kind: "cgroup"; path: string }
  /** the LAN subnet's reservation marker */
  | { kind: "reservation"; path: string };

export class Ledger {
  constructor(readonly file: string) {}

  add(m: Made): void {
    appendFileSync(this.file, `${JSON.stringify(m)}\n`, { mode: 0o600 });
  }
}

export function readLedger(file: string): Made[] {
  if (!existsSync(file)) return [];
  const out: Made[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line) as Made);
    } catch {
      // a line cut by a crash: the rest still counts
    }
  }
  return out;
}

/** A process's start time (field 22 of /proc/<pid>/stat), to tell it from a later one with its pid. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // the command name may hold spaces and parentheses: fields count from the last ")"
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}
