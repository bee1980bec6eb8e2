// Which pods a ReplicaSet removes first when it scales down (upstream ActivePodsWithRanks,
// with LogarithmicScaleDown on as in 1.32): unassigned < assigned; Pending < Unknown <
// Running; not ready < ready; lower pod-deletion-cost first; more pods of the same owner on
// the node first; ready more recently first; more restarts first; newer first.

import { isPodReady, podCondition } from "../../../api/pod-state";
import { timeOf } from "../../../api/time";
import type { KubeObject } from "../../../api/types";

const PHASE_ORDER: Record<string, number> = { Pending: 0, Unknown: 1, Running: 2 };
export const DELETION_COST = "controller.kubernetes.io/pod-deletion-cost";

function deletionCost(pod: KubeObject): number {
  const v = pod.metadata.annotations?.[DELETION_COST];
  if (v === undefined) return 0;
  const n = Number(v);
  return Number.isInteger(n) ? n : 0;
}

function maxRestarts(pod: KubeObject): number {
  let max = 0;
  for (const s of (pod.status?.containerStatuses ?? []) as any[]) max = Math.max(max, s.restartCount ?? 0);
  return max;
}

function readyTime(pod: KubeObject): number | undefined {
  return timeOf(podCondition(pod, "Ready")?.lastTransitionTime);
}

/** floor(log2(age in ns)), -1 for no age: pods in the same bucket count as equally old. */
function bucket(t: number, now: number): number {
  const d = (now - t) * 1e6;
  return d > 0 ? Math.floor(Math.log2(d)) : -1;
}

/** Negative when pod a (time ta) goes before pod b: zero times first, then the more recent. */
function compareRecent(
  ta: number | undefined,
  tb: number | undefined,
  now: number,
  a: KubeObject,
  b: KubeObject,
): number {
  if (ta === tb) return 0;
  if (ta === undefined) return -1;
  if (tb === undefined) return 1;
  const diff = bucket(ta, now) - bucket(tb, now);
  if (diff === 0)
    return (a.metadata.uid ?? "") < (b.metadata.uid ?? "")
      ? -1
      : (a.metadata.uid ?? "") > (b.metadata.uid ?? "")
        ? 1
        : 0;
  return diff;
}

/** Negative when a should be deleted before b. `rank` counts related pods on a pod's node. */
export function comparePodsForDeletion(
  a: KubeObject,
  b: KubeObject,
  rank: (p: KubeObject) => number,
  now: number,
): number {
  const na = a.spec?.nodeName ?? "";
  const nb = b.spec?.nodeName ?? "";
  if ((na === "") !== (nb === "")) return na === "" ? -1 : 1;
  const pa = PHASE_ORDER[a.status?.phase ?? ""] ?? 0;
  const pb = PHASE_ORDER[b.status?.phase ?? ""] ?? 0;
  if (pa !== pb) return pa - pb;
  const ra = isPodReady(a);
  const rb = isPodReady(b);
  if (ra !== rb) return ra ? 1 : -1;
  const ca = deletionCost(a);
  const cb = deletionCost(b);
  if (ca !== cb) return ca - cb;
  const ka = rank(a);
  const kb = rank(b);
  if (ka !== kb) return kb - ka;
  if (ra && rb) {
    const c = compareRecent(readyTime(a), readyTime(b), now, a, b);
    if (c !== 0) return c;
  }
  const sa = maxRestarts(a);
  const sb = maxRestarts(b);
  if (sa !== sb) return sb - sa;
  return compareRecent(timeOf(a.metadata.creationTimestamp), timeOf(b.metadata.creationTimestamp), now, a, b);
}

/**
 * The `count` pods to delete from `pods`; `related` are the active pods of every ReplicaSet
 * of the same owner (a Deployment's old and new sets), used to spread what remains.
 */
export function podsToDelete(
  pods: KubeObject[],
  related: KubeObject[],
  count: number,
  now: number,
): KubeObject[] {
  const perNode = new Map<string, number>();
  for (const p of related) {
    const n = p.spec?.nodeName;
    if (n) perNode.set(n, (perNode.get(n) ?? 0) + 1);
  }
  const rank = (p: KubeObject) => (p.spec?.nodeName ? (perNode.get(p.spec.nodeName) ?? 0) : 0);
  return [...pods].sort((a, b) => comparePodsForDeletion(a, b, rank, now)).slice(0, count);
}
