import { MAX_NODE_SCORE, type Plugin, Status } from "../framework";
import type { NodeInfo } from "../nodeinfo";
import type { PodInfo } from "../podinfo";

export const NAME = "NodeResourcesFit";
export const ERR_REASON_TOO_MANY_PODS = "Too many pods";

export interface InsufficientResource {
  resourceName: string;
  reason: string;
  requested: number;
  used: number;
  capacity: number;
  /** The pod asks for more than the node has at all (informational: v1.32 still reports Unschedulable). */
  exceedsAllocatable: boolean;
}

/** Every resource the node lacks for the pod (empty: it fits). */
const NONE: InsufficientResource[] = [];

export function fitsRequest(pod: PodInfo, node: NodeInfo): InsufficientResource[] {
  if (quickFits(pod, node)) return NONE;
  const out: InsufficientResource[] = [];
  const alloc = node.allocatable;
  const used = node.requested;
  const allowedPods = alloc.allowedPodNumber;
  if (node.pods.length + 1 > allowedPods) {
    out.push({
      resourceName: "pods",
      reason: ERR_REASON_TOO_MANY_PODS,
      requested: 1,
      used: node.pods.length,
      capacity: allowedPods,
      exceedsAllocatable: false,
    });
  }
  const req = pod.requests;
  if (
    req.milliCPU === 0 &&
    req.memory === 0 &&
    req.ephemeralStorage === 0 &&
    (!req.scalar || req.scalar.size === 0)
  ) {
    return out;
  }
  checkResource(out, "cpu", req.milliCPU, alloc.milliCPU, used.milliCPU);
  checkResource(out, "memory", req.memory, alloc.memory, used.memory);
  checkResource(
    out,
    "ephemeral-storage",
    req.ephemeralStorage,
    alloc.ephemeralStorage,
    used.ephemeralStorage,
  );
  if (req.scalar) {
    for (const [name, want] of req.scalar) {
      checkResource(out, name, want, alloc.scalar?.get(name) ?? 0, used.scalar?.get(name) ?? 0);
    }
  }
  return out;
}

function checkResource(
  out: InsufficientResource[],
  name: string,
  want: number,
  have: number,
  inUse: number,
): void {
  if (want > 0 && want > have - inUse) {
    out.push({
      resourceName: name,
      reason: `Insufficient ${name}`,
      requested: want,
      used: inUse,
      capacity: have,
      exceedsAllocatable: want > have,
    });
  }
}

/** Allocation-free check for the common case where everything fits. */
function quickFits(pod: PodInfo, node: NodeInfo): boolean {
  const req = pod.requests;
  const alloc = node.allocatable;
  const used = node.requested;
  if (node.pods.length + 1 > alloc.allowedPodNumber) return false;
  if (req.milliCPU > 0 && req.milliCPU > alloc.milliCPU - used.milliCPU) return false;
  if (req.memory > 0 && req.memory > alloc.memory - used.memory) return false;
  if (req.ephemeralStorage > 0 && req.ephemeralStorage > alloc.ephemeralStorage - used.ephemeralStorage)
    return false;
  return !req.scalar || req.scalar.size === 0;
}

/** ((capacity - requested) * 100) / capacity, 0 when over capacity. */
export function leastRequestedScore(requested: number, capacity: number): number {
  if (capacity === 0 || requested > capacity) return 0;
  return Math.trunc(((capacity - requested) * MAX_NODE_SCORE) / capacity);
}

/**
 * Filter: requests (app containers, the largest init step, sidecars, overhead)
 * against allocatable minus what is already requested, and the pod count.
 * Score: LeastAllocated over cpu and memory (weight 1 each), counting the
 * scheduler's default requests for containers that set none.
 */
export function nodeResourcesFit(): Plugin {
  return {
    name: NAME,
    filter(_state, pod, node) {
      const insufficient = fitsRequest(pod, node);
      if (insufficient.length === 0) return undefined;
      // v1.32 reports Unschedulable even when the node could never fit the pod
      // (UnschedulableAndUnresolvable for that case arrived in v1.34).
      return new Status(
        "Unschedulable",
        insufficient.map((r) => r.reason),
      );
    },
    score(_state, pod, node) {
      const alloc = node.allocatable;
      let sum = 0;
      let weights = 0;
      if (alloc.milliCPU > 0) {
        sum += leastRequestedScore(node.nonZeroMilliCPU + pod.nonZeroMilliCPU, alloc.milliCPU);
        weights++;
      }
      if (alloc.memory > 0) {
        sum += leastRequestedScore(node.nonZeroMemory + pod.nonZeroMemory, alloc.memory);
        weights++;
      }
      return weights === 0 ? 0 : Math.trunc(sum / weights);
    },
  };
}
