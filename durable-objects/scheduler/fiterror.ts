// FitError: why a pod fits no node, rendered exactly as kube-scheduler does.
import { NodeToStatus } from "./framework";
import type { PodInfo } from "./podinfo";

export const NO_NODE_AVAILABLE_MSG = (n: number) => `0/${n} nodes are available`;
export const ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods";

export interface Diagnosis {
  nodeToStatus: NodeToStatus;
  unschedulablePlugins: Set<string>;
  preFilterMsg: string;
  postFilterMsg: string;
}

export function newDiagnosis(): Diagnosis {
  return {
    nodeToStatus: new NodeToStatus(),
    unschedulablePlugins: new Set(),
    preFilterMsg: "",
    postFilterMsg: "",
  };
}

export class FitError {
  constructor(
    public pod: PodInfo | null,
    public numAllNodes: number,
    public diagnosis: Diagnosis,
  ) {}

  /**
   * "0/N nodes are available: <prefilter msg>." or a sorted histogram
   * "<count> <reason>, ..." followed by the PostFilter (preemption) message.
   */
  message(): string {
    const d = this.diagnosis;
    let msg = `${NO_NODE_AVAILABLE_MSG(this.numAllNodes)}:`;
    if (d.preFilterMsg) {
      msg += ` ${d.preFilterMsg}.`;
    } else {
      const counts = new Map<string, number>();
      for (const s of d.nodeToStatus.map.values()) {
        for (const r of s.reasons) counts.set(r, (counts.get(r) ?? 0) + 1);
      }
      const absent = this.numAllNodes - d.nodeToStatus.map.size;
      if (absent > 0) {
        for (const r of d.nodeToStatus.absent.reasons) counts.set(r, (counts.get(r) ?? 0) + absent);
      }
      const parts = [...counts].map(([r, n]) => `${n} ${r}`);
      // Go's sort.Strings: byte-wise order.
      parts.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      if (parts.length > 0) msg += ` ${parts.join(", ")}.`;
    }
    if (d.postFilterMsg) msg += ` ${d.postFilterMsg}`;
    return msg;
  }

  toString(): string {
    return this.message();
  }
}
