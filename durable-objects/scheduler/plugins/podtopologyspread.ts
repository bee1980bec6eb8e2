import {
  type CycleState,
  MAX_NODE_SCORE,
  type NodeScore,
  type Plugin,
  SKIP,
  unresolvable,
  unschedulable,
} from "../framework";
import {
  compileLabelSelector,
  findUntoleratedTaint,
  type LabelSelectorSpec,
  type Selector,
  selectorMatches,
} from "../labels";
import type { NodeInfo } from "../nodeinfo";
import { type PodInfo, podMatchesNodeSelectorAndAffinity } from "../podinfo";

export const NAME = "PodTopologySpread";
export const ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints";
export const ERR_REASON_NODE_LABEL_NOT_MATCH = `${ERR_REASON_CONSTRAINTS_NOT_MATCH} (missing required label)`;
const HOSTNAME = "kubernetes.io/hostname";

export interface Constraint {
  maxSkew: number;
  topologyKey: string;
  selector: Selector;
  minDomains: number;
  honorNodeAffinity: boolean;
  honorNodeTaints: boolean;
}

/** Upstream's system default constraints, used for pods that declare none (ScheduleAnyway only). */
export const SYSTEM_DEFAULT_CONSTRAINTS = [
  { maxSkew: 3, topologyKey: "kubernetes.io/hostname", whenUnsatisfiable: "ScheduleAnyway" },
  { maxSkew: 5, topologyKey: "topology.kubernetes.io/zone", whenUnsatisfiable: "ScheduleAnyway" },
];

export interface PodTopologySpreadArgs {
  /**
   * Selects the pod's siblings for the system default constraints (upstream
   * merges the selectors of the Services, ReplicaSets, ReplicationControllers
   * and StatefulSets matching the pod). Without it, or when it returns null,
   * pods without constraints are not spread by default.
   */
  defaultSelector?: (pod: PodInfo["pod"]) => LabelSelectorSpec | null;
}

/** The pod's constraints with the given whenUnsatisfiable, matchLabelKeys folded into the selector. */
export function buildConstraints(
  pod: PodInfo,
  action: "DoNotSchedule" | "ScheduleAnyway",
  args: PodTopologySpreadArgs = {},
): Constraint[] {
  const out: Constraint[] = [];
  let declared: any[] = pod.pod.spec?.topologySpreadConstraints ?? [];
  if (declared.length === 0 && action === "ScheduleAnyway" && args.defaultSelector) {
    const sel = args.defaultSelector(pod.pod);
    if (
      !sel ||
      (Object.keys(sel.matchLabels ?? {}).length === 0 && (sel.matchExpressions ?? []).length === 0)
    )
      return out;
    declared = SYSTEM_DEFAULT_CONSTRAINTS.map((c) => ({ ...c, labelSelector: sel }));
  }
  for (const c of declared) {
    if ((c?.whenUnsatisfiable ?? "DoNotSchedule") !== action) continue;
    const sel = c.labelSelector
      ? { ...c.labelSelector, matchExpressions: [...(c.labelSelector.matchExpressions ?? [])] }
      : null;
    if (sel && Array.isArray(c.matchLabelKeys)) {
      for (const k of c.matchLabelKeys) {
        if (k in pod.labels) sel.matchExpressions.push({ key: k, operator: "In", values: [pod.labels[k]] });
      }
    }
    out.push({
      maxSkew: c.maxSkew ?? 1,
      topologyKey: c.topologyKey ?? "",
      selector: compileLabelSelector(sel),
      minDomains: c.minDomains ?? 1,
      honorNodeAffinity: (c.nodeAffinityPolicy ?? "Honor") === "Honor",
      honorNodeTaints: (c.nodeTaintsPolicy ?? "Ignore") === "Honor",
    });
  }
  return out;
}

const pairKey = (k: string, v: string) => `${k}\u0000${v}`;

function nodeHasAllKeys(node: NodeInfo, cs: Constraint[]): boolean {
  for (const c of cs) if (node.labels[c.topologyKey] === undefined) return false;
  return true;
}

function nodeIncluded(pod: PodInfo, node: NodeInfo, c: Constraint): boolean {
  if (c.honorNodeAffinity && !podMatchesNodeSelectorAndAffinity(pod, node.labels, node.name)) return false;
  if (c.honorNodeTaints && findUntoleratedTaint(node.taints, pod.pod.spec?.tolerations, true)) return false;
  return true;
}

export function countMatching(pods: PodInfo[], sel: Selector, ns: string): number {
  let n = 0;
  for (const p of pods) if (p.namespace === ns && !p.terminating && selectorMatches(sel, p.labels)) n++;
  return n;
}

class FilterState {
  constructor(
    public constraints: Constraint[],
    public counts: Map<string, number>,
    public minByKey: Map<string, number>,
    public domainsByKey: Map<string, number>,
  ) {}

  clone(): FilterState {
    return new FilterState(this.constraints, new Map(this.counts), new Map(this.minByKey), this.domainsByKey);
  }

  recomputeMins(): void {
    this.minByKey.clear();
    this.domainsByKey.clear();
    for (const [pk, n] of this.counts) {
      const key = pk.slice(0, pk.indexOf("\u0000"));
      this.domainsByKey.set(key, (this.domainsByKey.get(key) ?? 0) + 1);
      const cur = this.minByKey.get(key);
      if (cur === undefined || n < cur) this.minByKey.set(key, n);
    }
  }
}

interface ScoreState {
  constraints: Constraint[];
  ignored: Set<string>;
  counts: Map<string, number>;
  weights: number[];
}

