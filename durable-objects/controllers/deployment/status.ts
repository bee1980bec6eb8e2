import { timeOf } from "../../../api/time";
import type { KubeObject } from "../../../api/types";
import { type Condition, getCondition } from "../lib/conditions";
import { jsonEqual } from "../lib/json-equal";
import { MAX_INT32, maxUnavailable, replicasOf, sumSpec, sumStatus } from "./scaling";

// ---- status and conditions ----

export function hasProgressDeadline(d: KubeObject): boolean {
  const s = d.spec?.progressDeadlineSeconds;
  return typeof s === "number" && s !== MAX_INT32;
}

export function newCondition(
  type: string,
  status: Condition["status"],
  reason: string,
  message: string,
  nowIso: string,
): Condition {
  return { type, status, lastUpdateTime: nowIso, lastTransitionTime: nowIso, reason, message };
}

/** Upstream SetDeploymentCondition: same status and reason = no change at all. */
export function setDeploymentCondition(status: any, c: Condition): void {
  const list: Condition[] = status.conditions ?? [];
  const cur = getCondition(list, c.type);
  if (cur && cur.status === c.status && cur.reason === c.reason) return;
  if (cur && cur.status === c.status) c = { ...c, lastTransitionTime: cur.lastTransitionTime };
  status.conditions = [...list.filter((x) => x.type !== c.type), c];
}

export function removeDeploymentCondition(status: any, type: string): void {
  if (status.conditions)
    status.conditions = (status.conditions as Condition[]).filter((c) => c.type !== type);
}

/** Deployment status from its ReplicaSets (upstream calculateStatus). */
export function calculateDeploymentStatus(
  d: KubeObject,
  allRSs: KubeObject[],
  newRS: KubeObject | undefined,
  nowIso: string,
): any {
  const available = sumStatus(allRSs, "availableReplicas");
  const total = sumSpec(allRSs);
  const status: any = {
    observedGeneration: d.metadata.generation ?? 1,
    replicas: sumStatus(allRSs, "replicas"),
    updatedReplicas: newRS ? (newRS.status?.replicas ?? 0) : 0,
    readyReplicas: sumStatus(allRSs, "readyReplicas"),
    availableReplicas: available,
    unavailableReplicas: Math.max(0, total - available),
  };
  // zero counts are omitted on the wire (omitempty), as upstream writes them
  for (const k of Object.keys(status)) if (status[k] === 0) delete status[k];
  if (d.status?.collisionCount !== undefined) status.collisionCount = d.status.collisionCount;
  status.conditions = structuredClone(d.status?.conditions ?? []);
  if (available >= replicasOf(d) - maxUnavailable(d)) {
    setDeploymentCondition(
      status,
      newCondition(
        "Available",
        "True",
        "MinimumReplicasAvailable",
        "Deployment has minimum availability.",
        nowIso,
      ),
    );
  } else {
    setDeploymentCondition(
      status,
      newCondition(
        "Available",
        "False",
        "MinimumReplicasUnavailable",
        "Deployment does not have minimum availability.",
        nowIso,
      ),
    );
  }
  return status;
}

export function deploymentComplete(d: KubeObject, s: any): boolean {
  const n = replicasOf(d);
  return (
    (s.updatedReplicas ?? 0) === n &&
    (s.replicas ?? 0) === n &&
    (s.availableReplicas ?? 0) === n &&
    (s.observedGeneration ?? 0) >= (d.metadata.generation ?? 1)
  );
}

export function deploymentProgressing(d: KubeObject, s: any): boolean {
  const o = d.status ?? {};
  const oldOld = (o.replicas ?? 0) - (o.updatedReplicas ?? 0);
  const newOld = (s.replicas ?? 0) - (s.updatedReplicas ?? 0);
  return (
    (s.updatedReplicas ?? 0) > (o.updatedReplicas ?? 0) ||
    newOld < oldOld ||
    (s.readyReplicas ?? 0) > (o.readyReplicas ?? 0) ||
    (s.availableReplicas ?? 0) > (o.availableReplicas ?? 0)
  );
}

export function deploymentTimedOut(d: KubeObject, s: any, now: number): boolean {
  if (!hasProgressDeadline(d)) return false;
  const c = getCondition(s.conditions, "Progressing");
  if (!c) return false;
  if (c.reason === "NewReplicaSetAvailable") return false;
  if (c.reason === "ProgressDeadlineExceeded") return true;
  const from = timeOf(c.lastUpdateTime);
  return from !== undefined && from + d.spec.progressDeadlineSeconds * 1000 < now;
}

/** Ms until the progress deadline should be checked again, or undefined (upstream requeueStuckDeployment). */
export function progressRecheckAfter(d: KubeObject, s: any, now: number): number | undefined {
  const c = getCondition(s.conditions, "Progressing");
  if (!hasProgressDeadline(d) || !c) return undefined;
  if (deploymentComplete(d, s) || c.reason === "ProgressDeadlineExceeded") return undefined;
  // a rollout that finished and later fell short keeps its NewReplicaSetAvailable condition,
  // which never times out (deploymentTimedOut): nothing to look for
  if (c.reason === "NewReplicaSetAvailable") return undefined;
  const from = timeOf(c.lastUpdateTime) ?? now;
  // a second past the deadline, and a second from now once it has passed; never "now" (upstream
  // waits a rate limiter's backoff then): a sync that changes nothing would come straight back
  const after = from + d.spec.progressDeadlineSeconds * 1000 - now;
  return Math.max(after, 0) + 1000;
}

/** Status equality ignoring zero-valued counts the apiserver omits. */
export function deploymentStatusEqual(a: any, b: any): boolean {
  const norm = (s: any) => {
    const out: any = {};
    for (const [k, v] of Object.entries(s ?? {}))
      if (v !== 0 && v !== undefined && !(Array.isArray(v) && v.length === 0)) out[k] = v;
    return out;
  };
  return jsonEqual(norm(a), norm(b));
}
