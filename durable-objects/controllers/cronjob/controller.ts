// The CronJob controller (upstream pkg/controller/cronjob, v2): at each scheduled time a Job
// from the template, named <cronjob>-<minutes since the epoch of the scheduled time>; the
// concurrency policy (Allow, Forbid: skip while one runs, Replace: delete the running ones),
// startingDeadlineSeconds, suspend, the time zone, status.active/lastScheduleTime/
// lastSuccessfulTime, and the finished Jobs kept to the history limits.

import { missedRuns, nextRun, parseSchedule, zonedRfc3339, zoneFormatter } from "../../../api/cron";
import { lookupGVR } from "../../../api/registry";
import { rfc3339, timeOf } from "../../../api/time";
import type { KubeObject } from "../../../api/types";
import { finishedCondition } from "../job/controller";
import { errorMessage, isAlreadyExists, isNotFound } from "../lib/api-errors";
import { jsonEqual } from "../lib/json-equal";
import { keyOf, splitKey } from "../lib/objects";
import { controllerRefOf, newControllerRef } from "../lib/owners";
import type { Controller, ControllerContext } from "../runtime/controller";

const CRONJOB = lookupGVR("batch", "v1", "cronjobs")!;
const JOB = lookupGVR("batch", "v1", "jobs")!;
const CRONJOBS = "batch/cronjobs";
const JOBS = "batch/jobs";
export const SCHEDULED_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp";
/** Past this many missed runs the controller warns (and still starts the most recent). */
const MISSED_CAP = 100;

const MINUTE = 60_000;

interface JobRef {
  kind: string;
  namespace: string;
  name: string;
  uid: string;
  apiVersion: string;
  resourceVersion?: string;
}

const finishedAs = (job: KubeObject) =>
  finishedCondition(job.status?.conditions)?.type as "Complete" | "Failed" | undefined;

/** The Job for the run at `at`; its scheduled-timestamp annotation is in the CronJob's zone. */
function jobFromTemplate(cj: KubeObject, at: number, zone: Intl.DateTimeFormat | undefined): KubeObject {
  const tpl = structuredClone(cj.spec?.jobTemplate ?? {});
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: `${cj.metadata.name}-${Math.floor(at / MINUTE)}`,
      namespace: cj.metadata.namespace,
      ...(tpl.metadata?.labels ? { labels: tpl.metadata.labels } : {}),
      annotations: {
        ...(tpl.metadata?.annotations ?? {}),
        [SCHEDULED_ANNOTATION]: zonedRfc3339(at, zone),
      },
      ownerReferences: [newControllerRef(cj, "batch/v1", "CronJob")],
    },
    spec: tpl.spec ?? {},
  };
}

const refOf = (job: KubeObject): JobRef => ({
  kind: "Job",
  namespace: job.metadata.namespace!,
  name: job.metadata.name!,
  uid: job.metadata.uid!,
  apiVersion: "batch/v1",
  resourceVersion: job.metadata.resourceVersion,
});

async function deleteJob(ctx: ControllerContext, cj: KubeObject, job: { name: string; uid: string }) {
  try {
    await ctx.api.remove(JOB, cj.metadata.namespace, job.name, {
      propagationPolicy: "Background",
      preconditions: { uid: job.uid },
    });
    void ctx.recorder.event(cj, "Normal", "SuccessfulDelete", `Deleted job ${job.name}`);
  } catch (e) {
    if (isNotFound(e)) return;
    void ctx.recorder.event(cj, "Warning", "FailedDelete", `Deleted job: ${errorMessage(e)}`);
    throw e;
  }
}

/** Finished Jobs past the history limits go, oldest start first. */
async function cleanupHistory(ctx: ControllerContext, cj: KubeObject, jobs: KubeObject[]): Promise<void> {
  for (const [kind, limit] of [
    ["Complete", cj.spec?.successfulJobsHistoryLimit],
    ["Failed", cj.spec?.failedJobsHistoryLimit],
  ] as const) {
    if (typeof limit !== "number") continue;
    const done = jobs.filter((j) => finishedAs(j) === kind && !j.metadata.deletionTimestamp);
    if (done.length <= limit) continue;
    done.sort((a, b) => {
      const sa = timeOf(a.status?.startTime);
      const sb = timeOf(b.status?.startTime);
      if (sa !== sb) return sa === undefined ? 1 : sb === undefined ? -1 : sa - sb;
      return a.metadata.name!.localeCompare(b.metadata.name!);
    });
    for (const j of done.slice(0, done.length - limit))
      await deleteJob(ctx, cj, { name: j.metadata.name!, uid: j.metadata.uid! });
  }
}

