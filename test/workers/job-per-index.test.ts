// An Indexed Job's spec.backoffLimitPerIndex and spec.maxFailedIndexes through real workerd:
// upstream's validation, each index's own failure budget carried from pod to pod in the
// job-index-failure-count annotations, an index failed for good once it is spent (or a FailIndex
// rule matches), status.failedIndexes, and the Job failing with FailedIndexes or
// MaxFailedIndexesExceeded. The test plays the kubelet; a failed container's finishedAt in the
// past stands for an index backoff (10 s for a first failure) that has already run out.
import { describe, expect, it } from "vitest";
import { api, freshNamespace, shared, until } from "../helpers/cluster";
import {
  conditionOf,
  exited,
  finishPod,
  getJob,
  job,
  jobPath,
  podsOf,
  waitJob,
  waitPods,
} from "../helpers/jobs";

const t = shared();
const TRACKING = "batch.kubernetes.io/job-tracking";
const INDEX = "batch.kubernetes.io/job-completion-index";
const FAILURES = "batch.kubernetes.io/job-index-failure-count";
const IGNORED = "batch.kubernetes.io/job-index-ignored-failure-count";

const indexOf = (p: any) => p.metadata.annotations[INDEX];
const byIndex = (pods: any[], i: number) => pods.find((p) => indexOf(p) === String(i));

async function getPod(ns: string, name: string): Promise<any> {
  return (await api(t, "GET", `/api/v1/namespaces/${ns}/pods/${name}`)).json;
}

/** The active pod of index `i` other than `not`, once there is one. */
async function replacementOf(ns: string, j: any, i: number, not: any): Promise<any> {
  return until(`a new pod for index ${i}`, async () => {
    const pods = await podsOf(ns, j);
    return pods.find(
      (p) =>
        indexOf(p) === String(i) && p.metadata.uid !== not.metadata.uid && !p.status?.phase?.match(/ed$/),
    );
  });
}

