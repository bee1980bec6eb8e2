import {
  type CycleState,
  MAX_NODE_SCORE,
  type NodeScore,
  type Plugin,
  SKIP,
  unresolvable,
  unschedulable,
} from "../framework";
import type { NodeInfo } from "../nodeinfo";
import { type AffinityTerm, type PodInfo, termMatchesPod } from "../podinfo";

export const NAME = "InterPodAffinity";
export const ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules";
export const ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules";
export const ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules";
/** Weight given to existing pods' required affinity terms when scoring (upstream default 1). */
const HARD_POD_AFFINITY_WEIGHT = 1;

const pairKey = (k: string, v: string) => `${k}\u0000${v}`;

class Counts extends Map<string, number> {
  bump(node: NodeInfo, key: string, delta: number): void {
    const v = node.labels[key];
    if (v === undefined) return;
    const k = pairKey(key, v);
    const n = (this.get(k) ?? 0) + delta;
    if (n === 0) this.delete(k);
    else this.set(k, n);
  }
}

class FilterState {
  constructor(
    public existingAnti: Counts,
    public affinity: Counts,
    public anti: Counts,
  ) {}

  clone(): FilterState {
    const c = (m: Counts) => {
      const x = new Counts();
      for (const [k, v] of m) x.set(k, v);
      return x;
    };
    return new FilterState(c(this.existingAnti), c(this.affinity), c(this.anti));
  }
}

const FKEY = `PreFilter${NAME}`;
const SKEY = `PreScore${NAME}`;

function nsLabels(state: CycleState, ns: string): Record<string, string> | undefined {
  return state.snapshot.namespaceLabels.get(ns);
}

function allTermsMatch(
  terms: AffinityTerm[],
  p: PodInfo,
  labels: Record<string, string> | undefined,
): boolean {
  if (terms.length === 0) return false;
  for (const t of terms) if (!termMatchesPod(t, p, labels)) return false;
  return true;
}

function account(
  state: CycleState,
  s: FilterState,
  pod: PodInfo,
  other: PodInfo,
  node: NodeInfo,
  delta: number,
): void {
  const podNs = nsLabels(state, pod.namespace);
  for (const t of other.requiredAntiAffinityTerms) {
    if (termMatchesPod(t, pod, podNs)) s.existingAnti.bump(node, t.topologyKey, delta);
  }
  const otherNs = nsLabels(state, other.namespace);
  if (allTermsMatch(pod.requiredAffinityTerms, other, otherNs)) {
    for (const t of pod.requiredAffinityTerms) s.affinity.bump(node, t.topologyKey, delta);
  }
  for (const t of pod.requiredAntiAffinityTerms) {
    if (termMatchesPod(t, other, otherNs)) s.anti.bump(node, t.topologyKey, delta);
  }
}

function satisfiesAffinity(s: FilterState, pod: PodInfo, node: NodeInfo, state: CycleState): boolean {
  let podsExist = true;
  for (const t of pod.requiredAffinityTerms) {
    const v = node.labels[t.topologyKey];
    if (v === undefined) return false;
    if ((s.affinity.get(pairKey(t.topologyKey, v)) ?? 0) <= 0) podsExist = false;
  }
  if (podsExist) return true;
  // No pod anywhere matches yet: the first pod of a self-affine group may go anywhere.
  return (
    s.affinity.size === 0 && allTermsMatch(pod.requiredAffinityTerms, pod, nsLabels(state, pod.namespace))
  );
}

