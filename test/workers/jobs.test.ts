// batch/v1 Jobs through real workerd and the controller manager: defaulting and the generated
// selector, upstream's validation, `kubectl create job` / `get jobs` / `wait`, and the Job
// controller driving pods to completion or failure. The test plays the kubelet: it moves the
// pods' status.phase as a node would.
import { describe, expect, it } from "vitest";
import { api, freshNamespace, hasKubectl, kubectl, shared, until } from "../helpers/cluster";
import { conditionOf, finishPod, getJob, job, jobPath, podsOf, waitJob, waitPods } from "../helpers/jobs";

const t = shared();
const TRACKING = "batch.kubernetes.io/job-tracking";

describe("batch/v1 jobs", () => {
  it("defaults a Job and selects its pods by its own uid", async () => {
    const ns = await freshNamespace(t);
    const r = await api(t, "POST", jobPath(ns), job("d", {}, {}));
    expect(r.status, r.text).toBe(201);
    const j = r.json;
    const uid = j.metadata.uid;
    expect(j.spec).toMatchObject({
      parallelism: 1,
      completions: 1,
      backoffLimit: 6,
      completionMode: "NonIndexed",
      suspend: false,
      podReplacementPolicy: "TerminatingOrFailed",
      manualSelector: false,
      selector: { matchLabels: { "batch.kubernetes.io/controller-uid": uid } },
    });
    expect(j.spec.template.metadata.labels).toEqual({
      "batch.kubernetes.io/controller-uid": uid,
      "batch.kubernetes.io/job-name": "d",
      "controller-uid": uid,
      "job-name": "d",
    });
    // the template is a pod template: defaulted as one
    expect(j.spec.template.spec).toMatchObject({
      dnsPolicy: "ClusterFirst",
      terminationGracePeriodSeconds: 30,
    });
    expect(j.metadata.generation).toBe(1);
    // only parallelism given: completions stays unset (a work queue)
    const q = await api(t, "POST", jobPath(ns), job("q", { parallelism: 3 }));
    expect(q.status, q.text).toBe(201);
    expect(q.json.spec.completions).toBeUndefined();
    // a Job without labels of its own takes its template's
    const labelled = job("l");
    (labelled.spec.template as any).metadata = { labels: { app: "batch" } };
    const l = await api(t, "POST", jobPath(ns), labelled);
    expect(l.status, l.text).toBe(201);
    expect(l.json.metadata.labels).toEqual({ app: "batch" });
  });

  it("refuses what upstream refuses, one cause per field", async () => {
    const ns = await freshNamespace(t);
    const bad = async (body: any) => {
      const r = await api(t, "POST", jobPath(ns), body);
      expect(r.status, r.text).toBe(422);
      return (r.json.details.causes as any[]).map((c) => `${c.field}: ${c.message}`);
    };
    expect(await bad(job("a", {}, { restartPolicy: undefined }))).toEqual([
      'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"',
    ]);
    expect(await bad(job("b", {}, { restartPolicy: "Always" }))).toEqual([
      'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"',
    ]);
    // the pod template's own check names every pod restart policy; the Job's, its two
    expect(await bad(job("s", {}, { restartPolicy: "Sometimes" }))).toContain(
      'spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: "OnFailure", "Never"',
    );
    expect(await bad(job("c", { parallelism: -1, backoffLimit: -2 }))).toEqual([
      "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
      "spec.backoffLimit: Invalid value: -2: must be greater than or equal to 0",
    ]);
    // a selector of one's own needs manualSelector, as upstream
    const picked = job("e", { selector: { matchLabels: { app: "x" } } });
    (picked.spec.template as any).metadata = { labels: { app: "x" } };
    const causes = await bad(picked);
    expect(causes).toHaveLength(1);
    expect(causes[0]).toMatch(
      /^spec\.selector: Invalid value: .*"app":"x".*: `selector` not auto-generated$/,
    );
    const manual = job("f", { manualSelector: true, selector: { matchLabels: { app: "y" } } });
    (manual.spec.template as any).metadata = { labels: { app: "y" } };
    expect((await api(t, "POST", jobPath(ns), manual)).status).toBe(201);
    expect(await bad(job("g", { completionMode: "Sometimes" }))).toEqual([
      'spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"',
    ]);
    expect(await bad(job("i", { completionMode: "Indexed", parallelism: 2 }))).toEqual([
      "spec.completions: Required value: when completion mode is Indexed",
    ]);
    // the template and completions do not change after create
    const ok = await api(t, "POST", jobPath(ns), job("h", { suspend: true }));
    expect(ok.status).toBe(201);
    const patched = await api(
      t,
      "PATCH",
      jobPath(ns, "h"),
      {
        spec: { completions: 3, template: { spec: { containers: [{ name: "work", image: "busybox:2" }] } } },
      },
      { "content-type": "application/strategic-merge-patch+json" },
    );
    expect(patched.status, patched.text).toBe(422);
    expect((patched.json.details.causes as any[]).map((c) => c.field).sort()).toEqual([
      "spec.completions",
      "spec.template",
    ]);
  });

  it("runs a pod to completion: counted once, its finalizer released, the Job Complete", async () => {
    const ns = await freshNamespace(t);
    expect((await api(t, "POST", jobPath(ns), job("once"))).status).toBe(201);
    const j = await getJob(ns, "once");
    const [pod] = await waitPods(ns, j, 1);
    expect(pod.metadata.generateName).toBe("once-");
    expect(pod.metadata.finalizers).toEqual([TRACKING]);
    expect(pod.metadata.ownerReferences).toEqual([
      {
        apiVersion: "batch/v1",
        kind: "Job",
        name: "once",
        uid: j.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(pod.spec.restartPolicy).toBe("Never");
    const running = await waitJob(ns, "once", "active 1", (x) => x.status?.active === 1);
    expect(running.status).toMatchObject({ ready: 0, terminating: 0, uncountedTerminatedPods: {} });
    expect(Date.parse(running.status.startTime)).not.toBeNaN();
    await finishPod(ns, pod, "Succeeded");
    const done = await waitJob(ns, "once", "Complete", (x) => conditionOf(x, "Complete")?.status === "True");
    expect(done.status.succeeded).toBe(1);
    expect(done.status.active).toBeUndefined();
    expect(done.status.failed).toBeUndefined();
    expect(conditionOf(done, "SuccessCriteriaMet")).toMatchObject({
      status: "True",
      reason: "CompletionsReached",
      message: "Reached expected number of succeeded pods",
    });
    expect(conditionOf(done, "Complete")).toMatchObject({ reason: "CompletionsReached" });
    expect(Date.parse(done.status.completionTime)).toBeGreaterThanOrEqual(Date.parse(done.status.startTime));
    const after = await api(t, "GET", `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}`);
    expect(after.json.metadata.finalizers).toBeUndefined();
    // nothing more is started, and the count stays at one
    await new Promise((r) => setTimeout(r, 1500));
    expect(await podsOf(ns, j)).toHaveLength(1);
    expect((await getJob(ns, "once")).status.succeeded).toBe(1);
    const events = await api(
      t,
      "GET",
      `/api/v1/namespaces/${ns}/events?fieldSelector=involvedObject.name%3Donce`,
    );
    expect((events.json.items as any[]).map((e) => e.reason).sort()).toEqual([
      "Completed",
      "SuccessfulCreate",
    ]);
  });

  it("keeps parallelism pods running until completions succeed", async () => {
    const ns = await freshNamespace(t);
    expect((await api(t, "POST", jobPath(ns), job("par", { parallelism: 2, completions: 3 }))).status).toBe(
      201,
    );
    const j = await getJob(ns, "par");
    let pods = await waitPods(ns, j, 2, "two running at once");
    await finishPod(ns, pods[0], "Succeeded");
    await finishPod(ns, pods[1], "Succeeded");
    // one more is needed, and only one
    pods = await waitPods(ns, j, 1, "the third");
    await waitJob(ns, "par", "2 succeeded", (x) => x.status?.succeeded === 2 && x.status?.active === 1);
    await finishPod(ns, pods[0], "Succeeded");
    const done = await waitJob(ns, "par", "Complete", (x) => conditionOf(x, "Complete")?.status === "True");
    expect(done.status.succeeded).toBe(3);
    expect(await podsOf(ns, j)).toHaveLength(3);
  });

  it("runs an Indexed Job: one pod per index, each told its index, completed indexes listed", async () => {
    const ns = await freshNamespace(t);
    const body = job("idx", { completionMode: "Indexed", completions: 3, parallelism: 2 });
    expect((await api(t, "POST", jobPath(ns), body)).status).toBe(201);
    const j = await getJob(ns, "idx");
    const index = (p: any) => p.metadata.annotations["batch.kubernetes.io/job-completion-index"];
    const first = await waitPods(ns, j, 2, "indexes 0 and 1");
    expect(first.map(index).sort()).toEqual(["0", "1"]);
    const one = first.find((p) => index(p) === "1");
    expect(one.metadata.generateName).toBe("idx-1-");
    expect(one.metadata.labels["batch.kubernetes.io/job-completion-index"]).toBe("1");
    expect(one.spec.hostname).toBe("idx-1");
    expect(one.spec.containers[0].env).toEqual([
      {
        name: "JOB_COMPLETION_INDEX",
        valueFrom: {
          fieldRef: {
            apiVersion: "v1",
            fieldPath: "metadata.labels['batch.kubernetes.io/job-completion-index']",
          },
        },
      },
    ]);
    await finishPod(ns, one, "Succeeded");
    const next = await waitPods(ns, j, 2, "index 2 started");
    expect(next.map(index).sort()).toEqual(["0", "2"]);
    const partial = await waitJob(ns, "idx", "index 1 listed", (x) => x.status?.completedIndexes === "1");
    expect(partial.status.succeeded).toBe(1);
    for (const p of next) await finishPod(ns, p, "Succeeded");
    const done = await waitJob(ns, "idx", "Complete", (x) => conditionOf(x, "Complete")?.status === "True");
    expect([done.status.completedIndexes, done.status.succeeded]).toEqual(["0-2", 3]);
    expect(await podsOf(ns, j)).toHaveLength(3);
  });

  it("fails the Job past its backoff limit", async () => {
    const ns = await freshNamespace(t);
    expect((await api(t, "POST", jobPath(ns), job("fail", { backoffLimit: 0 }))).status).toBe(201);
    const j = await getJob(ns, "fail");
    const [pod] = await waitPods(ns, j, 1);
    await finishPod(ns, pod, "Failed");
    const failed = await waitJob(ns, "fail", "Failed", (x) => conditionOf(x, "Failed")?.status === "True");
    expect(failed.status.failed).toBe(1);
    for (const type of ["FailureTarget", "Failed"])
      expect(conditionOf(failed, type)).toMatchObject({
        status: "True",
        reason: "BackoffLimitExceeded",
        message: "Job has reached the specified backoff limit",
      });
    expect(failed.status.completionTime).toBeUndefined();
    expect(await podsOf(ns, j)).toHaveLength(1);
  });

  it("replaces a failed pod while under the backoff limit", async () => {
    const ns = await freshNamespace(t);
    expect((await api(t, "POST", jobPath(ns), job("retry", { backoffLimit: 2 }))).status).toBe(201);
    const j = await getJob(ns, "retry");
    const [first] = await waitPods(ns, j, 1);
    const failedAt = Date.now();
    await finishPod(ns, first, "Failed");
    await waitJob(ns, "retry", "failed 1", (x) => x.status?.failed === 1);
    // the replacement waits out the first backoff step (10 s)
    const [second] = await until(
      "a replacement",
      async () => {
        const pods = await podsOf(ns, j);
        return pods.length === 2 ? pods.slice(1) : undefined;
      },
      20_000,
    );
    expect(second.metadata.name).not.toBe(first.metadata.name);
    // creationTimestamp has whole seconds: 10 s after the failure, less at most one
    expect(Date.parse(second.metadata.creationTimestamp) - failedAt).toBeGreaterThanOrEqual(9000);
    await finishPod(ns, second, "Succeeded");
    const done = await waitJob(ns, "retry", "Complete", (x) => conditionOf(x, "Complete")?.status === "True");
    expect([done.status.succeeded, done.status.failed]).toEqual([1, 1]);
  }, 40_000);

  it("suspends and resumes", async () => {
    const ns = await freshNamespace(t);
    expect((await api(t, "POST", jobPath(ns), job("sus", { suspend: true }))).status).toBe(201);
    const suspended = await waitJob(
      ns,
      "sus",
      "Suspended",
      (x) => conditionOf(x, "Suspended")?.status === "True",
    );
    expect(conditionOf(suspended, "Suspended")).toMatchObject({
      reason: "JobSuspended",
      message: "Job suspended",
    });
    expect(suspended.status.startTime).toBeUndefined();
    expect(await podsOf(ns, suspended)).toHaveLength(0);
    const merge = { "content-type": "application/merge-patch+json" };
    expect((await api(t, "PATCH", jobPath(ns, "sus"), { spec: { suspend: false } }, merge)).status).toBe(200);
    const [pod] = await waitPods(ns, suspended, 1);
    const resumed = await waitJob(
      ns,
      "sus",
      "resumed",
      (x) => conditionOf(x, "Suspended")?.status === "False",
    );
    expect(conditionOf(resumed, "Suspended")).toMatchObject({ reason: "JobResumed", message: "Job resumed" });
    expect(resumed.status.startTime).toBeDefined();
    // suspending again deletes the running pod, and that is not a failure
    expect((await api(t, "PATCH", jobPath(ns, "sus"), { spec: { suspend: true } }, merge)).status).toBe(200);
    await until(
      "the pod gone",
      async () => (await api(t, "GET", `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}`)).status === 404,
    );
    const again = await waitJob(
      ns,
      "sus",
      "suspended again",
      (x) => conditionOf(x, "Suspended")?.status === "True" && !x.status.active,
    );
    expect(again.status.failed).toBeUndefined();
  });

  it("deletes a finished Job after ttlSecondsAfterFinished, and a deleted Job's pods go with it", async () => {
    const ns = await freshNamespace(t);
    expect((await api(t, "POST", jobPath(ns), job("ttl", { ttlSecondsAfterFinished: 1 }))).status).toBe(201);
    const j = await getJob(ns, "ttl");
    const [pod] = await waitPods(ns, j, 1);
    await finishPod(ns, pod, "Succeeded");
    await until(
      "the Job deleted",
      async () => (await api(t, "GET", jobPath(ns, "ttl"))).status === 404,
      20_000,
    );
    await until("its pod deleted", async () => (await podsOf(ns, j)).length === 0);
    // a running Job deleted in the background: the pod's finalizer is let go and the pod goes
    expect((await api(t, "POST", jobPath(ns), job("bg"))).status).toBe(201);
    const bg = await getJob(ns, "bg");
    await waitPods(ns, bg, 1);
    const del = await api(t, "DELETE", jobPath(ns, "bg"), { propagationPolicy: "Background" });
    expect(del.status, del.text).toBe(200);
    await until("the running pod deleted", async () => (await podsOf(ns, bg)).length === 0, 20_000);
    // with no propagation policy a Job's pods are kept, as upstream keeps them, and it says so
    expect((await api(t, "POST", jobPath(ns), job("kept"))).status).toBe(201);
    const kept = await getJob(ns, "kept");
    const [pod2] = await waitPods(ns, kept, 1);
    const plain = await api(t, "DELETE", jobPath(ns, "kept"));
    expect(plain.status, plain.text).toBe(200);
    expect(plain.headers.get("warning")).toBe(
      '299 - "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning"',
    );
    await until("the Job gone", async () => (await api(t, "GET", jobPath(ns, "kept"))).status === 404);
    // orphaned: no owner, no finalizer of the Job's, still there
    const orphan = await until("the pod orphaned", async () => {
      const p = (await api(t, "GET", `/api/v1/namespaces/${ns}/pods/${pod2.metadata.name}`)).json;
      return !p.metadata.ownerReferences && !p.metadata.finalizers ? p : undefined;
    });
    expect(orphan.metadata.deletionTimestamp).toBeUndefined();
  }, 40_000);

  it.skipIf(!hasKubectl)("kubectl create job, get jobs and wait --for=condition=complete", async () => {
    const ns = await freshNamespace(t);
    const created = await kubectl(t, [
      "-n",
      ns,
      "create",
      "job",
      "hello",
      "--image=busybox",
      "--",
      "echo",
      "hi",
    ]);
    expect(created.stdout, created.stderr).toBe("job.batch/hello created\n");
    const j = await getJob(ns, "hello");
    expect(j.spec.template.spec.restartPolicy).toBe("Never");
    const [pod] = await waitPods(ns, j, 1);
    const running = await kubectl(t, ["-n", ns, "get", "jobs"]);
    expect(running.stdout).toMatch(
      /^NAME\s+STATUS\s+COMPLETIONS\s+DURATION\s+AGE\nhello\s+Running\s+0\/1\s+\d+s\s+\d+s\n$/,
    );
    const wide = await kubectl(t, ["-n", ns, "get", "job", "hello", "-o", "wide"]);
    expect(wide.stdout.split("\n")[0]).toMatch(/CONTAINERS\s+IMAGES\s+SELECTOR$/);
    expect(wide.stdout).toMatch(
      new RegExp(`\\shello\\s+busybox\\s+batch.kubernetes.io/controller-uid=${j.metadata.uid}\\n$`),
    );
    const wait = kubectl(t, ["-n", ns, "wait", "--for=condition=complete", "job/hello", "--timeout=20s"]);
    await finishPod(ns, pod, "Succeeded");
    const waited = await wait;
    expect(waited.stdout, waited.stderr).toBe("job.batch/hello condition met\n");
    const done = await kubectl(t, ["-n", ns, "get", "jobs", "--field-selector=status.successful=1"]);
    expect(done.stdout).toMatch(/\nhello\s+Complete\s+1\/1\s+\d+s\s+\d+s\n$/);
  });
});
