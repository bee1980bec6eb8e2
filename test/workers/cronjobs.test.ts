// batch/v1 CronJobs through real workerd and the controller manager: defaulting and upstream's
// validation, `kubectl create cronjob` / `get cronjobs` / `create job --from`, and the CronJob
// controller. Runs are made due without waiting for the clock: status.lastScheduleTime is set
// a few minutes back (as if the controller had last run then), so the most recent missed
// minute is due at once.
import { describe, expect, it } from "vitest";
import { api, freshNamespace, hasKubectl, kubectl, shared, until } from "../helpers/cluster";

const t = shared();
const MERGE = { "content-type": "application/merge-patch+json" };
const MINUTE = 60_000;

function cronJob(name: string, spec: Record<string, unknown> = {}) {
  return {
    apiVersion: "batch/v1",
    kind: "CronJob",
    metadata: { name },
    spec: {
      schedule: "* * * * *",
      jobTemplate: {
        metadata: { labels: { team: "a" }, annotations: { note: "from-template" } },
        spec: {
          template: {
            spec: {
              restartPolicy: "Never",
              containers: [{ name: "c", image: "busybox", command: ["true"] }],
            },
          },
        },
      },
      ...spec,
    },
  };
}

const path = (ns: string, name = "") => `/apis/batch/v1/namespaces/${ns}/cronjobs${name ? `/${name}` : ""}`;
const jobsPath = (ns: string, name = "") => `/apis/batch/v1/namespaces/${ns}/jobs${name ? `/${name}` : ""}`;

async function create(ns: string, body: any): Promise<any> {
  const r = await api(t, "POST", path(ns), body);
  expect(r.status, r.text).toBe(201);
  return r.json;
}

/** Makes the CronJob's last run `minutesAgo` minutes back: the latest minute since is due now. */
async function lastRunAgo(ns: string, name: string, minutesAgo: number): Promise<void> {
  const at = new Date(Math.floor(Date.now() / MINUTE) * MINUTE - minutesAgo * MINUTE)
    .toISOString()
    .replace(".000", "");
  const r = await api(t, "PATCH", `${path(ns, name)}/status`, { status: { lastScheduleTime: at } }, MERGE);
  expect(r.status, r.text).toBe(200);
}