export async function syncCronJob(key: string, ctx: ControllerContext): Promise<void> {
  const cj = ctx.informers.get(CRONJOBS, key);
  if (!cj) return;
  const { namespace } = splitKey(key);
  const now = ctx.now();
  const jobs = ctx.informers.list(JOBS, namespace).filter((j) => {
    const ref = controllerRefOf(j);
    return ref?.kind === "CronJob" && ref.name === cj.metadata.name;
  });
  const status = structuredClone(cj.status ?? {});
  let active: JobRef[] = [...(status.active ?? [])];
  // what became of the Jobs it started
  for (const job of jobs) {
    const done = finishedAs(job);
    if (done && active.some((r) => r.uid === job.metadata.uid)) {
      active = active.filter((r) => r.uid !== job.metadata.uid);
      void ctx.recorder.event(
        cj,
        "Normal",
        "SawCompletedJob",
        `Saw completed job: ${job.metadata.name}, condition: ${done}`,
      );
    }
    const completed = timeOf(job.status?.completionTime);
    if (
      done === "Complete" &&
      completed !== undefined &&
      completed > (timeOf(status.lastSuccessfulTime) ?? 0)
    )
      status.lastSuccessfulTime = job.status.completionTime;
  }
  for (const ref of active.filter((r) => !jobs.some((j) => j.metadata.uid === r.uid))) {
    active = active.filter((r) => r !== ref);
    void ctx.recorder.event(cj, "Normal", "MissingJob", `Active job went missing: ${ref.name}`);
  }
  await cleanupHistory(ctx, cj, jobs);
  let scheduleError: unknown;
  if (!cj.metadata.deletionTimestamp) {
    try {
      active = await schedule(ctx, cj, key, active, status, now);
    } catch (e) {
      scheduleError = e;
    }
  }
  // what was learnt is written even when starting the Job failed
  const next = { ...status, active };
  if (!active.length) delete next.active;
  if (!jsonEqual(next, cj.status ?? {})) {
    try {
      await ctx.api.update(CRONJOB, { ...cj, status: next }, "status");
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
  if (scheduleError) throw scheduleError;
}

/** Starts the Job of the most recent missed run, if one is due; returns the active Jobs after. */
async function schedule(
  ctx: ControllerContext,
  cj: KubeObject,
  key: string,
  activeIn: JobRef[],
  status: any,
  now: number,
): Promise<JobRef[]> {
  let active = activeIn;
  const spec = cj.spec ?? {};
  let zone: Intl.DateTimeFormat | undefined;
  try {
    zone = zoneFormatter(spec.timeZone);
  } catch (e) {
    void ctx.recorder.event(
      cj,
      "Warning",
      "UnknownTimeZone",
      `invalid timeZone: "${spec.timeZone}": ${errorMessage(e)}`,
    );
    return active;
  }
  if (spec.suspend === true) return active;
  let sched: ReturnType<typeof parseSchedule>;
  try {
    sched = parseSchedule(String(spec.schedule ?? ""));
  } catch (e) {
    void ctx.recorder.event(
      cj,
      "Warning",
      "UnparseableSchedule",
      `unparseable schedule: "${spec.schedule}" : ${errorMessage(e)}`,
    );
    return active;
  }
  let earliest = timeOf(status.lastScheduleTime) ?? timeOf(cj.metadata.creationTimestamp) ?? now;
  const deadline = spec.startingDeadlineSeconds;
  if (typeof deadline === "number") earliest = Math.max(earliest, now - deadline * 1000);
  const { last, count } = missedRuns(sched, earliest, now, zone, MISSED_CAP);
  const upcoming = nextRun(sched, now, zone);
  if (upcoming !== undefined) ctx.enqueue(key, upcoming + 100 - now);
  if (last === undefined) return active;
  if (count > MISSED_CAP)
    void ctx.recorder.event(
      cj,
      "Warning",
      "TooManyMissedTimes",
      "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew",
    );
  if (typeof deadline === "number" && last + deadline * 1000 < now) {
    void ctx.recorder.event(
      cj,
      "Warning",
      "MissSchedule",
      `Missed scheduled time to start a job: ${new Date(last).toUTCString()}`,
    );
    return active;
  }
  const job = jobFromTemplate(cj, last, zone);
  if (active.some((r) => r.name === job.metadata.name) || timeOf(status.lastScheduleTime) === last)
    return active;
  if (spec.concurrencyPolicy === "Forbid" && active.length) {
    void ctx.recorder.event(
      cj,
      "Normal",
      "JobAlreadyActive",
      "Not starting job because prior execution is running and concurrency policy is Forbid",
    );
    return active;
  }
  if (spec.concurrencyPolicy === "Replace") {
    for (const ref of active) await deleteJob(ctx, cj, ref);
    active = [];
  }
  let created: KubeObject;
  try {
    created = await ctx.api.create(JOB, job);
    void ctx.recorder.event(cj, "Normal", "SuccessfulCreate", `Created job ${created.metadata.name}`);
  } catch (e) {
    if (!isAlreadyExists(e)) {
      void ctx.recorder.event(cj, "Warning", "FailedCreate", `Error creating job: ${errorMessage(e)}`);
      throw e;
    }
    const existing = ctx.informers.get(JOBS, `${cj.metadata.namespace}/${job.metadata.name}`);
    if (!existing || controllerRefOf(existing)?.uid !== cj.metadata.uid) return active;
    created = existing;
  }
  if (!active.some((r) => r.uid === created.metadata.uid)) active = [...active, refOf(created)];
  status.lastScheduleTime = rfc3339(last);
  return active;
}

export const cronJobController: Controller = {
  name: "cronjob-controller",
  watches: {
    [CRONJOBS]: (cj) => [keyOf(cj)],
    [JOBS]: (job) => {
      const ref = controllerRefOf(job);
      return ref?.kind === "CronJob" ? [`${job.metadata.namespace}/${ref.name}`] : [];
    },
  },
  resync: (ctx) => ctx.informers.keys(CRONJOBS),
  sync: syncCronJob,
};
