import { defaultNormalizeScore, MAX_NODE_SCORE, type Plugin, SKIP, unresolvable } from "../framework";
import { compileNodeSelectorTerm, termMatches } from "../labels";
import { type PodInfo, podMatchesNodeSelectorAndAffinity } from "../podinfo";

export const NAME = "NodeAffinity";
export const ERR_REASON_POD = "node(s) didn't match Node's node affinity/selector";
export const ERR_REASON_CONFLICT = "pod affinity terms conflict";

/**
 * Node names the required terms pin the pod to through matchFields
 * metadata.name In (DaemonSet pods); null when some term allows any node.
 */
export function preFilterNodeNames(pod: PodInfo): Set<string> | null {
  const terms =
    pod.pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!Array.isArray(terms) || terms.length === 0) return null;
  const names = new Set<string>();
  for (const t of terms) {
    let termNames: Set<string> | null = null;
    for (const r of t?.matchFields ?? []) {
      if (r?.key !== "metadata.name" || r?.operator !== "In") continue;
      const vals = new Set<string>(r.values ?? []);
      termNames = termNames ? new Set<string>([...termNames].filter((n: string) => vals.has(n))) : vals;
    }
    if (!termNames) return null; // terms are ORed: this one allows every node
    for (const n of termNames) names.add(n);
  }
  return names;
}

type Preferred = { weight: number; term: ReturnType<typeof compileNodeSelectorTerm> }[];
const KEY = `PreScore${NAME}`;

/**
 * Filter: spec.nodeSelector and requiredDuringSchedulingIgnoredDuringExecution.
 * Score: the summed weights of matching preferred terms, scaled to 0..100.
 */
export function nodeAffinity(): Plugin {
  return {
    name: NAME,
    preFilter(_state, pod: PodInfo) {
      if (!pod.nodeSelector && !pod.requiredNodeAffinity) return SKIP;
      const names = preFilterNodeNames(pod);
      if (!names) return undefined;
      if (names.size === 0) return unresolvable(ERR_REASON_CONFLICT);
      return { nodeNames: names };
    },
    filter(_state, pod, node) {
      if (podMatchesNodeSelectorAndAffinity(pod, node.labels, node.name)) return undefined;
      return unresolvable(ERR_REASON_POD);
    },
    preScore(state, pod) {
      if (pod.preferredNodeAffinity.length === 0) return SKIP;
      const pref: Preferred = pod.preferredNodeAffinity
        .filter((p) => p.weight !== 0)
        .map((p) => ({ weight: p.weight, term: compileNodeSelectorTerm(p.term) }));
      state.write(KEY, pref);
      return undefined;
    },
    score(state, _pod, node) {
      const pref = state.read<Preferred>(KEY);
      if (!pref) return 0;
      let sum = 0;
      for (const p of pref) if (termMatches(p.term, node.labels, node.name)) sum += p.weight;
      return sum;
    },
    normalizeScore(_state, _pod, scores) {
      defaultNormalizeScore(MAX_NODE_SCORE, false, scores);
    },
  };
}
