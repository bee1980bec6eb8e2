// The Job controller (upstream pkg/controller/job): runs pods from the template until
// spec.completions of them succeed (or, with no completions, until one does and none is left
// running; an Indexed Job runs one per index, indexes.ts), at most spec.parallelism at a
// time, replacing failed ones after a growing delay; fails the Job past spec.backoffLimit or
// spec.activeDeadlineSeconds; deletes the pods of a suspended Job. Each pod carries the
// job-tracking finalizer until it is counted: its uid goes into status.uncountedTerminatedPods
// first, then the finalizer comes off, then it moves into the succeeded/failed counters, so no
// finished pod is counted twice or lost.
// Finished Jobs with spec.ttlSecondsAfterFinished are deleted once that has passed.

import { isActivePod, isPodReady, isTerminal } from "../../../api/pod-state";
import { lookupGVR } from "../../../api/registry";
import { JOB_CONTROLLER_NAME, JOB_TRACKING_FINALIZER } from "../../../api/strategies/jobs";
import { rfc3339, timeOf } from "../../../api/time";
import type { KubeObject } from "../../../api/types";
import { isGone, isNotFound } from "../lib/api-errors";
import { claim, ownerKeys } from "../lib/claim";
import { type Condition, getCondition, setCondition } from "../lib/conditions";
import { jsonEqual } from "../lib/json-equal";
import { keyOf, splitKey } from "../lib/objects";
import { createPods, deletePods } from "../lib/pod-control";
import { podFromTemplate } from "../replicaset/status";
import type { Controller, ControllerContext } from "../runtime/controller";
import { matchPodFailurePolicy } from "./failure-policy";
import {
  formatIndexes,
  indexOf,
  indexPod,
  isIndexed,
  matchSuccessPolicy,
  misplacedPods,
  parseIndexes,
  pendingIndexes,
} from "./indexes";
import {
  failedIndexesEnd,
  hasBackoffLimitPerIndex,
  indexBackoffRemaining,
  type PerIndex,
  perIndexState,
  replacementCounts,
} from "./per-index";
import { isOrphanTracked, ORPHAN_POD, releaseOrphans, releasePod, syncOrphanPod, tracked } from "./tracking";

const JOB = lookupGVR("batch", "v1", "jobs")!;
const POD = lookupGVR("", "v1", "pods")!;
const JOBS = "batch/jobs";
const jobKeys = ownerKeys("Job", JOBS);

/** Replacement pods of a failing Job wait 10 s, doubling per failure since the last success, up to 10 min. */
export const POD_FAILURE_BACKOFF_MS = 10_000;
export const MAX_POD_FAILURE_BACKOFF_MS = 600_000;

export const MESSAGES = {
  backoffLimit: { reason: "BackoffLimitExceeded", message: "Job has reached the specified backoff limit" },
  deadline: { reason: "DeadlineExceeded", message: "Job was active longer than specified deadline" },
  completions: { reason: "CompletionsReached", message: "Reached expected number of succeeded pods" },
  suspended: { reason: "JobSuspended", message: "Job suspended" },
  resumed: { reason: "JobResumed", message: "Job resumed" },
};

/**
 * Failures since the last success, per Job key (for the Job of that uid): the replacement
 * delay (upstream's backoff store). Dropped when the Job finishes or goes.
 */
const backoffs = new Map<string, { uid: string; failures: number; last: number }>();

