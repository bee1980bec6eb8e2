// One scheduling cycle (after kube-scheduler's scheduleOne): PreFilter,
// Filter over a rotating sample of nodes, PreScore/Score/NormalizeScore with
// weights, selectHost with random tie-break, then Reserve and assume.
import { SchedulerCache, Snapshot } from "./cache";
import { ERR_NO_NODES_AVAILABLE, FitError, newDiagnosis } from "./fiterror";
import {
  CycleState,
  defaultProfile,
  Framework,
  type NodeScore,
  type Profile,
  type Registry,
} from "./framework";
import type { NodeInfo } from "./nodeinfo";
import { defaultRegistry } from "./plugins/index";
import { NAME as VOLUME_BINDING, type VolumeDecision, type volumeBinding } from "./plugins/volumebinding";
import { newPodInfo, type Pod, type PodInfo } from "./podinfo";

const MIN_FEASIBLE_NODES_TO_FIND = 100;
const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5;

/** How many feasible nodes to look for before scoring (upstream's adaptive percentageOfNodesToScore). */
export function numFeasibleNodesToFind(percentage: number, numAllNodes: number): number {
  if (numAllNodes < MIN_FEASIBLE_NODES_TO_FIND) return numAllNodes;
  let pct = percentage;
  if (!pct) {
    pct = 50 - Math.trunc(numAllNodes / 125);
    if (pct < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND) pct = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND;
  }
  if (pct >= 100) return numAllNodes;
  const n = Math.trunc((numAllNodes * pct) / 100);
  return Math.max(n, MIN_FEASIBLE_NODES_TO_FIND);
}

export type CycleResult =
  | { node: string; evaluatedNodes: number; feasibleNodes: number; state: CycleState; score?: number }
  | { unschedulable: FitError; state: CycleState }
  | { error: string; state?: CycleState };

export interface CycleOptions {
  /** Rotating start index into the node list (updated in place). */
  cursor?: { next: number };
  percentageOfNodesToScore?: number;
  random?: () => number;
}

function filterNodes(
  fwk: Framework,
  state: CycleState,
  pod: PodInfo,
  nodes: NodeInfo[],
  numToFind: number,
  cursor: { next: number },
  diag: ReturnType<typeof newDiagnosis>,
): NodeInfo[] {
  const feasible: NodeInfo[] = [];
  const n = nodes.length;
  const start = n > 0 ? cursor.next % n : 0;
  let processed = 0;
  for (let i = 0; i < n && feasible.length < numToFind; i++) {
    const node = nodes[(start + i) % n];
    processed++;
    const s = fwk.runFilter(state, pod, node);
    if (s === undefined) feasible.push(node);
    else {
      diag.nodeToStatus.set(node.name, s);
      if (s.plugin) diag.unschedulablePlugins.add(s.plugin);
    }
  }
  if (n > 0) cursor.next = (start + processed) % n;
  return feasible;
}

function prioritize(fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeInfo[]): Float64Array {
  const total = new Float64Array(nodes.length);
  for (const p of fwk.preScore) {
    const s = p.preScore!(state, pod, nodes);
    if (s === undefined || s.code === "Success") continue;
    if (s.code === "Skip") state.skipScorePlugins.add(p.name);
    else throw new Error(`running PreScore plugin ${p.name}: ${s.message()}`);
  }
  for (const { plugin, weight } of fwk.score) {
    if (state.skipScorePlugins.has(plugin.name)) continue;
    const scores: NodeScore[] = new Array(nodes.length);
    for (let i = 0; i < nodes.length; i++)
      scores[i] = { name: nodes[i].name, score: plugin.score!(state, pod, nodes[i]) };
    plugin.normalizeScore?.(state, pod, scores);
    for (let i = 0; i < nodes.length; i++) total[i] += scores[i].score * weight;
  }
  return total;
}

/** The highest total; ties broken uniformly at random (reservoir sampling). */
export function selectHost(nodes: NodeInfo[], totals: Float64Array, random: () => number): string {
  let best = 0;
  let ties = 1;
  for (let i = 1; i < nodes.length; i++) {
    if (totals[i] > totals[best]) {
      best = i;
      ties = 1;
    } else if (totals[i] === totals[best]) {
      ties++;
      if (random() * ties < 1) best = i;
    }
  }
  return nodes[best].name;
}

