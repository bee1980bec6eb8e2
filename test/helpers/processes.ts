// The processes a test started, read from /proc: a process's children, and whether one is
// still alive (a zombie is not).
import { readdirSync, readFileSync } from "node:fs";

/** The children of `pid`, with their command names (none when it is gone). */
export function childrenOf(pid: number): { pid: number; comm: string }[] {
  const out: { pid: number; comm: string }[] = [];
  try {
    for (const task of readdirSync(`/proc/${pid}/task`))
      for (const c of readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").split(" ").filter(Boolean))
        try {
          out.push({ pid: Number(c), comm: readFileSync(`/proc/${c}/comm`, "utf8").trim() });
        } catch {
          // gone meanwhile
        }
  } catch {
    // gone
  }
  return out;
}

/** Whether `pid` runs (exists and is not a zombie). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}
