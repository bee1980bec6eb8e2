// A Job's spec.podFailurePolicy and spec.successPolicy through real workerd: upstream's
// validation, and the Job controller judging each failed pod by the first rule it matches
// (FailJob ends the Job with reason PodFailurePolicy, Ignore leaves the failure out of
// backoffLimit), and ending an Indexed Job once the indexes a success rule names succeeded.
// The test plays the kubelet, reporting exit codes and conditions as a node would.
import { describe, expect, it } from "vitest";
import { api, freshNamespace, shared, until } from "../helpers/cluster";
import { conditionOf, exited, finishPod, getJob, job, jobPath, waitJob, waitPods } from "../helpers/jobs";

const t = shared();
const TRACKING = "batch.kubernetes.io/job-tracking";

describe("batch/v1 jobs: podFailurePolicy", () => {
  it("refuses a policy upstream refuses, in its words", async () => {
    const ns = await freshNamespace(t);
    const bad = async (
      policy: unknown,
      spec: Record<string, unknown> = {},
      template: Record<string, unknown> = {},
    ) => {
      const r = await api(t, "POST", jobPath(ns), job("b", { podFailurePolicy: policy, ...spec }, template));
      expect(r.status, r.text).toBe(422);
      return (r.json.details.causes as any[]).map((c) => `${c.field}: ${c.message}`);
    };
    expect(
      await bad({
        rules: [
          { onExitCodes: { containerName: "nope", operator: "In", values: [3, 0, 3] } },
          { action: "FailIndex", onPodConditions: [{ type: "DisruptionTarget" }] },
          { action: "Ignore" },
          {
            action: "Count",
            onExitCodes: { operator: "NotIn", values: [1] },
            onPodConditions: [{ type: "Ready" }],
          },
        ],
      }),
    ).toEqual([
      'spec.podFailurePolicy.rules[0].action: Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]',
      'spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: "nope": must be one of the container or initContainer names in the pod template',
      "spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 0: must not be 0 for the In operator",
      "spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value: 3",
      "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [3,0,3]: must be ordered",
      'spec.podFailurePolicy.rules[1].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set',
      "spec.podFailurePolicy.rules[2]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
      "spec.podFailurePolicy.rules[3]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported",
    ]);
    const rule = { action: "FailJob", onExitCodes: { operator: "In", values: [1] } };
    expect(
      await bad(
        { rules: [rule] },
        { podReplacementPolicy: "TerminatingOrFailed" },
        { restartPolicy: "OnFailure" },
      ),
    ).toEqual([
      'spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed"',
      'spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified',
    ]);
    // defaults: a condition pattern's status is True, and only failed pods are replaced
    const ok = await api(
      t,
      "POST",
      jobPath(ns),
      job("ok", {
        podFailurePolicy: { rules: [{ action: "Ignore", onPodConditions: [{ type: "DisruptionTarget" }] }] },
      }),
    );
    expect(ok.status, ok.text).toBe(201);
    expect(ok.json.spec.podFailurePolicy.rules[0].onPodConditions).toEqual([
      { type: "DisruptionTarget", status: "True" },
    ]);
    expect(ok.json.spec.podReplacementPolicy).toBe("Failed");
  });

  it("FailJob: an exit code the rule names fails the Job at once, with reason PodFailurePolicy", async () => {
    const ns = await freshNamespace(t);
    const policy = {
      rules: [{ action: "FailJob", onExitCodes: { containerName: "work", operator: "In", values: [42] } }],
    };
    const r = await api(
      t,
      "POST",
      jobPath(ns),
      job("fj", { podFailurePolicy: policy, parallelism: 2, completions: 4 }),
    );
    expect(r.status, r.text).toBe(201);
    const [pod, other] = await waitPods(ns, r.json, 2);
    await finishPod(ns, pod, "Failed", exited(42));
    const message = `Container work for pod ${ns}/${pod.metadata.name} failed with exit code 42 matching FailJob rule at index 0`;
    const target = await waitJob(
      ns,
      "fj",
      "FailureTarget",
      (j) => conditionOf(j, "FailureTarget")?.status === "True",
    );
    expect(conditionOf(target, "FailureTarget")).toMatchObject({ reason: "PodFailurePolicy", message });
    // the other pod is deleted at once; with podReplacementPolicy Failed the Job is Failed once it
    // has stopped, as its node reports (the test plays the node)
    const going = await until("the other pod deleted", async () => {
      const p = await api(t, "GET", `/api/v1/namespaces/${ns}/pods/${other.metadata.name}`);
      return p.json.metadata?.deletionTimestamp && p.json;
    });
    expect(conditionOf(await getJob(ns, "fj"), "Failed")).toBeUndefined();
    await finishPod(ns, going, "Failed", exited(143));
    const failed = await waitJob(ns, "fj", "Failed", (j) => conditionOf(j, "Failed")?.status === "True");
    expect(conditionOf(failed, "Failed")).toMatchObject({ reason: "PodFailurePolicy", message });
    expect(failed.status).toMatchObject({ failed: 2, terminating: 0 });
    expect(failed.status.active).toBeUndefined();
  });

  it("Ignore: a pod that failed with a matching condition is not counted against backoffLimit", async () => {
    const ns = await freshNamespace(t);
    const policy = { rules: [{ action: "Ignore", onPodConditions: [{ type: "DisruptionTarget" }] }] };
    const r = await api(t, "POST", jobPath(ns), job("ig", { podFailurePolicy: policy, backoffLimit: 0 }));
    expect(r.status, r.text).toBe(201);
    const [pod] = await waitPods(ns, r.json, 1);
    const disrupted = {
      type: "DisruptionTarget",
      status: "True",
      reason: "EvictionByEvictionAPI",
      lastTransitionTime: new Date().toISOString(),
    };
    await finishPod(ns, pod, "Failed", { ...exited(137), conditions: [disrupted] });
    // the controller has judged it once its finalizer is off
    await until("finalizer released", async () => {
      const p = await api(t, "GET", `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}`);
      return !p.json.metadata.finalizers?.includes(TRACKING);
    });
    const j = await getJob(ns, "ig");
    expect(j.status.failed).toBeUndefined();
    expect(conditionOf(j, "Failed")).toBeUndefined();
    expect(conditionOf(j, "FailureTarget")).toBeUndefined();
    // a failure no rule matches is counted: with backoffLimit 0 the Job fails
    const r2 = await api(t, "POST", jobPath(ns), job("co", { podFailurePolicy: policy, backoffLimit: 0 }));
    const [other] = await waitPods(ns, r2.json, 1);
    await finishPod(ns, other, "Failed", exited(1));
    const failed = await waitJob(ns, "co", "Failed", (x) => conditionOf(x, "Failed")?.status === "True");
    expect(conditionOf(failed, "Failed")).toMatchObject({ reason: "BackoffLimitExceeded" });
  });
});

