// The pure arithmetic of the Deployment controller (upstream pkg/controller/deployment/util):
// template hashes, surge/unavailable fenceposts, rolling-update step sizes, proportional
// scaling, revisions and annotations, and status/conditions.
import { dropZeroTimestamp } from "../../api/strategies/common";
import type { KubeObject } from "../../api/types";
import {
  type Condition,
  getCondition,
  jsonEqual,
  scaledValue,
  stableStringify,
  timeOf,
} from "./controller-utils";

export const REVISION = "deployment.kubernetes.io/revision";
export const REVISION_HISTORY = "deployment.kubernetes.io/revision-history";
export const DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas";
export const MAX_REPLICAS = "deployment.kubernetes.io/max-replicas";
export const CHANGE_CAUSE = "kubernetes.io/change-cause";
export const HASH_LABEL = "pod-template-hash";
const MAX_INT32 = 2147483647;
const NOT_COPIED = new Set([
  "kubectl.kubernetes.io/last-applied-configuration",
  REVISION,
  REVISION_HISTORY,
  DESIRED_REPLICAS,
  MAX_REPLICAS,
  "deprecated.deployment.rollback.to",
]);

// ---- hash ----

function fnv32a(s: string): number {
  let h = 0x811c9dc5;
  for (const b of new TextEncoder().encode(s)) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

const SAFE = "bcdfghjklmnpqrstvwxz2456789";

/** Upstream's rand.SafeEncodeString: every character mapped into an alphabet without vowels. */
export function safeEncode(s: string): string {
  let out = "";
  for (let i = 0; i < s.length; i++) out += SAFE[s.charCodeAt(i) % SAFE.length];
  return out;
}

/** The pod-template-hash of a template (FNV-32a over its canonical JSON, plus the collision count). */
export function computeHash(template: unknown, collisionCount?: number): string {
  let s = stableStringify(withoutZeroTimestamp(template ?? {}));
  if (collisionCount) s += `#${collisionCount}`;
  return safeEncode(String(fnv32a(s)));
}

/**
 * A template as upstream's Go struct holds it: `creationTimestamp: null` is the zero time,
 * the same as none (ReplicaSets stored before the API dropped it carry it). A copy, unlike
 * the strategies' dropZeroTimestamp, for the hash of a template the caller still holds.
 */
function withoutZeroTimestamp(template: any): any {
  if (template?.metadata?.creationTimestamp !== null) return template;
  const { creationTimestamp: _zero, ...metadata } = template.metadata;
  return { ...template, metadata };
}

/** Template equality ignoring the pod-template-hash label and a zero creationTimestamp (upstream EqualIgnoreHash). */
export function equalIgnoreHash(a: any, b: any): boolean {
  const strip = (t: any) => {
    const c = structuredClone(t ?? {});
    dropZeroTimestamp(c);
    if (c.metadata?.labels) {
      delete c.metadata.labels[HASH_LABEL];
      if (Object.keys(c.metadata.labels).length === 0) delete c.metadata.labels;
    }
    if (c.metadata && Object.keys(c.metadata).length === 0) delete c.metadata;
    return c;
  };
  return jsonEqual(strip(a), strip(b));
}

// ---- fenceposts ----

export function replicasOf(o: KubeObject | undefined): number {
  return o?.spec?.replicas ?? (o ? 1 : 0);
}

function isRolling(d: KubeObject): boolean {
  return (d.spec?.strategy?.type ?? "RollingUpdate") === "RollingUpdate";
}

/** [maxSurge, maxUnavailable] for a desired count: surge rounds up, unavailable down, never both 0. */
export function resolveFenceposts(
  maxSurge: number | string | undefined,
  maxUnavailable: number | string | undefined,
  desired: number,
): [number, number] {
  const surge = scaledValue(maxSurge ?? "25%", desired, true);
  let unavailable = scaledValue(maxUnavailable ?? "25%", desired, false);
  if (surge === 0 && unavailable === 0) unavailable = 1;
  return [surge, unavailable];
}

export function maxSurge(d: KubeObject): number {
  if (!isRolling(d)) return 0;
  const ru = d.spec?.strategy?.rollingUpdate ?? {};
  return resolveFenceposts(ru.maxSurge, ru.maxUnavailable, replicasOf(d))[0];
}

export function maxUnavailable(d: KubeObject): number {
  const replicas = replicasOf(d);
  if (!isRolling(d) || replicas === 0) return 0;
  const ru = d.spec?.strategy?.rollingUpdate ?? {};
  return Math.min(resolveFenceposts(ru.maxSurge, ru.maxUnavailable, replicas)[1], replicas);
}

// ---- sums ----

export const sumSpec = (rss: KubeObject[]) => rss.reduce((n, rs) => n + replicasOf(rs), 0);
export const sumStatus = (rss: KubeObject[], field: string) =>
  rss.reduce((n, rs) => n + (rs.status?.[field] ?? 0), 0);
export const activeReplicaSets = (rss: KubeObject[]) => rss.filter((rs) => replicasOf(rs) > 0);

function created(o: KubeObject): number {
  return timeOf(o.metadata.creationTimestamp) ?? 0;
}

/** Oldest first, ties by name (upstream ReplicaSetsByCreationTimestamp). */
export function byCreation(a: KubeObject, b: KubeObject): number {
  return (
    created(a) - created(b) ||
    (a.metadata.name! < b.metadata.name! ? -1 : a.metadata.name! > b.metadata.name! ? 1 : 0)
  );
}

export function revisionOf(o: KubeObject): number {
  const n = Number(o.metadata.annotations?.[REVISION] ?? 0);
  return Number.isFinite(n) ? n : 0;
}

export function maxRevision(rss: KubeObject[]): number {
  return rss.reduce((m, rs) => Math.max(m, revisionOf(rs)), 0);
}

// ---- rollout steps ----

/** Size the new ReplicaSet may grow to now (upstream NewRSNewReplicas). */
export function newRSNewReplicas(d: KubeObject, allRSs: KubeObject[], newRS: KubeObject): number {
  if (!isRolling(d)) return replicasOf(d);
  const current = sumSpec(allRSs);
  const maxTotal = replicasOf(d) + maxSurge(d);
  if (current >= maxTotal) return replicasOf(newRS);
  const up = Math.min(maxTotal - current, replicasOf(d) - replicasOf(newRS));
  return replicasOf(newRS) + up;
}

export interface ScaleOp {
  rs: KubeObject;
  to: number;
}

/**
 * How old ReplicaSets shrink in one rolling-update step (upstream reconcileOldReplicaSets):
 * first unhealthy replicas, then as far as availability above the minimum allows.
 */
export function reconcileOldReplicaSets(
  d: KubeObject,
  allRSs: KubeObject[],
  oldRSs: KubeObject[],
  newRS: KubeObject,
): ScaleOp[] {
  const old = activeReplicaSets(oldRSs).sort(byCreation);
  if (sumSpec(old) === 0) return [];
  const minAvailable = replicasOf(d) - maxUnavailable(d);
  const newUnavailable = replicasOf(newRS) - (newRS.status?.availableReplicas ?? 0);
  const maxScaledDown = sumSpec(allRSs) - minAvailable - newUnavailable;
  if (maxScaledDown <= 0) return [];
  const sizes = new Map<KubeObject, number>(old.map((rs) => [rs, replicasOf(rs)]));
  let cleaned = 0;
  for (const rs of old) {
    if (cleaned >= maxScaledDown) break;
    const size = sizes.get(rs)!;
    const unhealthy = size - (rs.status?.availableReplicas ?? 0);
    if (size === 0 || unhealthy <= 0) continue;
    const down = Math.min(maxScaledDown - cleaned, unhealthy);
    sizes.set(rs, size - down);
    cleaned += down;
  }
  const available = sumStatus(allRSs, "availableReplicas");
  if (available > minAvailable) {
    const total = available - minAvailable;
    let done = 0;
    for (const rs of old) {
      if (done >= total) break;
      const size = sizes.get(rs)!;
      if (size === 0) continue;
      const down = Math.min(size, total - done);
      sizes.set(rs, size - down);
      done += down;
    }
  }
  return old.filter((rs) => sizes.get(rs) !== replicasOf(rs)).map((rs) => ({ rs, to: sizes.get(rs)! }));
}

/** The only active set, or the newest when none is active (upstream FindActiveOrLatest). */
export function findActiveOrLatest(
  newRS: KubeObject | undefined,
  oldRSs: KubeObject[],
): KubeObject | undefined {
  const old = [...oldRSs].sort(byCreation);
  const active = activeReplicaSets(newRS ? [...old, newRS] : old);
  if (active.length === 0) return newRS ?? old[old.length - 1];
  if (active.length === 1) return active[0];
  return undefined;
}

export function isSaturated(d: KubeObject, rs: KubeObject | undefined): boolean {
  if (!rs) return false;
  const desired = Number(rs.metadata.annotations?.[DESIRED_REPLICAS]);
  return (
    desired === replicasOf(d) &&
    replicasOf(rs) === replicasOf(d) &&
    (rs.status?.availableReplicas ?? 0) === replicasOf(d)
  );
}

function roundHalfAway(x: number): number {
  return x < 0 ? -Math.round(-x) : Math.round(x);
}

function fraction(rs: KubeObject, d: KubeObject): number {
  if (replicasOf(d) === 0) return -replicasOf(rs);
  const deploymentReplicas = replicasOf(d) + maxSurge(d);
  const ann = Number(rs.metadata.annotations?.[MAX_REPLICAS]);
  const annotated =
    Number.isInteger(ann) && rs.metadata.annotations?.[MAX_REPLICAS] !== undefined
      ? ann
      : (d.status?.replicas ?? 0);
  if (annotated === 0) return 0;
  return roundHalfAway((replicasOf(rs) * deploymentReplicas) / annotated) - replicasOf(rs);
}

/**
 * Target sizes when the Deployment is scaled (upstream scale()): the single active set takes
 * the new size; mid-rollout, the difference is spread over the sets in proportion to their size.
 * Returns the target of every set it would touch (same size = annotations only).
 */
export function scalePlan(d: KubeObject, newRS: KubeObject | undefined, oldRSs: KubeObject[]): ScaleOp[] {
  const single = findActiveOrLatest(newRS, oldRSs);
  if (single) return replicasOf(single) === replicasOf(d) ? [] : [{ rs: single, to: replicasOf(d) }];
  if (isSaturated(d, newRS)) return activeReplicaSets(oldRSs).map((rs) => ({ rs, to: 0 }));
  if (!isRolling(d)) return [];
  const all = activeReplicaSets(newRS ? [...oldRSs, newRS] : oldRSs);
  const allowed = replicasOf(d) > 0 ? replicasOf(d) + maxSurge(d) : 0;
  const toAdd = allowed - sumSpec(all);
  const newerFirst = toAdd > 0;
  all.sort((a, b) => {
    const s = replicasOf(b) - replicasOf(a);
    if (s !== 0) return s;
    return newerFirst ? byCreation(b, a) : byCreation(a, b);
  });
  const sizes = new Map<KubeObject, number>();
  let added = 0;
  for (const rs of all) {
    let p = 0;
    if (toAdd !== 0 && replicasOf(rs) !== 0 && toAdd !== added) {
      const f = fraction(rs, d);
      const left = toAdd - added;
      p = toAdd > 0 ? Math.min(f, left) : Math.max(f, left);
    }
    sizes.set(rs, replicasOf(rs) + p);
    added += p;
  }
  if (toAdd !== 0 && all.length) {
    const first = all[0];
    sizes.set(first, Math.max(0, sizes.get(first)! + toAdd - added));
  }
  return all.map((rs) => ({ rs, to: sizes.get(rs)! }));
}

// ---- annotations ----

/** Applies a Deployment's annotations to its new ReplicaSet; true when anything changed. */
export function setNewReplicaSetAnnotations(
  d: KubeObject,
  rs: KubeObject,
  newRevision: string,
  exists: boolean,
): boolean {
  const ann: Record<string, string> = (rs.metadata.annotations ??= {});
  let changed = false;
  for (const [k, v] of Object.entries(d.metadata.annotations ?? {})) {
    if (NOT_COPIED.has(k) || ann[k] === v) continue;
    ann[k] = v;
    changed = true;
  }
  const oldRevision = ann[REVISION];
  const oldN = Number(oldRevision ?? 0) || 0;
  const newN = Number(newRevision);
  if (oldN < newN) {
    ann[REVISION] = newRevision;
    changed = true;
    if (oldRevision) {
      const hist = ann[REVISION_HISTORY];
      ann[REVISION_HISTORY] = hist ? `${hist},${oldRevision}` : oldRevision;
    }
  }
  if (!exists && setReplicasAnnotations(rs, replicasOf(d), replicasOf(d) + maxSurge(d))) changed = true;
  return changed;
}

export function setReplicasAnnotations(rs: KubeObject, desired: number, max: number): boolean {
  const ann: Record<string, string> = (rs.metadata.annotations ??= {});
  let changed = false;
  if (ann[DESIRED_REPLICAS] !== String(desired)) {
    ann[DESIRED_REPLICAS] = String(desired);
    changed = true;
  }
  if (ann[MAX_REPLICAS] !== String(max)) {
    ann[MAX_REPLICAS] = String(max);
    changed = true;
  }
  return changed;
}

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
