import { FitError, newDiagnosis } from "../fiterror";
import {
  type CycleState,
  type NodeToStatus,
  type Plugin,
  Status,
  unresolvable,
  unschedulable,
} from "../framework";
import type { NodeInfo } from "../nodeinfo";
import type { PodInfo } from "../podinfo";

export const NAME = "DefaultPreemption";
export const MSG_NOT_HELPFUL = "Preemption is not helpful for scheduling";
export const MSG_NO_VICTIMS = "No preemption victims found for incoming pod";
const MIN_CANDIDATE_NODES_PERCENTAGE = 10;
const MIN_CANDIDATE_NODES_ABSOLUTE = 100;

export interface Candidate {
  node: string;
  victims: PodInfo[];
}

function startTime(p: PodInfo): number {
  const t = p.pod.status?.startTime ?? p.pod.metadata.creationTimestamp;
  return t ? Date.parse(t) : 0;
}

/** Higher priority first, then the one that started earlier. */
function moreImportant(a: PodInfo, b: PodInfo): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  return startTime(a) - startTime(b);
}

/**
 * Removes every lower-priority pod from a copy of the node; if the pod then
 * fits, adds them back most important first, keeping each that still fits.
 */
export function selectVictimsOnNode(
  state: CycleState,
  pod: PodInfo,
  node: NodeInfo,
): { victims?: PodInfo[]; status?: Status } {
  const fwk = state.framework;
  const copy = node.clone();
  const st = state.clone();
  const potential = copy.pods.filter((p) => p.priority < pod.priority);
  if (potential.length === 0) return { status: unresolvable(MSG_NO_VICTIMS) };
  for (const v of potential) {
    copy.removePod(v.key);
    fwk.runPreFilterRemovePod(st, pod, v, copy);
  }
  const fits = fwk.runFilter(st, pod, copy);
  if (fits) return { status: fits };
  potential.sort(moreImportant);
  const victims: PodInfo[] = [];
  for (const v of potential) {
    copy.addPod(v);
    fwk.runPreFilterAddPod(st, pod, v, copy);
    if (fwk.runFilter(st, pod, copy)) {
      copy.removePod(v.key);
      fwk.runPreFilterRemovePod(st, pod, v, copy);
      victims.push(v);
    }
  }
  if (victims.length === 0)
    return { status: new Status("Error", [`expected at least one victim pod on node "${node.name}"`]) };
  return { victims };
}

/** Upstream's pickOneNodeForPreemption, without PodDisruptionBudgets. */
export function pickOneCandidate(cands: Candidate[]): Candidate {
  const by = (list: Candidate[], f: (c: Candidate) => number): Candidate[] => {
    let best = Number.POSITIVE_INFINITY;
    let out: Candidate[] = [];
    for (const c of list) {
      const v = f(c);
      if (v < best) {
        best = v;
        out = [c];
      } else if (v === best) out.push(c);
    }
    return out;
  };
  let list = by(cands, (c) => c.victims[0]?.priority ?? Number.NEGATIVE_INFINITY);
  if (list.length > 1) list = by(list, (c) => c.victims.reduce((a, v) => a + v.priority + 2 ** 31, 0));
  if (list.length > 1) list = by(list, (c) => c.victims.length);
  if (list.length > 1) {
    // Prefer the node whose highest-priority victims started most recently.
    list = by(list, (c) => {
      const top = c.victims[0]?.priority;
      let earliest = Number.POSITIVE_INFINITY;
      for (const v of c.victims) if (v.priority === top) earliest = Math.min(earliest, startTime(v));
      return -earliest;
    });
  }
  return list[0];
}

export interface PreemptionOptions {
  random?: () => number;
}

/** PostFilter: find a node where evicting lower-priority pods makes the pod fit. */
export function defaultPreemption(opts: PreemptionOptions = {}): Plugin {
  const random = opts.random ?? Math.random;
  return {
    name: NAME,
    postFilter(state, pod, statuses: NodeToStatus) {
      const r = preempt(state, pod, statuses, random);
      if (r.status && r.status.reasons.length > 0) r.status.reasons = [`preemption: ${r.status.message()}`];
      return r;
    },
  };
}

function preempt(
  state: CycleState,
  pod: PodInfo,
  statuses: NodeToStatus,
  random: () => number,
): { result?: { nominatedNodeName: string; victims: PodInfo[] }; status: Status | undefined } {
  const spec = pod.pod.spec ?? {};
  if (spec.preemptionPolicy === "Never") {
    return { status: unschedulable("not eligible due to preemptionPolicy=Never.") };
  }
  const snap = state.snapshot;
  const nominated = pod.pod.status?.nominatedNodeName as string | undefined;
  if (nominated && statuses.get(nominated).code !== "UnschedulableAndUnresolvable") {
    const ni = snap.get(nominated);
    if (ni?.pods.some((p) => p.terminating && p.priority < pod.priority)) {
      return { status: unschedulable("not eligible due to a terminating pod on the nominated node.") };
    }
  }
  const all = snap.nodeInfoList;
  const diag = newDiagnosis();
  diag.nodeToStatus.absent = unresolvable(MSG_NOT_HELPFUL);
  const potential = all.filter((n) => statuses.get(n.name).code !== "UnschedulableAndUnresolvable");
  const candidates: Candidate[] = [];
  if (potential.length > 0) {
    let want = Math.trunc((potential.length * MIN_CANDIDATE_NODES_PERCENTAGE) / 100);
    if (want < MIN_CANDIDATE_NODES_ABSOLUTE) want = MIN_CANDIDATE_NODES_ABSOLUTE;
    if (want > potential.length) want = potential.length;
    const offset = Math.floor(random() * potential.length);
    for (let i = 0; i < potential.length && candidates.length < want; i++) {
      const node = potential[(offset + i) % potential.length];
      const r = selectVictimsOnNode(state, pod, node);
      if (r.victims) candidates.push({ node: node.name, victims: r.victims });
      else if (r.status) {
        if (r.status.code === "Error") return { status: r.status };
        diag.nodeToStatus.set(node.name, r.status);
      }
    }
  }
  if (candidates.length === 0) {
    return { status: unschedulable(new FitError(pod, all.length, diag).message()) };
  }
  const best = pickOneCandidate(candidates);
  return { result: { nominatedNodeName: best.node, victims: best.victims }, status: undefined };
}
