// Pods that finish on simulated nodes (agent/simulated/pod-finish.ts): a Job's pods complete
// after a short run, so Jobs complete and a CronJob keeps its history limits; any pod can say
// how long its containers run and how they exit, and so can a node for its pods.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT_CODE_ANNOTATION, RUN_SECONDS_ANNOTATION } from "../../agent/simulated/pod-finish";
import { api, freshNamespace, shared, until } from "../helpers/cluster";
import { type SimPool, startSimPool } from "../helpers/sim-pool";

const t = shared();
const MERGE = { "content-type": "application/merge-patch+json" };
const MINUTE = 60_000;
let pool: SimPool;

beforeAll(async () => {
  pool = await startSimPool(t, "simjobs", 2, 0);
});
afterAll(() => pool?.stop());

/** A pod spec placed on the pool (its label, its taint tolerated). */
function podSpec(extra: Record<string, unknown> = {}) {
  return {
    nodeSelector: { [pool.label]: pool.value },
    tolerations: [{ key: "edgeplane.dev/simjobs-test", operator: "Exists", effect: "NoSchedule" }],
    restartPolicy: "Never",
    containers: [{ name: "work", image: "edgeplane/busybox:1", command: ["true"] }],
    ...extra,
  };
}

const jobs = (ns: string, name = "") => `/apis/batch/v1/namespaces/${ns}/jobs${name ? `/${name}` : ""}`;
const cronjobs = (ns: string, name = "") =>
  `/apis/batch/v1/namespaces/${ns}/cronjobs${name ? `/${name}` : ""}`;
const conditionOf = (j: any, type: string) => j.status?.conditions?.find((c: any) => c.type === type)?.status;

async function pod(ns: string, name: string, annotations: Record<string, string>, spec = {}) {
  const r = await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, annotations },
    spec: podSpec(spec),
  });
  expect(r.status, r.text).toBe(201);
}

const getPod = async (ns: string, name: string) =>
  (await api(t, "GET", `/api/v1/namespaces/${ns}/pods/${name}`)).json;

describe("Jobs on simulated nodes", () => {
  it("a Job of 3 completions completes", async () => {
    const ns = await freshNamespace(t, "simjob");
    const r = await api(t, "POST", jobs(ns), {
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "three" },
      spec: { completions: 3, parallelism: 2, template: { spec: podSpec() } },
    });
    expect(r.status, r.text).toBe(201);
    const done = await until(
      "the Job complete",
      async () => {
        const j = (await api(t, "GET", jobs(ns, "three"))).json;
        return conditionOf(j, "Complete") === "True" ? j : undefined;
      },
      45_000,
      250,
    );
    expect(done.status.succeeded).toBe(3);
    expect(done.status.failed ?? 0).toBe(0);
    const pods = (await api(t, "GET", `/api/v1/namespaces/${ns}/pods`)).json.items as any[];
    expect(pods).toHaveLength(3);
    for (const p of pods) {
      expect(p.status.phase).toBe("Succeeded");
      expect(pool.nodes).toContain(p.spec.nodeName);
      expect(p.status.containerStatuses[0].state.terminated).toMatchObject({
        exitCode: 0,
        reason: "Completed",
      });
      expect(p.status.conditions.find((c: any) => c.type === "Ready")).toMatchObject({
        status: "False",
        reason: "PodCompleted",
      });
    }
  }, 60_000);

  it("a CronJob keeps its successful and failed Jobs to their history limits", async () => {
    const ns = await freshNamespace(t, "simcron");
    const r = await api(t, "POST", cronjobs(ns), {
      apiVersion: "batch/v1",
      kind: "CronJob",
      metadata: { name: "hist" },
      spec: {
        schedule: "* * * * *",
        successfulJobsHistoryLimit: 1,
        failedJobsHistoryLimit: 1,
        jobTemplate: { spec: { backoffLimit: 0, template: { spec: podSpec() } } },
      },
    });
    expect(r.status, r.text).toBe(201);
    const listJobs = async () => (await api(t, "GET", jobs(ns))).json.items as any[];
    const seen = new Set<string>();
    // Run k is due at once: the schedule names the minute k minutes back, and the last run is
    // set before it (the controller starts the latest run due since its last one).
    // each run's due minute is earlier than the last one's: a Job is named after its minute, so
    // a minute passing between two runs must not make the next one's the same as the last's
    let lastDue = Number.POSITIVE_INFINITY;
    const run = async (k: number, outcome: "Complete" | "Failed") => {
      const due = Math.min(Math.floor(Date.now() / MINUTE) * MINUTE - k * MINUTE, lastDue - MINUTE);
      lastDue = due;
      const schedule = `${new Date(due).getUTCMinutes()} * * * *`;
      expect((await api(t, "PATCH", cronjobs(ns, "hist"), { spec: { schedule } }, MERGE)).status).toBe(200);
      const last = new Date(due - 10 * MINUTE).toISOString().replace(".000", "");
      const s = await api(
        t,
        "PATCH",
        `${cronjobs(ns, "hist")}/status`,
        { status: { lastScheduleTime: last } },
        MERGE,
      );
      expect(s.status, s.text).toBe(200);
      const job = await until(
        `run ${k}'s Job to end ${outcome}`,
        async () =>
          (await listJobs()).find((j) => !seen.has(j.metadata.name) && conditionOf(j, outcome) === "True"),
        45_000,
        250,
      );
      seen.add(job.metadata.name);
      return job.metadata.name as string;
    };
    await run(1, "Complete");
    const second = await run(2, "Complete");
    const kept = async (want: string[]) =>
      until(
        `the Jobs kept to be ${want}`,
        async () => {
          const names = (await listJobs()).map((j) => j.metadata.name).sort();
          return JSON.stringify(names) === JSON.stringify([...want].sort()) ? names : undefined;
        },
        30_000,
        250,
      );
    await kept([second]);
    // from now on every run's pod exits 1: the Jobs fail (backoffLimit 0)
    const failing = {
      spec: {
        jobTemplate: {
          spec: { template: { metadata: { annotations: { [EXIT_CODE_ANNOTATION]: "1" } } } },
        },
      },
    };
    expect((await api(t, "PATCH", cronjobs(ns, "hist"), failing, MERGE)).status).toBe(200);
    await run(3, "Failed");
    const fourth = await run(4, "Failed");
    await kept([second, fourth]);
  }, 240_000);
});

