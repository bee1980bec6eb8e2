import { type Plugin, unresolvable } from "../framework";
import { toleratesTaint } from "../labels";

export const NAME = "NodeUnschedulable";
export const ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable";
export const ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions";

const UNSCHEDULABLE_TAINT = { key: "node.kubernetes.io/unschedulable", effect: "NoSchedule" };

/** Rejects cordoned nodes (spec.unschedulable) unless the pod tolerates the unschedulable taint. */
export function nodeUnschedulable(): Plugin {
  return {
    name: NAME,
    filter(_state, pod, node) {
      if (!node.node) return unresolvable(ERR_REASON_UNKNOWN_CONDITION);
      if (!node.unschedulable) return undefined;
      if (toleratesTaint(pod.pod.spec?.tolerations, UNSCHEDULABLE_TAINT)) return undefined;
      return unresolvable(ERR_REASON_UNSCHEDULABLE);
    },
  };
}