/** A Job's terminal condition (Complete or Failed, True) in its conditions, if it has ended. */
export const finishedCondition = (conditions: Condition[] | undefined): Condition | undefined =>
  conditions?.find((c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True");

const trueCondition = (job: KubeObject, type: string) => {
  const c = getCondition(job.status?.conditions, type);
  return c?.status === "True" ? c : undefined;
};

/** What the Job's pod failure policy says of a failed pod (only pods whose phase is Failed are judged). */
function failurePolicyOf(job: KubeObject, pod: KubeObject) {
  const policy = job.spec?.podFailurePolicy;
  if (!policy || pod.status?.phase !== "Failed") return undefined;
  return matchPodFailurePolicy(policy, pod);
}

/** How a finished (or going) pod counts: upstream's isPodFailed, with deleted pods as failures. */
function outcome(pod: KubeObject, job: KubeObject): "succeeded" | "failed" | undefined {
  if (pod.status?.phase === "Succeeded") return "succeeded";
  if (pod.status?.phase === "Failed") return "failed";
  if (!pod.metadata.deletionTimestamp) return undefined;
  // a pod the Job deleted on suspending is not a failure of the Job
  if (job.spec?.suspend === true) return undefined;
  return job.spec?.podReplacementPolicy === "Failed" ? undefined : "failed";
}

function condition(
  type: string,
  status: "True" | "False",
  r: { reason: string; message: string },
  now: string,
): Condition {
  return { type, status, lastProbeTime: now, lastTransitionTime: now, reason: r.reason, message: r.message };
}

/**
 * Counts the finished pods that still hold the finalizer: first recorded as uncounted (so a
 * crash before the counters move loses nothing), then released, then moved into the counters.
 */
async function trackFinishedPods(
  ctx: ControllerContext,
  job: KubeObject,
  pods: KubeObject[],
  status: any,
  perIndex?: PerIndex,
) {
  const uncounted = {
    succeeded: [...(status.uncountedTerminatedPods?.succeeded ?? [])] as string[],
    failed: [...(status.uncountedTerminatedPods?.failed ?? [])] as string[],
  };
  const finished = !!finishedCondition(job.status?.conditions) || !!job.metadata.deletionTimestamp;
  const completions = job.spec?.completions ?? 0;
  const completed = parseIndexes(status.completedIndexes);
  const completedBefore = completed.size;
  const release: KubeObject[] = [];
  let newFailures = 0;
  for (const pod of pods) {
    if (!tracked(pod)) continue;
    const uid = pod.metadata.uid!;
    // a failed pod whose index is still to run again keeps its finalizer (and its failure
    // counts) until its replacement exists
    if (perIndex?.held.has(uid) && !finished) continue;
    if (uncounted.succeeded.includes(uid) || uncounted.failed.includes(uid)) {
      release.push(pod);
      continue;
    }
    const how = outcome(pod, job) ?? (finished && pod.metadata.deletionTimestamp ? "failed" : undefined);
    // spec.podFailurePolicy decides what a failed pod's failure does
    const policy = how === "failed" ? failurePolicyOf(job, pod) : undefined;
    if (policy?.action === "Ignore") {
      // not counted against backoffLimit: its finalizer just comes off (its replacement still waits)
      newFailures++;
      release.push(pod);
      continue;
    }
    const failing = getCondition(status.conditions, "FailureTarget")?.status === "True";
    if (policy?.action === "FailJob" && !finishedCondition(status.conditions) && !failing) {
      // recorded with the pod's uncounted failure, so the reason survives a crash before counting
      const failure = { reason: "PodFailurePolicy", message: policy.message };
      status.conditions = setCondition(
        status.conditions,
        condition("FailureTarget", "True", failure, rfc3339(ctx.now())),
      );
      void ctx.recorder.event(job, "Warning", failure.reason, failure.message);
    }
    if (how) {
      uncounted[how].push(uid);
      const index = isIndexed(job) && how === "succeeded" ? indexOf(pod, completions) : undefined;
      if (index !== undefined) completed.add(index);
      if (how === "failed") newFailures++;
      release.push(pod);
    } else if (pod.metadata.deletionTimestamp && job.spec?.suspend === true) release.push(pod);
  }
  const before = status.uncountedTerminatedPods ?? {};
  if (
    !jsonEqual(status.conditions ?? [], job.status?.conditions ?? []) ||
    uncounted.succeeded.length !== (before.succeeded ?? []).length ||
    uncounted.failed.length !== (before.failed ?? []).length ||
    completed.size !== completedBefore ||
    (perIndex && formatIndexes(perIndex.failed) !== job.status?.failedIndexes)
  ) {
    status.uncountedTerminatedPods = uncounted;
    if (completed.size) status.completedIndexes = formatIndexes(completed);
    if (perIndex) status.failedIndexes = formatIndexes(perIndex.failed);
    const written = await ctx.api.update(JOB, { ...job, status }, "status");
    status = structuredClone(written.status ?? status);
    job = written;
  }
  const released = new Set<string>();
  for (const pod of release) if (await releasePod(ctx, pod)) released.add(pod.metadata.uid!);
  // pods gone or no longer holding the finalizer are counted now
  const gone = (uid: string) => released.has(uid) || !pods.some((p) => p.metadata.uid === uid && tracked(p));
  const moved = { succeeded: uncounted.succeeded.filter(gone), failed: uncounted.failed.filter(gone) };
  // an Indexed Job counts the indexes that succeeded, once each
  status.succeeded = isIndexed(job) ? completed.size : (status.succeeded ?? 0) + moved.succeeded.length;
  status.failed = (status.failed ?? 0) + moved.failed.length;
  status.uncountedTerminatedPods = {
    ...(uncounted.succeeded.length > moved.succeeded.length
      ? { succeeded: uncounted.succeeded.filter((u) => !gone(u)) }
      : {}),
    ...(uncounted.failed.length > moved.failed.length
      ? { failed: uncounted.failed.filter((u) => !gone(u)) }
      : {}),
  };
  return { job, status, newFailures, newSuccesses: moved.succeeded.length };
}

/** How long a replacement pod must still wait after the Job's recent failures. */
function backoffRemaining(key: string, job: KubeObject, now: number): number {
  const b = backoffs.get(key);
  if (!b || b.uid !== job.metadata.uid || b.failures === 0) return 0;
  const delay = Math.min(POD_FAILURE_BACKOFF_MS * 2 ** (b.failures - 1), MAX_POD_FAILURE_BACKOFF_MS);
  return Math.max(0, b.last + delay - now);
}

function jobPod(job: KubeObject, index?: number): KubeObject {
  const pod = podFromTemplate(job, "batch/v1", "Job");
  pod.metadata.finalizers = [...(pod.metadata.finalizers ?? []), JOB_TRACKING_FINALIZER];
  return index === undefined ? pod : indexPod(job, pod, index);
}

/**
 * Starts up to `count` more pods: an Indexed Job's for its pending indexes, each (with
 * backoffLimitPerIndex) once its own backoff has passed and carrying its failure counts; others
 * once the Job's backoff has passed. Returns how many were made.
 */
async function startMissing(
  ctx: ControllerContext,
  key: string,
  job: KubeObject,
  count: number,
  at: { active: KubeObject[]; completed: Set<number>; perIndex?: PerIndex },
): Promise<number> {
  const now = ctx.now();
  const { perIndex } = at;
  if (!perIndex) {
    const wait = backoffRemaining(key, job, now);
    if (wait > 0) {
      ctx.enqueue(key, wait);
      return 0;
    }
  }
  if (!isIndexed(job)) return createPods(ctx, job, count, () => jobPod(job));
  let pending = pendingIndexes(at.active, at.completed, job.spec.completions, perIndex?.failed);
  if (perIndex) {
    const waits = pending.map((i) => indexBackoffRemaining(perIndex.awaiting.get(i), now));
    const wait = Math.min(Infinity, ...waits.filter((w) => w > 0));
    if (wait !== Infinity) ctx.enqueue(key, wait);
    pending = pending.filter((_, n) => waits[n] === 0);
  }
  const make = () => {
    const index = pending.shift()!;
    const pod = jobPod(job, index);
    if (perIndex)
      Object.assign(pod.metadata.annotations!, replacementCounts(job, perIndex.awaiting.get(index)));
    return pod;
  };
  const n = Math.min(count, pending.length);
  return n > 0 ? createPods(ctx, job, n, make) : 0;
}

/** Restarts of the containers of active pods count toward the backoff limit with restartPolicy OnFailure. */
function restartsExceeded(job: KubeObject, active: KubeObject[]): boolean {
  if (job.spec?.template?.spec?.restartPolicy !== "OnFailure") return false;
  const limit = job.spec?.backoffLimit ?? 6;
  let restarts = 0;
  for (const p of active)
    for (const s of [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])])
      restarts += s.restartCount ?? 0;
  return limit === 0 ? restarts > 0 : restarts >= limit;
}

