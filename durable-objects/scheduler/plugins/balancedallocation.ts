import { MAX_NODE_SCORE, type Plugin, SKIP } from "../framework";

export const NAME = "NodeResourcesBalancedAllocation";

/** (1 - spread of the cpu and memory utilisation fractions) * 100. */
export function balancedScore(fractions: number[]): number {
  let std = 0;
  if (fractions.length === 2) {
    std = Math.abs((fractions[0] - fractions[1]) / 2);
  } else if (fractions.length > 2) {
    const mean = fractions.reduce((a, b) => a + b, 0) / fractions.length;
    let sum = 0;
    for (const f of fractions) sum += (f - mean) * (f - mean);
    std = Math.sqrt(sum / fractions.length);
  }
  return Math.trunc((1 - std) * MAX_NODE_SCORE);
}

/** Favours nodes whose cpu and memory would be used in equal proportion after placing the pod. */
export function nodeResourcesBalancedAllocation(): Plugin {
  return {
    name: NAME,
    preScore(_state, pod) {
      // Best-effort pods request nothing: balance cannot differ between nodes.
      if (pod.requests.milliCPU === 0 && pod.requests.memory === 0) return SKIP;
      return undefined;
    },
    score(_state, pod, node) {
      const alloc = node.allocatable;
      let cpu = -1;
      let mem = -1;
      if (alloc.milliCPU > 0)
        cpu = Math.min(1, (node.requested.milliCPU + pod.requests.milliCPU) / alloc.milliCPU);
      if (alloc.memory > 0) mem = Math.min(1, (node.requested.memory + pod.requests.memory) / alloc.memory);
      if (cpu >= 0 && mem >= 0) return Math.trunc((1 - Math.abs((cpu - mem) / 2)) * MAX_NODE_SCORE);
      return MAX_NODE_SCORE;
    },
  };
}
