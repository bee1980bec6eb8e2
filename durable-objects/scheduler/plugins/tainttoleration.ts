import { defaultNormalizeScore, MAX_NODE_SCORE, type Plugin, unresolvable } from "../framework";
import { findUntoleratedTaint, type Toleration, toleratesTaint } from "../labels";

export const NAME = "TaintToleration";

export function untoleratedTaintReason(key: string, value: string | undefined): string {
  return `node(s) had untolerated taint {${key}: ${value ?? ""}}`;
}

const KEY = `PreScore${NAME}`;

/**
 * Filter: NoSchedule and NoExecute taints must be tolerated.
 * Score: fewer untolerated PreferNoSchedule taints is better.
 */
export function taintToleration(): Plugin {
  return {
    name: NAME,
    filter(_state, pod, node) {
      if (node.taints.length === 0) return undefined;
      const t = findUntoleratedTaint(node.taints, pod.pod.spec?.tolerations, true);
      if (!t) return undefined;
      return unresolvable(untoleratedTaintReason(t.key, t.value));
    },
    preScore(state, pod) {
      const tols: Toleration[] = (pod.pod.spec?.tolerations ?? []).filter(
        (t: Toleration) => !t.effect || t.effect === "PreferNoSchedule",
      );
      state.write(KEY, tols);
      return undefined;
    },
    score(state, _pod, node) {
      if (node.taints.length === 0) return 0;
      const tols = state.read<Toleration[]>(KEY) ?? [];
      let n = 0;
      for (const taint of node.taints) {
        if (taint.effect === "PreferNoSchedule" && !toleratesTaint(tols, taint)) n++;
      }
      return n;
    },
    normalizeScore(_state, _pod, scores) {
      defaultNormalizeScore(MAX_NODE_SCORE, true, scores);
    },
  };
}