describe("pods that say how their containers end", () => {
  it("a pod's exit code fails it (restartPolicy Never), or restarts it (Always)", async () => {
    const ns = await freshNamespace(t, "simexit");
    await pod(ns, "fails", { [RUN_SECONDS_ANNOTATION]: "1", [EXIT_CODE_ANNOTATION]: "3" });
    await pod(ns, "restarts", { [RUN_SECONDS_ANNOTATION]: "500ms" }, { restartPolicy: "Always" });
    const failed = await until("the pod failed", async () => {
      const p = await getPod(ns, "fails");
      return p.status?.phase === "Failed" ? p : undefined;
    });
    expect(failed.status.containerStatuses[0].state.terminated).toMatchObject({
      exitCode: 3,
      reason: "Error",
    });
    const restarted = await until("two restarts", async () => {
      const p = await getPod(ns, "restarts");
      return p.status?.containerStatuses?.[0]?.restartCount >= 2 ? p : undefined;
    });
    expect(restarted.status.phase).toBe("Running");
    const c = restarted.status.containerStatuses[0];
    expect(c.lastState.terminated).toMatchObject({ exitCode: 0, reason: "Completed" });
    expect(c.state.running.startedAt).toBeTruthy();
  });

  it("a node's annotations are its pods' defaults; a pod's own win, and 'never' keeps a Job's pod running", async () => {
    const ns = await freshNamespace(t, "simnode");
    for (const node of pool.nodes) {
      const r = await api(
        t,
        "PATCH",
        `/api/v1/nodes/${node}`,
        { metadata: { annotations: { [RUN_SECONDS_ANNOTATION]: "1" } } },
        MERGE,
      );
      expect(r.status).toBe(200);
    }
    try {
      await pod(ns, "by-node", {});
      await pod(ns, "own", { [RUN_SECONDS_ANNOTATION]: "never" });
      await until(
        "the node's default to end the pod",
        async () => (await getPod(ns, "by-node")).status?.phase === "Succeeded",
      );
      const job = await api(t, "POST", jobs(ns), {
        apiVersion: "batch/v1",
        kind: "Job",
        metadata: { name: "forever" },
        spec: {
          template: { metadata: { annotations: { [RUN_SECONDS_ANNOTATION]: "never" } }, spec: podSpec() },
        },
      });
      expect(job.status).toBe(201);
      await new Promise((r) => setTimeout(r, 3000));
      expect((await getPod(ns, "own")).status.phase).toBe("Running");
      const j = (await api(t, "GET", jobs(ns, "forever"))).json;
      expect(j.status.active).toBe(1);
      expect(j.status.succeeded ?? 0).toBe(0);
    } finally {
      for (const node of pool.nodes)
        await api(
          t,
          "PATCH",
          `/api/v1/nodes/${node}`,
          { metadata: { annotations: { [RUN_SECONDS_ANNOTATION]: null } } },
          MERGE,
        );
    }
  });
});
