import type { KubeObject } from "../../../api/types";
import { scaledValue } from "../lib/int-or-percent";
import {
  byCreation,
  DESIRED_REPLICAS,
  MAX_REPLICAS,
  NOT_COPIED,
  REVISION,
  REVISION_HISTORY,
} from "./revisions";

export const MAX_INT32 = 2147483647;

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
