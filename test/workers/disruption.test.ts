// policy/v1 PodDisruptionBudgets through real workerd: validation, the status the disruption
// controller keeps, and pods/eviction spending it (429 when nothing is left to spend). The
// test plays the kubelet: it marks pods Running and Ready as a node would.
import { describe, expect, it } from "vitest";
import { api, freshNamespace, hasKubectl, kubectl, shared, until } from "../helpers/cluster";

const t = shared();
const pdbPath = (ns: string, name = "") =>
  `/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets${name ? `/${name}` : ""}`;

function pdb(name: string, spec: Record<string, unknown>) {
  return { apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name }, spec };
}

async function readyPod(ns: string, name: string): Promise<void> {
  const r = await api(
    t,
    "PATCH",
    `/api/v1/namespaces/${ns}/pods/${name}/status`,
    {
      status: {
        phase: "Running",
        conditions: [{ type: "Ready", status: "True", lastTransitionTime: new Date().toISOString() }],
      },
    },
    { "content-type": "application/merge-patch+json" },
  );
  expect(r.status, r.text).toBe(200);
}

/** A ReplicaSet of `n` pods labelled app=<name>, all Running and Ready; returns their names. */
async function readySet(ns: string, name: string, n: number): Promise<string[]> {
  const rs = await api(t, "POST", `/apis/apps/v1/namespaces/${ns}/replicasets`, {
    metadata: { name },
    spec: {
      replicas: n,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "c", image: "busybox" }] },
      },
    },
  });
  expect(rs.status, rs.text).toBe(201);
  const names = await until(`${n} pods`, async () => {
    const r = await api(t, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=app%3D${name}`);
    return r.json.items.length === n && (r.json.items as any[]).map((p) => p.metadata.name as string);
  });
  for (const p of names) await readyPod(ns, p);
  return names;
}

const evict = (ns: string, pod: string) =>
  api(t, "POST", `/api/v1/namespaces/${ns}/pods/${pod}/eviction`, {
    apiVersion: "policy/v1",
    kind: "Eviction",
    metadata: { name: pod, namespace: ns },
  });

async function status(ns: string, name: string, pred: (s: any) => boolean): Promise<any> {
  let last: any;
  try {
    return await until(`status of ${name}`, async () => {
      last = (await api(t, "GET", pdbPath(ns, name))).json.status;
      return pred(last) && last;
    });
  } catch (e) {
    throw new Error(`${(e as Error).message}; last: ${JSON.stringify(last)}`);
  }
}

describe("policy/v1 poddisruptionbudgets", () => {
  it("refuses what upstream refuses", async () => {
    const ns = await freshNamespace(t);
    const bad = async (spec: Record<string, unknown>) => {
      const r = await api(t, "POST", pdbPath(ns), pdb("b", spec));
      expect(r.status, r.text).toBe(422);
      return (r.json.details.causes as any[]).map((c) => `${c.field}: ${c.message}`);
    };
    expect(await bad({ minAvailable: 1, maxUnavailable: 1 })).toEqual([
      'spec: Invalid value: {"minAvailable":1,"maxUnavailable":1}: minAvailable and maxUnavailable cannot be both set',
    ]);
    expect(await bad({ maxUnavailable: "120%" })).toEqual([
      'spec.maxUnavailable: Invalid value: "120%": must not be greater than 100%',
    ]);
    expect(await bad({ minAvailable: -1 })).toEqual([
      "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0",
    ]);
    expect(await bad({ minAvailable: 1, unhealthyPodEvictionPolicy: "Never" })).toEqual([
      'spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: "AlwaysAllow", "IfHealthyBudget"',
    ]);
  });

  it("counts healthy pods against minAvailable and spends the budget on evictions, then refuses with 429", async () => {
    const ns = await freshNamespace(t);
    const pods = await readySet(ns, "web", 3);
    expect(
      (
        await api(
          t,
          "POST",
          pdbPath(ns),
          pdb("web", { minAvailable: 2, selector: { matchLabels: { app: "web" } } }),
        )
      ).status,
    ).toBe(201);
    const s = await status(ns, "web", (x) => x.observedGeneration === 1 && x.currentHealthy === 3);
    expect(s).toMatchObject({ expectedPods: 3, desiredHealthy: 2, currentHealthy: 3, disruptionsAllowed: 1 });
    expect(s.conditions).toEqual([
      expect.objectContaining({ type: "DisruptionAllowed", status: "True", reason: "SufficientPods" }),
    ]);

    // two evictions at once with one disruption to spare: exactly one goes through
    const both = await Promise.all([evict(ns, pods[0]!), evict(ns, pods[1]!)]);
    expect(both.map((r) => r.status).sort()).toEqual([201, 429]);
    const won = both.find((r) => r.status === 201)!;
    expect(won.json).toMatchObject({ kind: "Status", status: "Success", code: 201 });
    const kept = pods[both[0]!.status === 201 ? 1 : 0]!;
    // the ReplicaSet's new pod is not Ready: 2 healthy of the 2 needed
    const after = await status(ns, "web", (x) => x.disruptionsAllowed === 0 && x.currentHealthy === 2);
    expect(after.conditions[0]).toMatchObject({ status: "False", reason: "InsufficientPods" });
    const second = await evict(ns, kept);
    expect(second.status, second.text).toBe(429);
    // upstream gives no retry delay here (kubectl drain waits 5 s of its own)
    expect(second.headers.get("retry-after")).toBeNull();
    expect(second.json).toMatchObject({
      reason: "TooManyRequests",
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      details: {
        causes: [
          {
            reason: "DisruptionBudget",
            message: "The disruption budget web needs 2 healthy pods and has 2 currently",
          },
        ],
      },
    });
    expect((await api(t, "GET", `/api/v1/namespaces/${ns}/pods/${kept}`)).status).toBe(200);
    // a pod that is not running yet is not counted, and goes without a check
    const pending = (
      await api(t, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Dweb`)
    ).json.items.find((p: any) => !pods.includes(p.metadata.name));
    expect((await evict(ns, pending.metadata.name)).status).toBe(201);
  });

  it("works out maxUnavailable and percentages from the controller's scale", async () => {
    const ns = await freshNamespace(t);
    await readySet(ns, "api", 4);
    expect(
      (
        await api(
          t,
          "POST",
          pdbPath(ns),
          pdb("mu", { maxUnavailable: "30%", selector: { matchLabels: { app: "api" } } }),
        )
      ).status,
    ).toBe(201);
    // 30% of 4 rounded up is 2: 2 must stay healthy, 2 may go
    expect(await status(ns, "mu", (x) => x.observedGeneration === 1 && x.currentHealthy === 4)).toMatchObject(
      {
        expectedPods: 4,
        desiredHealthy: 2,
        currentHealthy: 4,
        disruptionsAllowed: 2,
      },
    );
    // a second budget over the same pods: the eviction subresource cannot choose
    expect(
      (
        await api(
          t,
          "POST",
          pdbPath(ns),
          pdb("pct", { minAvailable: "50%", selector: { matchLabels: { app: "api" } } }),
        )
      ).status,
    ).toBe(201);
    expect(
      await status(ns, "pct", (x) => x.observedGeneration === 1 && x.currentHealthy === 4),
    ).toMatchObject({
      expectedPods: 4,
      desiredHealthy: 2,
      disruptionsAllowed: 2,
    });
    const pod = (await api(t, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Dapi`)).json.items[0]
      .metadata.name;
    const two = await evict(ns, pod);
    expect(two.status, two.text).toBe(500);
    expect(two.json.message).toBe(
      "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
    );
  });

  it("counts a ReplicationController's replicas as the expected pods", async () => {
    const ns = await freshNamespace(t);
    const rc = await api(t, "POST", `/api/v1/namespaces/${ns}/replicationcontrollers`, {
      metadata: { name: "old" },
      spec: {
        replicas: 2,
        template: {
          metadata: { labels: { app: "old" } },
          spec: { containers: [{ name: "c", image: "busybox" }] },
        },
      },
    });
    expect(rc.status, rc.text).toBe(201);
    const names = await until("2 pods", async () => {
      const r = await api(t, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Dold`);
      return r.json.items.length === 2 && (r.json.items as any[]).map((p) => p.metadata.name as string);
    });
    for (const p of names) await readyPod(ns, p);
    const body = pdb("old", { maxUnavailable: 1, selector: { matchLabels: { app: "old" } } });
    expect((await api(t, "POST", pdbPath(ns), body)).status).toBe(201);
    expect(
      await status(ns, "old", (x) => x.observedGeneration === 1 && x.currentHealthy === 2),
    ).toMatchObject({
      expectedPods: 2,
      desiredHealthy: 1,
      disruptionsAllowed: 1,
    });
  });

  it("skips pods no controller owns, fails safe on a controller without a scale, and refuses evictions until synced", async () => {
    const ns = await freshNamespace(t);
    const r = await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, {
      metadata: { name: "lone", labels: { app: "lone" } },
      spec: { containers: [{ name: "c", image: "busybox" }] },
    });
    expect(r.status).toBe(201);
    await readyPod(ns, "lone");
    // a bare pod with an integer minAvailable: counted as itself
    expect(
      (
        await api(
          t,
          "POST",
          pdbPath(ns),
          pdb("int", { minAvailable: 0, selector: { matchLabels: { app: "lone" } } }),
        )
      ).status,
    ).toBe(201);
    expect(
      await status(ns, "int", (x) => x.observedGeneration === 1 && x.currentHealthy === 1),
    ).toMatchObject({
      expectedPods: 1,
      disruptionsAllowed: 1,
    });
    // with a percentage only controllers' scales count: the bare pod is unmanaged, nothing may go
    const pct = await api(
      t,
      "PATCH",
      pdbPath(ns, "int"),
      { spec: { minAvailable: "50%" } },
      { "content-type": "application/merge-patch+json" },
    );
    expect(pct.status, pct.text).toBe(200);
    expect(await status(ns, "int", (x) => x.observedGeneration === 2)).toMatchObject({
      expectedPods: 0,
      disruptionsAllowed: 0,
    });
    const events = await until("UnmanagedPods", async () => {
      const e = await api(t, "GET", `/api/v1/namespaces/${ns}/events?fieldSelector=reason%3DUnmanagedPods`);
      return e.json.items.length > 0 && e.json.items;
    });
    expect(events[0].message).toMatch(
      /^Pods selected by this PodDisruptionBudget .* were found to be unmanaged\./,
    );

    // a Job's pod: a Job has no scale, so the budget cannot be worked out and allows nothing
    const job = await api(t, "POST", `/apis/batch/v1/namespaces/${ns}/jobs`, {
      metadata: { name: "batch" },
      spec: { template: { spec: { restartPolicy: "Never", containers: [{ name: "c", image: "busybox" }] } } },
    });
    expect(job.status, job.text).toBe(201);
    const jobPod = await until("the Job's pod", async () => {
      const l = await api(t, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=job-name%3Dbatch`);
      return l.json.items[0]?.metadata.name as string | undefined;
    });
    await readyPod(ns, jobPod);
    const sel = { matchLabels: { "job-name": "batch" } };
    expect(
      (await api(t, "POST", pdbPath(ns), pdb("jobs", { minAvailable: "50%", selector: sel }))).status,
    ).toBe(201);
    const failed = await status(ns, "jobs", (x) => x.conditions?.[0]?.reason === "SyncFailed");
    expect(failed.disruptionsAllowed).toBe(0);
    expect(failed.conditions[0]).toMatchObject({
      status: "False",
      message: "jobs.batch does not implement the scale subresource",
    });
    // the failed sync did not observe the budget's generation: evictions wait for it
    expect(failed.observedGeneration ?? 0).toBe(0);
    const stale = await evict(ns, jobPod);
    expect(stale.status, stale.text).toBe(429);
    expect(stale.headers.get("retry-after")).toBe("10");
    expect(stale.json.details).toMatchObject({
      retryAfterSeconds: 10,
      causes: [
        {
          reason: "DisruptionBudget",
          message: "The disruption budget jobs is still being processed by the server.",
        },
      ],
    });
  });

  it("marks an evicted pod with the DisruptionTarget condition before it goes, and checks preconditions first", async () => {
    const ns = await freshNamespace(t);
    // bound to a node (that never answers): its deletion is graceful, so it can be seen going
    const r = await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, {
      metadata: { name: "bound" },
      spec: { nodeName: "nowhere", containers: [{ name: "c", image: "busybox" }] },
    });
    expect(r.status).toBe(201);
    const stalePre = await api(t, "POST", `/api/v1/namespaces/${ns}/pods/bound/eviction`, {
      apiVersion: "policy/v1",
      kind: "Eviction",
      metadata: { name: "bound" },
      deleteOptions: { preconditions: { resourceVersion: "1" } },
    });
    expect(stalePre.status, stalePre.text).toBe(409);
    expect(stalePre.json.message).toContain("Precondition failed: ResourceVersion in precondition: 1");
    const ok = await evict(ns, "bound");
    expect(ok.status, ok.text).toBe(201);
    const pod = (await api(t, "GET", `/api/v1/namespaces/${ns}/pods/bound`)).json;
    expect(pod.metadata.deletionTimestamp).toBeTruthy();
    expect(pod.status.conditions).toContainEqual(
      expect.objectContaining({
        type: "DisruptionTarget",
        status: "True",
        reason: "EvictionByEvictionAPI",
        message: "Eviction API: evicting",
      }),
    );
    await api(t, "DELETE", `/api/v1/namespaces/${ns}/pods/bound?gracePeriodSeconds=0`);
  });

  it.skipIf(!hasKubectl)("kubectl create pdb and get pdb print upstream's columns", async () => {
    const ns = await freshNamespace(t);
    const made = await kubectl(t, [
      "create",
      "pdb",
      "cols",
      "-n",
      ns,
      "--selector=a=b",
      "--max-unavailable=25%",
    ]);
    expect(made.stdout, made.stderr).toBe("poddisruptionbudget.policy/cols created\n");
    const get = await kubectl(t, ["get", "pdb", "-n", ns]);
    expect(get.stdout).toMatch(
      /^NAME\s+MIN AVAILABLE\s+MAX UNAVAILABLE\s+ALLOWED DISRUPTIONS\s+AGE\ncols\s+N\/A\s+25%\s+0\s+\d+s\n$/,
    );
  });
});
