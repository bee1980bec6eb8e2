// cgroupfs parents per QoS class, as the kubelet's cgroups-per-QoS lays them
// out: <root>/pod<uid> for Guaranteed, <root>/burstable/pod<uid>,
// <root>/besteffort/pod<uid>. runc creates the leaves; edgelet creates the
// QoS parents, sets BestEffort's cpu.shares to 2, and removes pod cgroups.
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { milliCPU, units } from "../../api/quantity";
import type { Pod, ResourceList } from "../lib/kube-types";
import type { QOSClass } from "./qos";

const CGROUP_FS = "/sys/fs/cgroup";

export function podCgroupParent(root: string, qos: QOSClass, uid: string): string {
  const base = root.replace(/\/+$/, "");
  if (qos === "Guaranteed") return `${base}/pod${uid}`;
  return `${base}/${qos === "Burstable" ? "burstable" : "besteffort"}/pod${uid}`;
}

/** The hierarchy roots: each v1 controller mount, or the single v2 root. */
export function hierarchies(): string[] {
  try {
    const mounts = readFileSync("/proc/self/mountinfo", "utf8").split("\n");
    const out: string[] = [];
    for (const line of mounts) {
      const parts = line.split(" ");
      const dash = parts.indexOf("-");
      const fstype = parts[dash + 1];
      const mp = parts[4] ?? "";
      if ((fstype === "cgroup" || fstype === "cgroup2") && mp.startsWith(CGROUP_FS)) {
        out.push(mp); // incl. hybrid's unified mount, where runc makes directories too
      }
    }
    return out;
  } catch {
    return [];
  }
}

/** Creates the QoS parent cgroups in every hierarchy; failures are reported, not fatal. */
export function ensureQosCgroups(root: string, log: (m: string) => void = () => {}): void {
  for (const h of hierarchies()) {
    for (const sub of ["", "burstable", "besteffort"]) {
      const dir = join(h, root, sub);
      try {
        if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
      } catch (e) {
        log(`cgroup ${dir}: ${(e as Error).message}`);
      }
    }
    const shares = join(h, root, "besteffort", "cpu.shares");
    if (existsSync(shares)) {
      try {
        writeFileSync(shares, "2");
      } catch {}
    }
  }
}

function rmTree(dir: string): void {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) rmTree(join(dir, e.name));
  try {
    rmdirSync(dir);
  } catch {}
}

/** Removes a pod's cgroup directories (empty ones only: the kernel refuses others); true when none is left. */
export function removePodCgroup(parent: string): boolean {
  let gone = true;
  for (const h of hierarchies()) {
    rmTree(join(h, parent));
    if (existsSync(join(h, parent))) gone = false;
  }
  return gone;
}

/**
 * Removes a pod's cgroup now or, since the runtime may release its
 * container cgroups a moment after RemovePodSandbox returns, a little later.
 */
export function removePodCgroupEventually(parent: string, attempts = 10, delayMs = 1000): void {
  if (removePodCgroup(parent) || attempts <= 1) {
    pending.delete(parent);
    return;
  }
  pending.add(parent);
  setTimeout(() => removePodCgroupEventually(parent, attempts - 1, delayMs), delayMs).unref();
}

const pending = new Set<string>();

/** At shutdown: gives pending removals up to `ms` to finish. */
export async function flushCgroupRemovals(ms = 3000): Promise<void> {
  const until = Date.now() + ms;
  while (pending.size && Date.now() < until) {
    for (const p of [...pending]) if (removePodCgroup(p)) pending.delete(p);
    if (pending.size) await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Housekeeping: removes empty pod cgroups under the QoS parents that belong
 * to no pod of `known` and have been left alone for a minute (another
 * edgelet on the same machine may be about to use a fresh one).
 */
export function sweepPodCgroups(root: string, known: Set<string>, minAgeMs = 60_000): void {
  const now = Date.now();
  for (const h of hierarchies()) {
    for (const sub of ["", "burstable", "besteffort"]) {
      const dir = join(h, root, sub);
      let names: string[] = [];
      try {
        names = readdirSync(dir).filter((n) => n.startsWith("pod"));
      } catch {
        continue;
      }
      for (const n of names) {
        if (known.has(n.slice(3))) continue;
        try {
          if (now - statSync(join(dir, n)).mtimeMs < minAgeMs) continue;
        } catch {
          continue;
        }
        rmTree(join(dir, n));
      }
    }
  }
}

export interface PodLimits {
  cpuShares: number;
  cpuQuota?: number;
  cpuPeriod?: number;
  memoryLimit?: number;
}

/**
 * Pod-level limits, as the kubelet sets them on the pod cgroup: cpu shares
 * from the summed requests; a CPU quota and a memory limit only when every
 * container declares that limit.
 */
export function podLimits(pod: Pod): PodLimits {
  const containers = pod.spec?.containers ?? [];
  const inits = pod.spec?.initContainers ?? [];
  let reqMilli = 0;
  let cpuLimit = 0;
  let memLimit = 0;
  let allCpu = containers.length > 0;
  let allMem = containers.length > 0;
  for (const c of containers) {
    const lim: ResourceList = c.resources?.limits ?? {};
    const req: ResourceList = { ...lim, ...(c.resources?.requests ?? {}) };
    reqMilli += milliCPU(req.cpu);
    if (lim.cpu === undefined) allCpu = false;
    else cpuLimit += milliCPU(lim.cpu);
    if (lim.memory === undefined) allMem = false;
    else memLimit += units(lim.memory);
  }
  for (const c of inits) {
    const lim: ResourceList = c.resources?.limits ?? {};
    if (lim.cpu !== undefined) cpuLimit = Math.max(cpuLimit, milliCPU(lim.cpu));
    if (lim.memory !== undefined) memLimit = Math.max(memLimit, units(lim.memory));
  }
  const out: PodLimits = { cpuShares: Math.max(2, Math.floor((reqMilli * 1024) / 1000)) };
  if (allCpu) {
    out.cpuPeriod = 100_000;
    out.cpuQuota = Math.max(1000, Math.floor((cpuLimit * 100_000) / 1000));
  }
  if (allMem) out.memoryLimit = memLimit;
  return out;
}

/** Writes pod limits into the pod cgroup (cgroup v1 hierarchies); best effort. */
export function applyPodLimits(parent: string, limits: PodLimits, log: (m: string) => void = () => {}): void {
  const write = (controller: string, file: string, value: number | undefined) => {
    if (value === undefined) return;
    const dir = join(CGROUP_FS, controller, parent);
    try {
      if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, file), String(value));
    } catch (e) {
      log(`cgroup ${dir}/${file}: ${(e as Error).message}`);
    }
  };
  if (!existsSync(join(CGROUP_FS, "cpu"))) return; // cgroup v2: limits left to the containers
  write("cpu", "cpu.shares", limits.cpuShares);
  write("cpu", "cpu.cfs_period_us", limits.cpuPeriod);
  write("cpu", "cpu.cfs_quota_us", limits.cpuQuota);
  write("memory", "memory.limit_in_bytes", limits.memoryLimit);
}
