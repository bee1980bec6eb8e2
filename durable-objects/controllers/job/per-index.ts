// An Indexed Job's spec.backoffLimitPerIndex (upstream's backoff limit per index): each index
// has its own failure budget instead of the Job's shared backoffLimit. A replacement pod carries
// how often its index failed before in the batch.kubernetes.io/job-index-failure-count
// annotation (failures a podFailurePolicy Ignore rule matched go into
// job-index-ignored-failure-count); an index whose failed pod had already used up
// backoffLimitPerIndex failures (or matched a FailIndex rule) is failed for good and listed in
// status.failedIndexes. The Job fails once more than spec.maxFailedIndexes indexes failed, or
// once every index has either succeeded or failed with at least one failed.
//
// To carry the count over, a failed pod keeps its tracking finalizer (so it is neither counted
// nor gone) until its index has a replacement; each index waits its own backoff, 10 s doubling
// per failure of the index up to 10 min, from when the failed pod finished.

import { timeOf } from "../../../api/time";
import type { KubeObject } from "../../../api/types";
import { matchPodFailurePolicy } from "./failure-policy";
import { indexOf, parseIndexes } from "./indexes";
import { tracked } from "./tracking";

export const FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count";
export const IGNORED_FAILURE_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count";

/** The per-index backoff: 10 s for an index's first failure, doubling, at most 10 min. */
const INDEX_BACKOFF_MS = 10_000;
const MAX_INDEX_BACKOFF_MS = 600_000;

export const PER_INDEX_MESSAGES = {
  maxFailedIndexes: {
    reason: "MaxFailedIndexesExceeded",
    message: "Job has exceeded the specified maximal number of failed indexes",
  },
  failedIndexes: { reason: "FailedIndexes", message: "Job has failed indexes" },
};

export const hasBackoffLimitPerIndex = (job: KubeObject) =>
  job.spec?.completionMode === "Indexed" && typeof job.spec?.backoffLimitPerIndex === "number";

function countAnnotation(pod: KubeObject, key: string): number {
  const v = Number(pod.metadata.annotations?.[key] ?? 0);
  return Number.isInteger(v) && v > 0 ? v : 0;
}

/** Whether a failure counts (a podFailurePolicy Ignore rule leaves it out), and the rule's action. */
function judged(job: KubeObject, pod: KubeObject) {
  const policy = job.spec?.podFailurePolicy;
  const action = policy ? matchPodFailurePolicy(policy, pod)?.action : undefined;
  return { counted: action !== "Ignore", action };
}

/** Every failure of the pod's index so far, ignored ones included (what its backoff doubles on). */
const absoluteFailures = (pod: KubeObject) =>
  countAnnotation(pod, FAILURE_COUNT) + countAnnotation(pod, IGNORED_FAILURE_COUNT);

/** A failed pod's index is failed for good: a FailIndex rule, or its counted failures used up. */
function failsIndex(job: KubeObject, pod: KubeObject): boolean {
  const { counted, action } = judged(job, pod);
  if (action === "FailIndex") return true;
  return counted && countAnnotation(pod, FAILURE_COUNT) >= job.spec.backoffLimitPerIndex;
}

/**
 * The failed indexes: those status.failedIndexes already lists, and those of failed pods not yet
 * counted (still holding the tracking finalizer) that fail their index. `failed` says whether a
 * pod counts as failed (the Job controller's own rule).
 */
export function failedIndexesOf(
  job: KubeObject,
  pods: KubeObject[],
  failed: (p: KubeObject) => boolean,
): Set<number> {
  const completions: number = job.spec.completions;
  const out = parseIndexes(job.status?.failedIndexes);
  for (const i of out) if (i >= completions) out.delete(i);
  for (const p of pods) {
    const i = indexOf(p, completions);
    if (i !== undefined && tracked(p) && failed(p) && failsIndex(job, p)) out.add(i);
  }
  return out;
}

/**
 * When a failed pod finished: its containers' latest finish, else when it stopped being Ready,
 * else its deletion time less its grace period, else its creation.
 */
export function finishedAt(pod: KubeObject): number {
  let latest: number | undefined;
  let all = true;
  for (const s of (pod.status?.containerStatuses ?? []) as any[]) {
    const t = timeOf(s?.state?.terminated?.finishedAt);
    if (t === undefined) all = false;
    else if (latest === undefined || t > latest) latest = t;
  }
  if (all && latest !== undefined) return latest;
  const ready = ((pod.status?.conditions ?? []) as any[]).find((c) => c?.type === "Ready");
  const notReady = ready?.status === "False" ? timeOf(ready.lastTransitionTime) : undefined;
  if (notReady !== undefined) return notReady;
  const deleted = timeOf(pod.metadata.deletionTimestamp);
  if (deleted !== undefined) return deleted - Number(pod.metadata.deletionGracePeriodSeconds ?? 0) * 1000;
  return timeOf(pod.metadata.creationTimestamp) ?? 0;
}

