// CPU time used by a process group (the engine and its workerd), read from /proc: on a
// shared machine wall-clock figures move with everyone else's load, CPU per request does not.
import { readdirSync, readFileSync } from "node:fs";

const TICK_MS = 10; // USER_HZ is 100 on Linux

export interface GroupCpu {
  /** the workerd that runs the Worker and its Durable Objects, ms */
  workerd: number;
  /** under EDGEPLANE_DEV_ENGINE=wrangler: wrangler's own proxy workerd in front of it, ms */
  proxy: number;
  /** everything else in the group (the engine's Node process), ms */
  other: number;
}

/** wrangler dev runs two workerds: the user's (started with an inspector) and its proxy. */
function isUserWorkerd(pid: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("--inspector-addr");
  } catch {
    return false;
  }
}

/** CPU ms used so far by each live process whose process group is `pgid`. */
export function groupCpu(pgid: number): GroupCpu {
  const out: GroupCpu = { workerd: 0, proxy: 0, other: 0 };
  const workerds: { pid: string; ms: number }[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue;
    }
    const close = stat.lastIndexOf(")");
    const comm = stat.slice(stat.indexOf("(") + 1, close);
    const f = stat.slice(close + 2).split(" ");
    // f[0] is field 3 (state): pgrp is field 5, utime 14, stime 15
    if (Number(f[2]) !== pgid) continue;
    const ms = (Number(f[11]) + Number(f[12])) * TICK_MS;
    if (comm.startsWith("workerd")) workerds.push({ pid: entry, ms });
    else out.other += ms;
  }
  // the default engine runs one workerd; wrangler dev runs the user's (with an inspector) and a proxy
  const wrangler = workerds.length > 1 && workerds.some((w) => isUserWorkerd(w.pid));
  for (const w of workerds) {
    if (!wrangler || isUserWorkerd(w.pid)) out.workerd += w.ms;
    else out.proxy += w.ms;
  }
  return out;
}

/** Runs fn and returns its result with the group's CPU ms spent meanwhile. */
export async function withGroupCpu<T>(
  pgid: number,
  fn: () => Promise<T>,
): Promise<{ result: T; cpu: GroupCpu; clientMs: number }> {
  const before = groupCpu(pgid);
  const client = process.cpuUsage();
  const result = await fn();
  const after = groupCpu(pgid);
  const used = process.cpuUsage(client);
  return {
    result,
    cpu: {
      workerd: after.workerd - before.workerd,
      proxy: after.proxy - before.proxy,
      other: after.other - before.other,
    },
    clientMs: (used.user + used.system) / 1000,
  };
}
