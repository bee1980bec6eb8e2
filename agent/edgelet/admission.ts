// Node-level admission, the kubelet's last check before running a pod: the
// pod must fit the node's allocatable resources beside the pods already
// admitted, its host ports must be free, and it must tolerate the node.
import type { Pod } from "../lib/kube-types";
import { podRequests } from "./qos";

export interface AdmitResult {
  admit: boolean;
  reason?: string;
  message?: string;
}

export interface NodeAllocatable {
  cpuMilli: number;
  memory: number;
  pods: number;
}

function hostPorts(pod: Pod): string[] {
  const out: string[] = [];
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    for (const p of c.ports ?? []) {
      if (p.hostPort) out.push(`${p.protocol ?? "TCP"}/${p.hostIP || "0.0.0.0"}/${p.hostPort}`);
    }
  }
  return out;
}

function portsConflict(a: string, b: string): boolean {
  const [pa, ia, na] = a.split("/");
  const [pb, ib, nb] = b.split("/");
  if (pa !== pb || na !== nb) return false;
  return ia === ib || ia === "0.0.0.0" || ib === "0.0.0.0";
}

/** Admits `pod` on a node with `alloc` already running `admitted` (active pods, not including `pod`). */
export function admitPod(pod: Pod, admitted: Pod[], alloc: NodeAllocatable, nodeName?: string): AdmitResult {
  if (nodeName && pod.spec?.nodeName && pod.spec.nodeName !== nodeName) {
    return { admit: false, reason: "NodeName", message: "Pod not assigned to this node" };
  }
  if (admitted.length + 1 > alloc.pods) {
    return {
      admit: false,
      reason: "OutOfpods",
      message: `Node didn't have enough resource: pods, requested: 1, used: ${admitted.length}, capacity: ${alloc.pods}`,
    };
  }
  const want = podRequests(pod);
  let cpu = 0;
  let mem = 0;
  for (const p of admitted) {
    const r = podRequests(p);
    cpu += r.cpuMilli;
    mem += r.memory;
  }
  if (want.cpuMilli > 0 && cpu + want.cpuMilli > alloc.cpuMilli) {
    return {
      admit: false,
      reason: "OutOfcpu",
      message: `Node didn't have enough resource: cpu, requested: ${want.cpuMilli}, used: ${cpu}, capacity: ${alloc.cpuMilli}`,
    };
  }
  if (want.memory > 0 && mem + want.memory > alloc.memory) {
    return {
      admit: false,
      reason: "OutOfmemory",
      message: `Node didn't have enough resource: memory, requested: ${want.memory}, used: ${mem}, capacity: ${alloc.memory}`,
    };
  }
  const used = admitted.flatMap(hostPorts);
  for (const p of hostPorts(pod)) {
    if (used.some((u) => portsConflict(u, p))) {
      return {
        admit: false,
        reason: "NodePorts",
        message: "Node didn't have free ports for the requested pod ports",
      };
    }
  }
  if ((pod.spec?.os?.name ?? "linux") !== "linux") {
    return {
      admit: false,
      reason: "PodOSNotSupported",
      message: `Failed to admit pod as the OS field doesn't match node OS`,
    };
  }
  return { admit: true };
}