describe("batch/v1 jobs: successPolicy", () => {
  it("refuses a policy upstream refuses, in its words", async () => {
    const ns = await freshNamespace(t);
    const bad = async (spec: Record<string, unknown>) => {
      const r = await api(t, "POST", jobPath(ns), job("b", spec));
      expect(r.status, r.text).toBe(422);
      return (r.json.details.causes as any[]).map((c) => `${c.field}: ${c.message}`);
    };
    const rules = [{ succeededCount: 1 }];
    expect(await bad({ successPolicy: { rules } })).toEqual([
      'spec.successPolicy: Invalid value: {"rules":[{"succeededCount":1}]}: requires indexed completion mode',
    ]);
    const indexed = { completionMode: "Indexed", completions: 3, parallelism: 3 };
    expect(
      await bad({
        ...indexed,
        successPolicy: {
          rules: [
            {},
            { succeededIndexes: "2-1" },
            { succeededIndexes: "0,5" },
            { succeededIndexes: "0-1", succeededCount: 4 },
          ],
        },
      }),
    ).toEqual([
      "spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be specified",
      'spec.successPolicy.rules[1].succeededIndexes: Invalid value: "2-1": error parsing succeededIndexes: non-increasing order, previous: 2, current: 1',
      'spec.successPolicy.rules[2].succeededIndexes: Invalid value: "0,5": error parsing succeededIndexes: too large index: "5"',
      "spec.successPolicy.rules[3].succeededCount: Invalid value: 4: must be less than or equal to 3 (the number of specified completions)",
      "spec.successPolicy.rules[3].succeededCount: Invalid value: 4: must be less than or equal to 2 (the number of indexes in the specified succeededIndexes field)",
    ]);
  });

  it("ends an Indexed Job once the indexes a rule names succeeded, stopping the rest", async () => {
    const ns = await freshNamespace(t);
    const spec = {
      completionMode: "Indexed",
      completions: 3,
      parallelism: 3,
      successPolicy: { rules: [{ succeededIndexes: "0" }] },
    };
    const r = await api(t, "POST", jobPath(ns), job("leader", spec));
    expect(r.status, r.text).toBe(201);
    const pods = await waitPods(ns, r.json, 3);
    const leader = pods.find(
      (p) => p.metadata.annotations["batch.kubernetes.io/job-completion-index"] === "0",
    );
    await finishPod(ns, leader, "Succeeded");
    const done = await waitJob(
      ns,
      "leader",
      "Complete",
      (j) => conditionOf(j, "Complete")?.status === "True",
    );
    expect(conditionOf(done, "SuccessCriteriaMet")).toMatchObject({
      reason: "SuccessPolicy",
      message: "Matched rules at index 0",
    });
    expect(conditionOf(done, "Complete")).toMatchObject({
      reason: "SuccessPolicy",
      message: "Matched rules at index 0",
    });
    expect(done.status).toMatchObject({ succeeded: 1, completedIndexes: "0" });
    expect(done.status.completionTime).toBeTruthy();
    expect(done.status.active).toBeUndefined();
  });
});