describe("batch/v1 jobs: backoffLimitPerIndex", () => {
  it("validates the per-index fields as upstream, and lets maxFailedIndexes change", async () => {
    const ns = await freshNamespace(t);
    const bad = async (spec: Record<string, unknown>) => {
      const r = await api(t, "POST", jobPath(ns), job("b", spec));
      expect(r.status, r.text).toBe(422);
      return (r.json.details.causes as any[]).map((c) => `${c.field}: ${c.message}`);
    };
    expect(await bad({ backoffLimitPerIndex: 1, maxFailedIndexes: 1 })).toEqual([
      "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
      "spec.maxFailedIndexes: Invalid value: 1: requires indexed completion mode",
    ]);
    const indexed = { completionMode: "Indexed", completions: 2 };
    expect(await bad({ ...indexed, maxFailedIndexes: 1 })).toEqual([
      "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
    ]);
    expect(await bad({ ...indexed, backoffLimitPerIndex: -1, maxFailedIndexes: 3 })).toEqual([
      "spec.backoffLimitPerIndex: Invalid value: -1: must be greater than or equal to 0",
      "spec.maxFailedIndexes: Invalid value: 3: must be less than or equal to completions",
    ]);
    const r = await api(
      t,
      "POST",
      jobPath(ns),
      job("ok", { ...indexed, backoffLimitPerIndex: 1, maxFailedIndexes: 1, suspend: true }),
    );
    expect(r.status, r.text).toBe(201);
    // with a budget per index, the Job's own backoffLimit is out of the way
    expect(r.json.spec.backoffLimit).toBe(2147483647);
    const patch = (spec: Record<string, unknown>) =>
      api(t, "PATCH", jobPath(ns, "ok"), { spec }, { "content-type": "application/merge-patch+json" });
    const more = await patch({ maxFailedIndexes: 2 });
    expect(more.status, more.text).toBe(200);
    expect(more.json.spec.maxFailedIndexes).toBe(2);
    const fixed = await patch({ backoffLimitPerIndex: 2 });
    expect(fixed.status, fixed.text).toBe(422);
    expect(fixed.json.details.causes[0]).toMatchObject({
      field: "spec.backoffLimitPerIndex",
      message: "Invalid value: 2: field is immutable",
    });
  });

  it("replaces a failed index with its count carried, fails it once spent, and ends with FailedIndexes", async () => {
    const ns = await freshNamespace(t);
    const spec = { completionMode: "Indexed", completions: 3, parallelism: 3, backoffLimitPerIndex: 1 };
    const r = await api(t, "POST", jobPath(ns), job("per", spec));
    expect(r.status, r.text).toBe(201);
    const pods = await waitPods(ns, r.json, 3);
    for (const p of pods) expect(p.metadata.annotations[FAILURES]).toBe("0");
    const running = await waitJob(ns, "per", "failedIndexes listed", (j) => j.status?.failedIndexes === "");
    expect(running.status.failedIndexes).toBe("");

    // index 1 fails once: within its budget, so it runs again, the failure counted on the new pod
    const first = byIndex(pods, 1);
    await finishPod(ns, first, "Failed", exited(1, 60));
    const second = await replacementOf(ns, r.json, 1, first);
    expect(second.metadata.annotations[FAILURES]).toBe("1");
    expect(second.metadata.annotations[IGNORED]).toBeUndefined();
    // once the replacement exists the failed pod is counted and let go
    await until("the first failure counted", async () => (await getJob(ns, "per")).status.failed === 1);
    expect((await getPod(ns, first.metadata.name)).metadata.finalizers ?? []).not.toContain(TRACKING);

    // it fails again: its budget of 1 is spent, so index 1 is failed for good
    await finishPod(ns, second, "Failed", exited(1, 60));
    const failedIndex = await waitJob(
      ns,
      "per",
      "index 1 failed",
      (j) => j.status?.failedIndexes === "1" && j.status.failed === 2,
    );
    expect(conditionOf(failedIndex, "Failed")).toBeUndefined();
    await new Promise((res) => setTimeout(res, 1500));
    expect((await podsOf(ns, r.json)).filter((p) => indexOf(p) === "1")).toHaveLength(2);

    // the other indexes succeed: every index is done, one failed, so the Job fails
    await finishPod(ns, byIndex(pods, 0), "Succeeded");
    await finishPod(ns, byIndex(pods, 2), "Succeeded");
    const failed = await waitJob(ns, "per", "Failed", (j) => conditionOf(j, "Failed")?.status === "True");
    expect(conditionOf(failed, "Failed")).toMatchObject({
      reason: "FailedIndexes",
      message: "Job has failed indexes",
    });
    expect(failed.status).toMatchObject({
      completedIndexes: "0,2",
      failedIndexes: "1",
      succeeded: 2,
      failed: 2,
    });
  });

  it("waits an index's own backoff from when its pod finished, holding the failed pod meanwhile", async () => {
    const ns = await freshNamespace(t);
    const spec = { completionMode: "Indexed", completions: 2, parallelism: 2, backoffLimitPerIndex: 2 };
    const r = await api(t, "POST", jobPath(ns), job("wait", spec));
    const pods = await waitPods(ns, r.json, 2);
    await finishPod(ns, byIndex(pods, 0), "Failed", exited(1, 0));
    await new Promise((res) => setTimeout(res, 2000));
    const now = await podsOf(ns, r.json);
    expect(now.filter((p) => indexOf(p) === "0")).toHaveLength(1);
    // the failed pod keeps its finalizer: its replacement will take its failure count from it
    expect(byIndex(now, 0).metadata.finalizers).toContain(TRACKING);
    expect((await getJob(ns, "wait")).status.failed).toBeUndefined();
  });

  it("a FailIndex rule fails the index at once; past maxFailedIndexes the Job fails; Ignore is counted apart", async () => {
    const ns = await freshNamespace(t);
    const spec = {
      completionMode: "Indexed",
      completions: 2,
      parallelism: 2,
      backoffLimitPerIndex: 3,
      maxFailedIndexes: 0,
      podFailurePolicy: {
        rules: [
          { action: "Ignore", onExitCodes: { operator: "In", values: [7] } },
          { action: "FailIndex", onExitCodes: { operator: "In", values: [42] } },
        ],
      },
    };
    const r = await api(t, "POST", jobPath(ns), job("fi", spec));
    expect(r.status, r.text).toBe(201);
    const pods = await waitPods(ns, r.json, 2);
    // an ignored failure runs the index again, counted as ignored, not against the budget
    await finishPod(ns, byIndex(pods, 1), "Failed", exited(7, 60));
    const again = await replacementOf(ns, r.json, 1, byIndex(pods, 1));
    expect(again.metadata.annotations).toMatchObject({ [FAILURES]: "0", [IGNORED]: "1" });
    // exit code 42 fails index 0 for good, one more than maxFailedIndexes allows
    await finishPod(ns, byIndex(pods, 0), "Failed", exited(42, 0));
    const target = await waitJob(
      ns,
      "fi",
      "FailureTarget",
      (j) => conditionOf(j, "FailureTarget")?.status === "True",
    );
    expect(conditionOf(target, "FailureTarget")).toMatchObject({
      reason: "MaxFailedIndexesExceeded",
      message: "Job has exceeded the specified maximal number of failed indexes",
    });
    expect(target.status.failedIndexes).toBe("0");
    // index 1's pod is stopped; the Job is Failed once it has (the test plays its node)
    const going = await until("index 1's pod deleted", async () => {
      const p = await getPod(ns, again.metadata.name);
      return p.metadata?.deletionTimestamp && p;
    });
    await finishPod(ns, going, "Failed", exited(143, 0));
    const failed = await waitJob(ns, "fi", "Failed", (j) => conditionOf(j, "Failed")?.status === "True");
    expect(conditionOf(failed, "Failed")).toMatchObject({ reason: "MaxFailedIndexesExceeded" });
  });
});