const FKEY = `PreFilter${NAME}`;
const SKEY = `PreScore${NAME}`;

function updateWithPod(state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo, delta: number): void {
  const s = state.read<FilterState>(FKEY);
  if (!s || other.namespace !== pod.namespace || !nodeHasAllKeys(node, s.constraints)) return;
  for (const c of s.constraints) {
    if (!nodeIncluded(pod, node, c) || !selectorMatches(c.selector, other.labels)) continue;
    const k = pairKey(c.topologyKey, node.labels[c.topologyKey]);
    s.counts.set(k, (s.counts.get(k) ?? 0) + delta);
  }
  s.recomputeMins();
}

/** Spreads pods matching each constraint's selector evenly over topology domains. */
export function podTopologySpread(args: PodTopologySpreadArgs = {}): Plugin {
  return {
    name: NAME,
    preFilter(state, pod) {
      const cs = buildConstraints(pod, "DoNotSchedule");
      if (cs.length === 0) return SKIP;
      const counts = new Map<string, number>();
      for (const node of state.snapshot.nodeInfoList) {
        if (!nodeHasAllKeys(node, cs)) continue;
        for (const c of cs) {
          if (!nodeIncluded(pod, node, c)) continue;
          const k = pairKey(c.topologyKey, node.labels[c.topologyKey]);
          counts.set(k, (counts.get(k) ?? 0) + countMatching(node.pods, c.selector, pod.namespace));
        }
      }
      const s = new FilterState(cs, counts, new Map(), new Map());
      s.recomputeMins();
      state.write(FKEY, s);
      return undefined;
    },
    preFilterAddPod(state, pod, toAdd, node) {
      updateWithPod(state, pod, toAdd, node, 1);
    },
    preFilterRemovePod(state, pod, toRemove, node) {
      updateWithPod(state, pod, toRemove, node, -1);
    },
    filter(state, pod, node) {
      const s = state.read<FilterState>(FKEY);
      if (!s) return undefined;
      for (const c of s.constraints) {
        const v = node.labels[c.topologyKey];
        if (v === undefined) return unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH);
        const self = selectorMatches(c.selector, pod.labels) ? 1 : 0;
        const matchNum = s.counts.get(pairKey(c.topologyKey, v)) ?? 0;
        let min = s.minByKey.get(c.topologyKey) ?? Number.MAX_SAFE_INTEGER;
        if ((s.domainsByKey.get(c.topologyKey) ?? 0) < c.minDomains) min = 0;
        if (matchNum + self - min > c.maxSkew) return unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH);
      }
      return undefined;
    },
    preScore(state, pod, filtered) {
      const cs = buildConstraints(pod, "ScheduleAnyway", args);
      if (cs.length === 0) return SKIP;
      // System defaults do not require every key: nodes without a zone still get scored.
      const requireAll = (pod.pod.spec?.topologySpreadConstraints ?? []).length > 0;
      const ignored = new Set<string>();
      const counts = new Map<string, number>();
      const domains = cs.map(() => new Set<string>());
      for (const node of filtered) {
        if (requireAll && !nodeHasAllKeys(node, cs)) {
          ignored.add(node.name);
          continue;
        }
        for (let i = 0; i < cs.length; i++) {
          const c = cs[i];
          const v = node.labels[c.topologyKey];
          if (v === undefined) continue;
          domains[i].add(v);
          if (c.topologyKey !== HOSTNAME) counts.set(pairKey(c.topologyKey, v), 0);
        }
      }
      for (const node of state.snapshot.nodeInfoList) {
        if (requireAll && !nodeHasAllKeys(node, cs)) continue;
        for (const c of cs) {
          if (
            c.topologyKey === HOSTNAME ||
            node.labels[c.topologyKey] === undefined ||
            !nodeIncluded(pod, node, c)
          )
            continue;
          const k = pairKey(c.topologyKey, node.labels[c.topologyKey]);
          const cur = counts.get(k);
          if (cur === undefined) continue;
          counts.set(k, cur + countMatching(node.pods, c.selector, pod.namespace));
        }
      }
      const weights = cs.map((_, i) => Math.log(domains[i].size + 2));
      state.write(SKEY, { constraints: cs, ignored, counts, weights } satisfies ScoreState);
      return undefined;
    },
    score(state, pod, node) {
      const s = state.read<ScoreState>(SKEY);
      if (!s || s.ignored.has(node.name)) return 0;
      let score = 0;
      for (let i = 0; i < s.constraints.length; i++) {
        const c = s.constraints[i];
        const v = node.labels[c.topologyKey];
        if (v === undefined) continue;
        const cnt =
          c.topologyKey === HOSTNAME
            ? countMatching(node.pods, c.selector, pod.namespace)
            : (s.counts.get(pairKey(c.topologyKey, v)) ?? 0);
        score += cnt * s.weights[i] + (c.maxSkew - 1);
      }
      return Math.round(score);
    },
    normalizeScore(state, _pod, scores: NodeScore[]) {
      const s = state.read<ScoreState>(SKEY);
      if (!s) return;
      let min = Number.MAX_SAFE_INTEGER;
      let max = 0;
      for (const sc of scores) {
        if (s.ignored.has(sc.name)) continue;
        if (sc.score < min) min = sc.score;
        if (sc.score > max) max = sc.score;
      }
      for (const sc of scores) {
        if (s.ignored.has(sc.name)) sc.score = 0;
        else if (max === 0) sc.score = MAX_NODE_SCORE;
        else sc.score = Math.trunc((MAX_NODE_SCORE * (max + min - sc.score)) / max);
      }
    },
  };
}
