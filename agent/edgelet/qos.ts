// QoS class of a pod and the Linux resources of its containers, after the
// kubelet's rules (requests default to limits when only limits are set).

import { milliCPU, units } from "../../api/quantity";
import type { LinuxContainerResources } from "../cri/types";
import type { Pod, PodContainer, ResourceList } from "../lib/kube-types";

export type QOSClass = "Guaranteed" | "Burstable" | "BestEffort";

const CPU_PERIOD = 100_000;
const MIN_SHARES = 2;

function containersOf(pod: Pod): PodContainer[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
}

/** Requests of a container with limits filling in missing requests. */
export function effectiveRequests(c: PodContainer): ResourceList {
  return { ...(c.resources?.limits ?? {}), ...(c.resources?.requests ?? {}) };
}

export function qosClass(pod: Pod): QOSClass {
  if (pod.status?.qosClass) return pod.status.qosClass;
  return computeQOSClass(pod);
}

export function computeQOSClass(pod: Pod): QOSClass {
  let any = false;
  let guaranteed = true;
  for (const c of containersOf(pod)) {
    const req = effectiveRequests(c);
    const lim: ResourceList = c.resources?.limits ?? {};
    for (const r of ["cpu", "memory"]) {
      if (req[r] !== undefined || lim[r] !== undefined) any = true;
      const same =
        lim[r] !== undefined && req[r] !== undefined && equalQuantity(r, String(req[r]), String(lim[r]));
      if (!same) guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

function equalQuantity(r: string, a: string, b: string): boolean {
  return r === "cpu" ? milliCPU(a) === milliCPU(b) : units(a) === units(b);
}

/** The pod's requests as the scheduler and node admission count them: max(init), sum(app), plus overhead. */
export function podRequests(pod: Pod): { cpuMilli: number; memory: number } {
  let cpu = 0;
  let mem = 0;
  for (const c of pod.spec?.containers ?? []) {
    const req = effectiveRequests(c);
    cpu += milliCPU(req.cpu);
    mem += units(req.memory);
  }
  for (const c of pod.spec?.initContainers ?? []) {
    const req = effectiveRequests(c);
    cpu = Math.max(cpu, milliCPU(req.cpu));
    mem = Math.max(mem, units(req.memory));
  }
  const over: ResourceList = pod.spec?.overhead ?? {};
  return { cpuMilli: cpu + milliCPU(over.cpu), memory: mem + units(over.memory) };
}

/** CRI Linux resources of one container: cpu shares from the request, quota from the limit, memory limit. */
export function linuxResources(
  c: PodContainer,
  qos: QOSClass,
  memoryCapacity: number,
): LinuxContainerResources {
  const req = effectiveRequests(c);
  const lim: ResourceList = c.resources?.limits ?? {};
  const out: LinuxContainerResources = {};
  const reqCPU = req.cpu !== undefined ? milliCPU(req.cpu) : 0;
  out.cpu_shares = Math.max(MIN_SHARES, Math.floor((reqCPU * 1024) / 1000));
  if (lim.cpu !== undefined) {
    out.cpu_period = CPU_PERIOD;
    out.cpu_quota = Math.max(1000, Math.floor((milliCPU(lim.cpu) * CPU_PERIOD) / 1000));
  }
  if (lim.memory !== undefined) out.memory_limit_in_bytes = units(lim.memory);
  out.oom_score_adj = oomScoreAdj(qos, units(req.memory), memoryCapacity);
  return out;
}

/** The kubelet's OOM score policy: Guaranteed -997, BestEffort 1000, Burstable scaled by request. */
export function oomScoreAdj(qos: QOSClass, memoryRequest: number, memoryCapacity: number): number {
  if (qos === "Guaranteed") return -997;
  if (qos === "BestEffort") return 1000;
  const adj = 1000 - Math.floor((1000 * memoryRequest) / Math.max(1, memoryCapacity));
  return Math.min(999, Math.max(2, adj));
}