/**
 * Per index still to run again, the failed pod its replacement takes the failure counts from
 * (the one with the most failures, the latest finished among equals). Such a pod keeps its
 * finalizer until the replacement exists. Indexes that succeeded, failed for good or have an
 * active pod need none.
 */
export function podsAwaitingReplacement(
  job: KubeObject,
  pods: KubeObject[],
  failed: (p: KubeObject) => boolean,
  done: { succeeded: Set<number>; failed: Set<number>; active: KubeObject[] },
): Map<number, KubeObject> {
  const completions: number = job.spec.completions;
  const active = new Set(done.active.map((p) => indexOf(p, completions)));
  const out = new Map<number, KubeObject>();
  for (const p of pods) {
    if (!failed(p)) continue;
    const i = indexOf(p, completions);
    if (i === undefined || done.succeeded.has(i) || done.failed.has(i) || active.has(i)) continue;
    const last = out.get(i);
    if (!last || (absoluteFailures(last) <= absoluteFailures(p) && finishedAt(p) >= finishedAt(last)))
      out.set(i, p);
  }
  return out;
}

/** The failure-count annotations of the pod that replaces `previous` in its index. */
export function replacementCounts(job: KubeObject, previous: KubeObject | undefined): Record<string, string> {
  if (!previous) return { [FAILURE_COUNT]: "0" };
  let failures = countAnnotation(previous, FAILURE_COUNT);
  let ignored = countAnnotation(previous, IGNORED_FAILURE_COUNT);
  if (judged(job, previous).counted) failures++;
  else ignored++;
  return {
    [FAILURE_COUNT]: String(failures),
    ...(ignored > 0 ? { [IGNORED_FAILURE_COUNT]: String(ignored) } : {}),
  };
}

/** How long the index of `previous` must still wait before its replacement starts. */
export function indexBackoffRemaining(previous: KubeObject | undefined, now: number): number {
  if (!previous) return 0;
  const failures = absoluteFailures(previous) + 1;
  const delay = Math.min(INDEX_BACKOFF_MS * 2 ** (failures - 1), MAX_INDEX_BACKOFF_MS);
  return Math.max(0, finishedAt(previous) + delay - now);
}

/** What one sync of a Job with backoffLimitPerIndex works from, before it counts finished pods. */
export interface PerIndex {
  /** the indexes failed for good */
  failed: Set<number>;
  /** per index still to run again, the failed pod its replacement takes over from */
  awaiting: Map<number, KubeObject>;
  /** uids of those pods: they keep their finalizer for now */
  held: Set<string>;
}

const ending = (job: KubeObject) =>
  ((job.status?.conditions ?? []) as any[]).some(
    (c) => (c?.type === "FailureTarget" || c?.type === "SuccessCriteriaMet") && c.status === "True",
  );

export function perIndexState(
  job: KubeObject,
  pods: KubeObject[],
  failed: (p: KubeObject) => boolean,
  active: KubeObject[],
): PerIndex {
  const completions: number = job.spec.completions;
  const failedIndexes = failedIndexesOf(job, pods, failed);
  const succeeded = parseIndexes(job.status?.completedIndexes);
  for (const p of pods) {
    const i = p.status?.phase === "Succeeded" ? indexOf(p, completions) : undefined;
    if (i !== undefined) succeeded.add(i);
  }
  // a Job that is ending replaces nothing: its pods' finalizers all come off
  const awaiting = ending(job)
    ? new Map<number, KubeObject>()
    : podsAwaitingReplacement(job, pods, failed, { succeeded, failed: failedIndexes, active });
  return {
    failed: failedIndexes,
    awaiting,
    held: new Set([...awaiting.values()].map((p) => p.metadata.uid!)),
  };
}

/** The failure that ends a Job for its failed indexes, if any (checked after backoffLimit and the deadline). */
export function failedIndexesEnd(
  spec: any,
  failed: Set<number>,
  succeeded: Set<number>,
): { reason: string; message: string } | undefined {
  if (typeof spec.maxFailedIndexes === "number" && failed.size > spec.maxFailedIndexes)
    return PER_INDEX_MESSAGES.maxFailedIndexes;
  if (failed.size > 0 && failed.size + succeeded.size >= spec.completions)
    return PER_INDEX_MESSAGES.failedIndexes;
  return undefined;
}