async function jobsOf(ns: string): Promise<any[]> {
  const r = await api(t, "GET", jobsPath(ns));
  return (r.json.items as any[]).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

async function events(ns: string, name: string): Promise<string[]> {
  const r = await api(
    t,
    "GET",
    `/api/v1/namespaces/${ns}/events?fieldSelector=involvedObject.name%3D${name}`,
  );
  return (r.json.items as any[]).map((e) => `${e.reason}: ${e.message}`);
}

/** Plays the kubelet for a Job's pod, so the Job controller completes (or fails) the Job. */
async function finishJob(ns: string, job: any, phase: "Succeeded" | "Failed"): Promise<void> {
  const sel = encodeURIComponent(`batch.kubernetes.io/controller-uid=${job.metadata.uid}`);
  const pod = await until("the Job's pod", async () => {
    const r = await api(t, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=${sel}`);
    return r.json.items[0];
  });
  const r = await api(
    t,
    "PATCH",
    `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}/status`,
    { status: { phase } },
    MERGE,
  );
  expect(r.status, r.text).toBe(200);
}

describe("batch/v1 cronjobs", () => {
  it("defaults a CronJob; its job template is defaulted as a pod template only", async () => {
    const ns = await freshNamespace(t);
    const cj = await create(ns, cronJob("d"));
    expect(cj.spec).toMatchObject({
      concurrencyPolicy: "Allow",
      suspend: false,
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 1,
    });
    expect(cj.spec.jobTemplate.spec.parallelism).toBeUndefined();
    expect(cj.spec.jobTemplate.spec.template.spec).toMatchObject({
      dnsPolicy: "ClusterFirst",
      schedulerName: "default-scheduler",
    });
    expect(cj.status).toEqual({});
  });

  it("refuses what upstream refuses", async () => {
    const ns = await freshNamespace(t);
    const bad = async (body: any) => {
      const r = await api(t, "POST", path(ns), body);
      expect(r.status, r.text).toBe(422);
      return (r.json.details.causes as any[]).map((c) => `${c.field}: ${c.message}`);
    };
    expect(await bad(cronJob("a", { schedule: "* * *" }))).toEqual([
      'spec.schedule: Invalid value: "* * *": expected exactly 5 fields, found 3: [* * *]',
    ]);
    expect(await bad(cronJob("b", { schedule: "TZ=UTC 0 * * * *" }))).toEqual([
      'spec.schedule: Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead',
    ]);
    expect(await bad(cronJob("c", { timeZone: "Mars/Olympus" }))).toEqual([
      'spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus',
    ]);
    expect(await bad(cronJob("e", { concurrencyPolicy: "Sometimes", startingDeadlineSeconds: -1 }))).toEqual([
      'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"',
      "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
    ]);
    expect(await bad(cronJob("x".repeat(53)))).toEqual([
      `metadata.name: Invalid value: "${"x".repeat(53)}": must be no more than 52 characters`,
    ]);
    const withSelector = cronJob("f");
    (withSelector.spec.jobTemplate.spec as any).selector = { matchLabels: { a: "b" } };
    expect((await bad(withSelector)).some((c) => c.endsWith("`selector` will be auto-generated"))).toBe(true);
    const always = cronJob("g");
    (always.spec.jobTemplate.spec.template.spec as any).restartPolicy = "Always";
    expect(await bad(always)).toEqual([
      'spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"',
    ]);
    expect(
      (await api(t, "POST", path(ns), cronJob("ny", { timeZone: "America/New_York", schedule: "@daily" })))
        .status,
    ).toBe(201);
  });

  it("starts the Job of the most recent missed run, and follows it to completion", async () => {
    const ns = await freshNamespace(t);
    const cj = await create(ns, cronJob("every", { timeZone: "America/New_York" }));
    await lastRunAgo(ns, "every", 3);
    const [job] = await until("a Job", async () => {
      const jobs = await jobsOf(ns);
      return jobs.length ? jobs : undefined;
    });
    const minute = Number(job.metadata.name.replace("every-", ""));
    // the most recent minute due: not one of the three missed before it
    expect(Math.abs(minute * MINUTE - Math.floor(Date.now() / MINUTE) * MINUTE)).toBeLessThanOrEqual(MINUTE);
    expect(job.metadata.labels).toEqual({ team: "a" });
    const stamp = job.metadata.annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"];
    expect(job.metadata.annotations.note).toBe("from-template");
    // in the CronJob's zone, with its offset
    expect(stamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:00-0[45]:00$/);
    expect(Date.parse(stamp)).toBe(minute * MINUTE);
    expect(job.metadata.ownerReferences).toEqual([
      {
        apiVersion: "batch/v1",
        kind: "CronJob",
        name: "every",
        uid: cj.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    const running = await until("status.active", async () => {
      const r = (await api(t, "GET", path(ns, "every"))).json;
      return r.status?.active?.length === 1 ? r : undefined;
    });
    expect(running.status.active[0]).toMatchObject({
      kind: "Job",
      name: job.metadata.name,
      uid: job.metadata.uid,
      apiVersion: "batch/v1",
      namespace: ns,
    });
    expect(Date.parse(running.status.lastScheduleTime)).toBe(minute * MINUTE);
    await finishJob(ns, job, "Succeeded");
    const done = await until("the Job seen completed", async () => {
      const r = (await api(t, "GET", path(ns, "every"))).json;
      return !r.status?.active && r.status?.lastSuccessfulTime ? r : undefined;
    });
    expect(Date.parse(done.status.lastSuccessfulTime)).toBeGreaterThan(0);
    const said = await events(ns, "every");
    expect(said).toContain(`SuccessfulCreate: Created job ${job.metadata.name}`);
    expect(said).toContain(`SawCompletedJob: Saw completed job: ${job.metadata.name}, condition: Complete`);
    // the next run is not due yet: still one Job
    expect(await jobsOf(ns)).toHaveLength(1);
  });

  it("Forbid skips a run while one is active; Replace deletes it and starts anew", async () => {
    const ns = await freshNamespace(t);
    // a yearly schedule last run two years ago: the run due is this year's, on 1 January
    await create(ns, cronJob("forbid", { concurrencyPolicy: "Forbid", schedule: "0 0 1 1 *" }));
    await lastRunAgo(ns, "forbid", 2 * 366 * 24 * 60);
    const first = await until("the first Job", async () => (await jobsOf(ns))[0]);
    const newYear = Date.UTC(new Date().getUTCFullYear(), 0, 1);
    expect(first.metadata.name).toBe(`forbid-${newYear / MINUTE}`);
    await until("status.active", async () => (await api(t, "GET", path(ns, "forbid"))).json.status?.active);
    // every minute from then: a run is due now, but one is active; so many missed runs are said
    const everyMinute = { spec: { schedule: "* * * * *" } };
    expect((await api(t, "PATCH", path(ns, "forbid"), everyMinute, MERGE)).status).toBe(200);
    await until("JobAlreadyActive", async () =>
      (await events(ns, "forbid")).includes(
        "JobAlreadyActive: Not starting job because prior execution is running and concurrency policy is Forbid",
      ),
    );
    expect(await events(ns, "forbid")).toContain(
      "TooManyMissedTimes: too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew",
    );
    expect((await jobsOf(ns)).map((j) => j.metadata.name)).toEqual([first.metadata.name]);
    // Replace: the running Job is deleted and the one due now started
    expect(
      (await api(t, "PATCH", path(ns, "forbid"), { spec: { concurrencyPolicy: "Replace" } }, MERGE)).status,
    ).toBe(200);
    const replaced = await until("a new Job", async () => {
      const jobs = await jobsOf(ns);
      return jobs.length === 1 && jobs[0].metadata.uid !== first.metadata.uid ? jobs[0] : undefined;
    });
    expect(Number(replaced.metadata.name.slice("forbid-".length)) * MINUTE).toBeGreaterThan(
      Date.now() - 2 * MINUTE,
    );
    expect(await events(ns, "forbid")).toContain(`SuccessfulDelete: Deleted job ${first.metadata.name}`);
  });

  it("keeps finished Jobs to the history limits, and starts nothing while suspended", async () => {
    const ns = await freshNamespace(t);
    await create(ns, cronJob("hist", { failedJobsHistoryLimit: 0 }));
    await lastRunAgo(ns, "hist", 2);
    const job = await until("a Job", async () => (await jobsOf(ns))[0]);
    const failing = await api(t, "GET", jobsPath(ns, job.metadata.name));
    // one failure ends it (backoffLimit 0) and no failed Job is kept
    expect(
      (await api(t, "PATCH", jobsPath(ns, job.metadata.name), { spec: { backoffLimit: 0 } }, MERGE)).status,
    ).toBe(200);
    await finishJob(ns, failing.json, "Failed");
    await until("the failed Job deleted", async () => (await jobsOf(ns)).length === 0, 20_000);
    expect(await events(ns, "hist")).toContain(`SuccessfulDelete: Deleted job ${job.metadata.name}`);
    expect((await api(t, "PATCH", path(ns, "hist"), { spec: { suspend: true } }, MERGE)).status).toBe(200);
    await lastRunAgo(ns, "hist", 4);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await jobsOf(ns)).toHaveLength(0);
  });

  it.skipIf(!hasKubectl)(
    "kubectl create cronjob, get cronjobs, create job --from and set image",
    async () => {
      const ns = await freshNamespace(t);
      const made = await kubectl(t, [
        "-n",
        ns,
        "create",
        "cronjob",
        "tick",
        "--image=busybox",
        "--schedule=*/5 * * * *",
        "--",
        "date",
      ]);
      expect(made.stdout, made.stderr).toBe("cronjob.batch/tick created\n");
      const listed = await kubectl(t, ["-n", ns, "get", "cronjobs"]);
      expect(listed.stdout).toMatch(
        /^NAME\s+SCHEDULE\s+TIMEZONE\s+SUSPEND\s+ACTIVE\s+LAST SCHEDULE\s+AGE\ntick\s+\*\/5 \* \* \* \*\s+<none>\s+False\s+0\s+<none>\s+\d+s\n$/,
      );
      const wide = await kubectl(t, ["-n", ns, "get", "cj", "tick", "-o", "wide"]);
      expect(wide.stdout).toMatch(/\stick\s+busybox\s+<none>\n$/);
      const manual = await kubectl(t, ["-n", ns, "create", "job", "by-hand", "--from=cronjob/tick"]);
      expect(manual.stdout, manual.stderr).toBe("job.batch/by-hand created\n");
      const job = (await api(t, "GET", jobsPath(ns, "by-hand"))).json;
      expect(job.metadata.annotations["cronjob.kubernetes.io/instantiate"]).toBe("manual");
      expect(job.metadata.ownerReferences[0]).toMatchObject({
        kind: "CronJob",
        name: "tick",
        controller: true,
      });
      // kubectl's strategic merge patches reach into the job template (containers merged by name)
      const set = await kubectl(t, ["-n", ns, "set", "image", "cronjob/tick", "tick=busybox:2"]);
      expect(set.stdout, set.stderr).toBe("cronjob.batch/tick image updated\n");
      const cj = (await api(t, "GET", `/apis/batch/v1/namespaces/${ns}/cronjobs/tick`)).json;
      expect(cj.spec.jobTemplate.spec.template.spec.containers.map((c: any) => c.image)).toEqual([
        "busybox:2",
      ]);
    },
  );
});