/** Runs one scheduling cycle for `pod` against `snapshot`; does not touch any cache. */
export function schedulePod(
  fwk: Framework,
  pod: PodInfo,
  snapshot: Snapshot,
  opts: CycleOptions = {},
): CycleResult {
  const state = new CycleState(snapshot, fwk);
  const all = snapshot.nodeInfoList;
  if (all.length === 0) return { error: ERR_NO_NODES_AVAILABLE, state };
  const diag = newDiagnosis();
  const pre = fwk.runPreFilter(state, pod);
  if (pre.status) {
    if (!pre.status.isRejected()) return { error: pre.status.message(), state };
    diag.preFilterMsg = pre.status.message();
    diag.nodeToStatus.absent = pre.status;
    if (pre.status.plugin) diag.unschedulablePlugins.add(pre.status.plugin);
    return { unschedulable: new FitError(pod, all.length, diag), state };
  }
  let nodes = all;
  if (pre.nodeNames) {
    nodes = [];
    for (const name of pre.nodeNames) {
      const ni = snapshot.get(name);
      if (ni) nodes.push(ni);
    }
    diag.nodeToStatus.absent.reasons = [`node(s) didn't satisfy plugin(s) [${pre.plugins.sort().join(" ")}]`];
  }
  // A pod that preempted before tries its nominated node first.
  const nominated = pod.pod.status?.nominatedNodeName as string | undefined;
  if (nominated) {
    const ni = snapshot.get(nominated);
    if (
      ni &&
      (!pre.nodeNames || pre.nodeNames.has(nominated)) &&
      fwk.runFilter(state, pod, ni) === undefined
    ) {
      return { node: nominated, evaluatedNodes: 1, feasibleNodes: 1, state };
    }
  }
  const cursor = opts.cursor ?? { next: 0 };
  const numToFind =
    fwk.filter.length === 0
      ? nodes.length
      : numFeasibleNodesToFind(opts.percentageOfNodesToScore ?? 0, nodes.length);
  const feasible = filterNodes(fwk, state, pod, nodes, numToFind, cursor, diag);
  if (feasible.length === 0) return { unschedulable: new FitError(pod, all.length, diag), state };
  const evaluatedNodes = feasible.length + diag.nodeToStatus.map.size;
  if (feasible.length === 1) return { node: feasible[0].name, evaluatedNodes, feasibleNodes: 1, state };
  const totals = prioritize(fwk, state, pod, feasible);
  const node = selectHost(feasible, totals, opts.random ?? Math.random);
  return {
    node,
    evaluatedNodes,
    feasibleNodes: feasible.length,
    state,
    score: totals[feasible.findIndex((n) => n.name === node)],
  };
}

export type ScheduleOutcome =
  | { node: string; pod: PodInfo; evaluatedNodes: number; feasibleNodes: number; score?: number }
  | {
      unschedulable: FitError;
      message: string;
      nominatedNodeName?: string;
      victims?: PodInfo[];
      pod: PodInfo;
    }
  | { error: string; pod: PodInfo };

export interface SchedulerOptions {
  profile?: Profile;
  registry?: Registry;
  cache?: SchedulerCache;
  random?: () => number;
}

/** A scheduler: framework + cache + snapshot. The Durable Object drives it. */
export class Scheduler {
  readonly framework: Framework;
  readonly cache: SchedulerCache;
  readonly snapshot = new Snapshot();
  private cursor = { next: 0 };
  private random: () => number;

  constructor(opts: SchedulerOptions = {}) {
    this.framework = new Framework(opts.profile ?? defaultProfile(), opts.registry ?? defaultRegistry());
    this.cache = opts.cache ?? new SchedulerCache();
    this.random = opts.random ?? Math.random;
  }

  /**
   * Schedules one pending pod. On success the pod is assumed onto the node in
   * the cache (the caller then writes the Binding and calls bindingDone).
   * On failure PostFilter (preemption) has run; a nominated node and victims
   * may be returned for the caller to act on.
   */
  scheduleOne(podOrInfo: Pod | PodInfo): ScheduleOutcome {
    const pod =
      "requests" in podOrInfo && "key" in podOrInfo ? (podOrInfo as PodInfo) : newPodInfo(podOrInfo as Pod);
    this.cache.updateSnapshot(this.snapshot);
    const r = schedulePod(this.framework, pod, this.snapshot, {
      cursor: this.cursor,
      percentageOfNodesToScore: this.framework.profile.percentageOfNodesToScore,
      random: this.random,
    });
    if ("error" in r) return { error: r.error, pod };
    if ("unschedulable" in r) {
      const fitError = r.unschedulable;
      const pf = this.framework.runPostFilter(r.state, pod, fitError.diagnosis.nodeToStatus);
      if (pf.status.isSuccess() && pf.result) {
        return {
          unschedulable: fitError,
          message: fitError.message(),
          nominatedNodeName: pf.result.nominatedNodeName,
          victims: pf.result.victims,
          pod,
        };
      }
      fitError.diagnosis.postFilterMsg = pf.status.message();
      return { unschedulable: fitError, message: fitError.message(), pod };
    }
    const host = r.node;
    const assumed = assumedPodInfo(pod, host);
    this.cache.assumePod(assumed, host);
    const rs = this.framework.runReserve(r.state, assumed, host);
    if (rs) {
      this.framework.runUnreserve(r.state, assumed, host);
      this.cache.forgetPod(assumed.key);
      return { error: rs.message(), pod };
    }
    const ps = this.framework.runPermit(r.state, assumed, host);
    if (ps) {
      this.framework.runUnreserve(r.state, assumed, host);
      this.cache.forgetPod(assumed.key);
      return { error: ps.message(), pod };
    }
    return {
      node: host,
      pod: assumed,
      evaluatedNodes: r.evaluatedNodes,
      feasibleNodes: r.feasibleNodes,
      score: r.score,
    };
  }

  /** What VolumeBinding reserved for a pod: volumes to bind and claims to provision first. */
  volumeDecision(key: string): VolumeDecision | undefined {
    return this.volumePlugin()?.decision(key);
  }

  private volumePlugin() {
    return this.framework.plugins.find((p) => p.name === VOLUME_BINDING) as
      | ReturnType<typeof volumeBinding>
      | undefined;
  }

  /** After the Binding write: confirm the assumption, or undo it so the pod can be retried. */
  bindingDone(key: string, ok: boolean, now = Date.now()): void {
    this.volumePlugin()?.forget(key);
    if (ok) this.cache.finishBinding(key, now);
    else this.cache.forgetPod(key);
  }
}

/** The pod as it will look once bound (spec.nodeName set). */
export function assumedPodInfo(pod: PodInfo, nodeName: string): PodInfo {
  const p = { ...pod.pod, spec: { ...(pod.pod.spec ?? {}), nodeName } };
  return { ...pod, pod: p };
}

export { newPodInfo };