export async function syncJob(key: string, ctx: ControllerContext): Promise<void> {
  try {
    await syncJobOnce(key, ctx);
  } catch (e) {
    if (isNotFound(e) && (!ctx.informers.get(JOBS, key) || isGone(e, "jobs", splitKey(key).name))) return;
    throw e;
  }
}

async function syncJobOnce(key: string, ctx: ControllerContext): Promise<void> {
  if (key.startsWith(ORPHAN_POD)) return syncOrphanPod(ctx, key.slice(ORPHAN_POD.length));
  const cached = ctx.informers.get(JOBS, key);
  if (!cached) {
    backoffs.delete(key);
    return releaseOrphans(ctx, key);
  }
  // a Job another controller runs (spec.managedBy) is left to it
  const managedBy = cached.spec?.managedBy;
  if (managedBy != null && managedBy !== JOB_CONTROLLER_NAME) return;
  const { namespace } = splitKey(key);
  const now = ctx.now();
  const at = rfc3339(now);
  const pods = await claim(ctx, cached, "batch/v1", "Job", POD, ctx.informers.list("/pods", namespace));
  const perIndex = hasBackoffLimitPerIndex(cached)
    ? perIndexState(cached, pods, (p) => outcome(p, cached) === "failed", pods.filter(isActivePod))
    : undefined;
  const tracked0 = await trackFinishedPods(ctx, cached, pods, structuredClone(cached.status ?? {}), perIndex);
  const { job, status } = tracked0;
  const uid = job.metadata.uid!;
  if (tracked0.newSuccesses > 0 || finishedCondition(job.status?.conditions)) backoffs.delete(key);
  if (tracked0.newFailures > 0) {
    const b = backoffs.get(key);
    const failures = (b?.uid === uid ? b.failures : 0) + tracked0.newFailures;
    backoffs.set(key, { uid, failures, last: now });
  }
  // as they are now: counting above may have written some of them
  const current = pods.map((p) => ctx.informers.get("/pods", keyOf(p)) ?? p);
  let active = current.filter(isActivePod);
  // a pod that finished while this sync ran is counted by the next one, before any replacement
  const finishedMeanwhile = current.some(
    (p, i) => isActivePod(pods[i]) && !isActivePod(p) && !p.metadata.deletionTimestamp,
  );
  const terminating = current.filter((p) => p.metadata.deletionTimestamp && !isTerminal(p));
  const indexed = isIndexed(job);
  const completed = parseIndexes(status.completedIndexes);
  const succeeded = indexed
    ? completed.size
    : status.succeeded + (status.uncountedTerminatedPods.succeeded?.length ?? 0);
  const failed = status.failed + (status.uncountedTerminatedPods.failed?.length ?? 0);
  const spec = job.spec ?? {};
  let conditions: Condition[] = status.conditions ?? [];
  let created = 0;
  let manageError: unknown;
  const finished = finishedCondition(job.status?.conditions);
  if (!finished && !job.metadata.deletionTimestamp) {
    let failure = trueCondition(job, "FailureTarget");
    let success = trueCondition(job, "SuccessCriteriaMet");
    if (!failure && !success) {
      const start = timeOf(status.startTime);
      const indexesFailure = perIndex && failedIndexesEnd(spec, perIndex.failed, completed);
      const policyMet =
        indexed && spec.successPolicy
          ? matchSuccessPolicy(spec.successPolicy, completed, spec.completions)
          : undefined;
      if (failed > (spec.backoffLimit ?? 6) || restartsExceeded(job, active)) {
        failure = condition("FailureTarget", "True", MESSAGES.backoffLimit, at);
      } else if (
        typeof spec.activeDeadlineSeconds === "number" &&
        spec.suspend !== true &&
        start !== undefined &&
        now - start >= spec.activeDeadlineSeconds * 1000
      ) {
        failure = condition("FailureTarget", "True", MESSAGES.deadline, at);
      } else if (indexesFailure) {
        failure = condition("FailureTarget", "True", indexesFailure, at);
      } else if (policyMet) {
        // met before all completions: the rest of the pods are stopped
        success = condition(
          "SuccessCriteriaMet",
          "True",
          { reason: "SuccessPolicy", message: policyMet },
          at,
        );
      } else if (
        active.length === 0 &&
        (typeof spec.completions === "number" ? succeeded >= spec.completions : succeeded > 0)
      ) {
        success = condition("SuccessCriteriaMet", "True", MESSAGES.completions, at);
      }
      if (failure) {
        conditions = setCondition(conditions, failure);
        void ctx.recorder.event(job, "Warning", failure.reason!, failure.message!);
      } else if (success) conditions = setCondition(conditions, success);
    }
    const ending = failure ?? success;
    if (ending) {
      try {
        await deletePods(ctx, job, active);
      } catch (e) {
        manageError = e;
      }
      if (active.length === 0 && terminating.length === 0) {
        const type = failure ? "Failed" : "Complete";
        conditions = setCondition(
          conditions,
          condition(type, "True", { reason: ending.reason!, message: ending.message! }, at),
        );
        if (!failure) {
          status.completionTime = at;
          void ctx.recorder.event(job, "Normal", "Completed", "Job completed");
        }
      } else ctx.enqueue(key, 1000);
      active = [];
    } else if (spec.suspend === true) {
      if (!trueCondition(job, "Suspended")) {
        conditions = setCondition(conditions, condition("Suspended", "True", MESSAGES.suspended, at));
        void ctx.recorder.event(job, "Normal", "Suspended", "Job suspended");
      }
      try {
        await deletePods(ctx, job, active);
      } catch (e) {
        manageError = e;
      }
      active = [];
    } else {
      if (trueCondition(job, "Suspended")) {
        conditions = setCondition(conditions, condition("Suspended", "False", MESSAGES.resumed, at));
        void ctx.recorder.event(job, "Normal", "Resumed", "Job resumed");
        status.startTime = at;
      }
      status.startTime ??= at;
      const parallelism = spec.parallelism ?? 1;
      const want =
        typeof spec.completions === "number"
          ? Math.max(0, Math.min(parallelism, spec.completions - succeeded))
          : succeeded > 0
            ? 0
            : parallelism;
      try {
        // an Indexed Job's pods without a valid index of their own (or a duplicate) go
        const misplaced = indexed ? misplacedPods(active, completed, spec.completions) : [];
        if (misplaced.length) {
          await deletePods(ctx, job, misplaced);
          active = active.filter((p) => !misplaced.includes(p));
        }
        if (active.length < want && finishedMeanwhile) ctx.enqueue(key, 0);
        else if (active.length < want)
          created = await startMissing(ctx, key, job, want - active.length, { active, completed, perIndex });
        else if (active.length > want) {
          const extra = [...active]
            .sort(
              (a, b) =>
                (timeOf(b.metadata.creationTimestamp) ?? 0) - (timeOf(a.metadata.creationTimestamp) ?? 0),
            )
            .slice(0, active.length - want);
          await deletePods(ctx, job, extra);
          active = active.filter((p) => !extra.includes(p));
        }
      } catch (e) {
        manageError = e;
      }
      const start = timeOf(status.startTime) ?? now;
      if (typeof spec.activeDeadlineSeconds === "number")
        ctx.enqueue(key, Math.max(0, start + spec.activeDeadlineSeconds * 1000 - now));
    }
  }
  const next = { ...status, conditions };
  if (!conditions.length) delete next.conditions;
  next.active = active.length + created;
  next.ready = active.filter(isPodReady).length;
  next.terminating = terminating.length;
  for (const k of ["active", "succeeded", "failed"]) if (!next[k]) delete next[k];
  if (!jsonEqual(next, job.status ?? {})) {
    try {
      await ctx.api.update(JOB, { ...job, status: next }, "status");
    } catch (e) {
      if (!isNotFound(e)) throw e;
      return;
    }
  }
  await expireFinished(ctx, job, conditions, key);
  if (manageError) throw manageError;
}

/** spec.ttlSecondsAfterFinished: a finished Job is deleted (with its pods) once that has passed. */
async function expireFinished(ctx: ControllerContext, job: KubeObject, conditions: Condition[], key: string) {
  const ttl = job.spec?.ttlSecondsAfterFinished;
  const done = finishedCondition(conditions);
  if (typeof ttl !== "number" || !done || job.metadata.deletionTimestamp) return;
  const due = (timeOf(done.lastTransitionTime) ?? ctx.now()) + ttl * 1000;
  if (due > ctx.now()) {
    ctx.enqueue(key, due - ctx.now());
    return;
  }
  await ctx.api.remove(JOB, job.metadata.namespace, job.metadata.name!, {
    propagationPolicy: "Foreground",
    preconditions: { uid: job.metadata.uid },
  });
}

export const jobController: Controller = {
  name: "job-controller",
  watches: {
    [JOBS]: (job) => [keyOf(job)],
    "/pods": (pod, old, ctx) => {
      const keys = jobKeys(pod, old, ctx);
      return isOrphanTracked(pod, ctx) ? [...keys, `${ORPHAN_POD}${keyOf(pod)}`] : keys;
    },
  },
  resync: (ctx) => ctx.informers.keys(JOBS),
  sync: syncJob,
};