/** Required pod affinity / anti-affinity (both ways) and preferred-term scoring. */
export function interPodAffinity(): Plugin {
  return {
    name: NAME,
    preFilter(state, pod) {
      const snap = state.snapshot;
      const hasOwn = pod.requiredAffinityTerms.length > 0 || pod.requiredAntiAffinityTerms.length > 0;
      if (!hasOwn && snap.havePodsWithRequiredAntiAffinityList.length === 0) return SKIP;
      const s = new FilterState(new Counts(), new Counts(), new Counts());
      const podNs = nsLabels(state, pod.namespace);
      for (const node of snap.havePodsWithRequiredAntiAffinityList) {
        for (const ex of node.podsWithRequiredAntiAffinity) {
          for (const t of ex.requiredAntiAffinityTerms) {
            if (termMatchesPod(t, pod, podNs)) s.existingAnti.bump(node, t.topologyKey, 1);
          }
        }
      }
      if (hasOwn) {
        for (const node of snap.nodeInfoList) {
          for (const ex of node.pods) {
            const exNs = nsLabels(state, ex.namespace);
            if (allTermsMatch(pod.requiredAffinityTerms, ex, exNs)) {
              for (const t of pod.requiredAffinityTerms) s.affinity.bump(node, t.topologyKey, 1);
            }
            for (const t of pod.requiredAntiAffinityTerms) {
              if (termMatchesPod(t, ex, exNs)) s.anti.bump(node, t.topologyKey, 1);
            }
          }
        }
      }
      state.write(FKEY, s);
      return undefined;
    },
    preFilterAddPod(state, pod, toAdd, node) {
      const s = state.read<FilterState>(FKEY);
      if (s) account(state, s, pod, toAdd, node, 1);
    },
    preFilterRemovePod(state, pod, toRemove, node) {
      const s = state.read<FilterState>(FKEY);
      if (s) account(state, s, pod, toRemove, node, -1);
    },
    filter(state, pod, node) {
      const s = state.read<FilterState>(FKEY);
      if (!s) return undefined;
      if (pod.requiredAffinityTerms.length > 0 && !satisfiesAffinity(s, pod, node, state)) {
        return unresolvable(ERR_REASON_AFFINITY);
      }
      for (const t of pod.requiredAntiAffinityTerms) {
        const v = node.labels[t.topologyKey];
        if (v !== undefined && (s.anti.get(pairKey(t.topologyKey, v)) ?? 0) > 0)
          return unschedulable(ERR_REASON_ANTI_AFFINITY);
      }
      if (s.existingAnti.size > 0) {
        for (const key in node.labels) {
          if ((s.existingAnti.get(pairKey(key, node.labels[key])) ?? 0) > 0)
            return unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY);
        }
      }
      return undefined;
    },
    preScore(state, pod) {
      const snap = state.snapshot;
      const hasPreferred = pod.preferredAffinityTerms.length > 0 || pod.preferredAntiAffinityTerms.length > 0;
      const nodes = hasPreferred ? snap.nodeInfoList : snap.havePodsWithAffinityList;
      if (nodes.length === 0) return SKIP;
      const topo = new Map<string, Map<string, number>>();
      const add = (node: NodeInfo, key: string, w: number) => {
        const v = node.labels[key];
        if (v === undefined || w === 0) return;
        let m = topo.get(key);
        if (!m) topo.set(key, (m = new Map()));
        m.set(v, (m.get(v) ?? 0) + w);
      };
      const podNs = nsLabels(state, pod.namespace);
      for (const node of nodes) {
        if (Object.keys(node.labels).length === 0) continue;
        for (const ex of hasPreferred ? node.pods : node.podsWithAffinity) {
          const exNs = nsLabels(state, ex.namespace);
          for (const t of pod.preferredAffinityTerms)
            if (termMatchesPod(t, ex, exNs)) add(node, t.topologyKey, t.weight);
          for (const t of pod.preferredAntiAffinityTerms)
            if (termMatchesPod(t, ex, exNs)) add(node, t.topologyKey, -t.weight);
          for (const t of ex.requiredAffinityTerms) {
            if (termMatchesPod(t, pod, podNs)) add(node, t.topologyKey, HARD_POD_AFFINITY_WEIGHT);
          }
          for (const t of ex.preferredAffinityTerms)
            if (termMatchesPod(t, pod, podNs)) add(node, t.topologyKey, t.weight);
          for (const t of ex.preferredAntiAffinityTerms)
            if (termMatchesPod(t, pod, podNs)) add(node, t.topologyKey, -t.weight);
        }
      }
      if (topo.size === 0) return SKIP;
      state.write(SKEY, topo);
      return undefined;
    },
    score(state, _pod, node) {
      const topo = state.read<Map<string, Map<string, number>>>(SKEY);
      if (!topo) return 0;
      let score = 0;
      for (const [key, m] of topo) {
        const v = node.labels[key];
        if (v !== undefined) score += m.get(v) ?? 0;
      }
      return score;
    },
    normalizeScore(_state, _pod, scores: NodeScore[]) {
      let min = Number.POSITIVE_INFINITY;
      let max = Number.NEGATIVE_INFINITY;
      for (const s of scores) {
        if (s.score < min) min = s.score;
        if (s.score > max) max = s.score;
      }
      const diff = max - min;
      for (const s of scores) s.score = diff > 0 ? Math.trunc(MAX_NODE_SCORE * ((s.score - min) / diff)) : 0;
    },
  };
}
