import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../api/types";
import {
  deploymentController,
  syncDeployment,
} from "../../../durable-objects/controllers/deployment/controller";
import { progressRecheckAfter } from "../../../durable-objects/controllers/deployment/status";
import { garbageCollector } from "../../../durable-objects/controllers/gc/garbage-collector";
import { replicaSetController } from "../../../durable-objects/controllers/replicaset/controller";
import { FakeCluster, keyOf } from "./fake";

const CONTROLLERS = [replicaSetController, deploymentController, garbageCollector];

function deployment(replicas: number, image = "busybox:1", spec: Record<string, unknown> = {}): KubeObject {
  return {
    metadata: { name: "web", namespace: "default" },
    spec: {
      replicas,
      selector: { matchLabels: { app: "web" } },
      template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "c", image }] } },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: "25%", maxUnavailable: "25%" } },
      revisionHistoryLimit: 10,
      progressDeadlineSeconds: 600,
      ...spec,
    },
  };
}

/** The node agent: pending pods start and become ready; deleted pods finish terminating. */
function kubelet(c: FakeCluster): void {
  c.finishPodDeletions();
  for (const p of c.list("/pods")) {
    if (p.metadata.deletionTimestamp || p.status?.phase === "Running") continue;
    c.add("/pods", {
      ...p,
      spec: { ...p.spec, nodeName: "n1" },
      status: {
        phase: "Running",
        conditions: [{ type: "Ready", status: "True", lastTransitionTime: c.iso() }],
      },
    });
  }
}

/** Runs controllers and the fake kubelet until the deployment's rollout is complete. */
async function rollout(c: FakeCluster, rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await c.run(CONTROLLERS);
    if (complete(c.get("apps/deployments", "default/web")!)) return;
    kubelet(c);
    c.now += 1000;
  }
  throw new Error(
    `rollout did not finish: ${JSON.stringify(c.get("apps/deployments", "default/web")!.status)}`,
  );
}

/** What `kubectl rollout status` waits for. */
function complete(d: KubeObject): boolean {
  const s = d.status ?? {};
  return (
    (s.observedGeneration ?? 0) >= (d.metadata.generation ?? 0) &&
    (s.updatedReplicas ?? 0) === d.spec!.replicas &&
    (s.replicas ?? 0) === (s.updatedReplicas ?? 0) &&
    (s.availableReplicas ?? 0) === (s.updatedReplicas ?? 0)
  );
}

function updateSpec(
  c: FakeCluster,
  patch: (d: KubeObject) => void,
  annotations?: Record<string, string>,
): void {
  const d = structuredClone(c.get("apps/deployments", "default/web")!);
  patch(d);
  if (annotations) d.metadata.annotations = { ...(d.metadata.annotations ?? {}), ...annotations };
  d.metadata.generation = (d.metadata.generation ?? 1) + 1;
  c.add("apps/deployments", d);
}

const sets = (c: FakeCluster) => c.list("apps/replicasets", "default");
const active = (c: FakeCluster) => c.list("/pods", "default").filter((p) => !p.metadata.deletionTimestamp);

describe("Deployment controller", () => {
  it("creates a hashed ReplicaSet with revision annotations and completes the rollout", async () => {
    const c = new FakeCluster();
    c.add("apps/deployments", deployment(3));
    await rollout(c);
    const [rs] = sets(c);
    const hash = rs.metadata.labels!["pod-template-hash"];
    expect(rs.metadata.name).toBe(`web-${hash}`);
    expect(rs.spec!.selector.matchLabels).toEqual({ app: "web", "pod-template-hash": hash });
    expect(rs.spec!.template.metadata.labels).toEqual({ app: "web", "pod-template-hash": hash });
    expect(rs.metadata.annotations).toMatchObject({
      "deployment.kubernetes.io/revision": "1",
      "deployment.kubernetes.io/desired-replicas": "3",
      "deployment.kubernetes.io/max-replicas": "4",
    });
    expect(rs.metadata.ownerReferences?.[0]).toMatchObject({
      kind: "Deployment",
      name: "web",
      controller: true,
      blockOwnerDeletion: true,
    });
    const d = c.get("apps/deployments", "default/web")!;
    expect(d.metadata.annotations?.["deployment.kubernetes.io/revision"]).toBe("1");
    expect(d.status).toMatchObject({
      replicas: 3,
      updatedReplicas: 3,
      readyReplicas: 3,
      availableReplicas: 3,
      observedGeneration: 1,
    });
    const progressing = d.status.conditions.find((x: any) => x.type === "Progressing");
    expect(progressing).toMatchObject({
      status: "True",
      reason: "NewReplicaSetAvailable",
      message: `ReplicaSet "${rs.metadata.name}" has successfully progressed.`,
    });
    expect(d.status.conditions.find((x: any) => x.type === "Available")).toMatchObject({
      status: "True",
      reason: "MinimumReplicasAvailable",
    });
    expect(c.events).toContainEqual({
      name: "web",
      type: "Normal",
      reason: "ScalingReplicaSet",
      message: `Scaled up replica set ${rs.metadata.name} to 3 from 0`,
    });
    expect(active(c)).toHaveLength(3);
  });

  it("rolls a new template out within surge and unavailability, then keeps history", async () => {
    const c = new FakeCluster();
    c.add("apps/deployments", deployment(4));
    await rollout(c);
    updateSpec(c, (d) => (d.spec!.template.spec.containers[0].image = "busybox:2"), {
      "kubernetes.io/change-cause": "image 2",
    });
    // watch the pod counts at every step: never above 4 + 1 surge, never below 4 - 1 available
    for (let i = 0; i < 30; i++) {
      await c.run(CONTROLLERS);
      const total = sets(c).reduce((n, rs) => n + rs.spec!.replicas, 0);
      expect(total).toBeLessThanOrEqual(5);
      const available = sets(c).reduce((n, rs) => n + (rs.status?.availableReplicas ?? 0), 0);
      expect(available).toBeGreaterThanOrEqual(3);
      if (
        complete(c.get("apps/deployments", "default/web")!) &&
        sets(c).every(
          (rs) => rs.spec!.template.spec.containers[0].image === "busybox:2" || rs.spec!.replicas === 0,
        )
      )
        break;
      kubelet(c);
      c.now += 1000;
    }
    const d = c.get("apps/deployments", "default/web")!;
    expect(complete(d)).toBe(true);
    const byRev = Object.fromEntries(
      sets(c).map((rs) => [rs.metadata.annotations!["deployment.kubernetes.io/revision"], rs]),
    );
    expect(byRev["1"].spec!.replicas).toBe(0);
    expect(byRev["2"].spec!.replicas).toBe(4);
    expect(byRev["2"].metadata.annotations!["kubernetes.io/change-cause"]).toBe("image 2");
    expect(d.metadata.annotations!["deployment.kubernetes.io/revision"]).toBe("2");
    expect(active(c).every((p) => p.spec!.containers[0].image === "busybox:2")).toBe(true);
    expect(c.events.some((e) => /^Scaled down replica set web-\w+ to 0 from \d$/.test(e.message))).toBe(true);

    // kubectl rollout undo: the template of revision 1 comes back; that set becomes revision 3
    const old = byRev["1"];
    updateSpec(c, (x) => {
      const t = structuredClone(old.spec!.template);
      delete t.metadata.labels["pod-template-hash"];
      x.spec!.template = t;
    });
    await rollout(c, 30);
    const again = c.get("apps/replicasets", keyOf(old))!;
    expect(again.metadata.annotations).toMatchObject({
      "deployment.kubernetes.io/revision": "3",
      "deployment.kubernetes.io/revision-history": "1",
    });
    expect(again.spec!.replicas).toBe(4);
    expect(sets(c)).toHaveLength(2);
  });

  it("deletes old ReplicaSets beyond revisionHistoryLimit", async () => {
    const c = new FakeCluster();
    c.add("apps/deployments", deployment(2, "busybox:1", { revisionHistoryLimit: 1 }));
    await rollout(c);
    for (const img of ["busybox:2", "busybox:3"]) {
      updateSpec(c, (d) => (d.spec!.template.spec.containers[0].image = img));
      await rollout(c, 30);
      await c.run(CONTROLLERS);
    }
    const revs = sets(c)
      .map((rs) => rs.metadata.annotations!["deployment.kubernetes.io/revision"])
      .sort();
    expect(revs).toEqual(["2", "3"]);
  });

  it("Recreate scales old pods away before the new set is created", async () => {
    const c = new FakeCluster();
    c.add("apps/deployments", deployment(2, "busybox:1", { strategy: { type: "Recreate" } }));
    await rollout(c);
    updateSpec(c, (d) => (d.spec!.template.spec.containers[0].image = "busybox:2"));
    await c.run(CONTROLLERS);
    expect(sets(c)).toHaveLength(1);
    expect(sets(c)[0].spec!.replicas).toBe(0);
    // old pods are terminating (bound to a node): still no new set
    expect(c.list("/pods").length).toBe(2);
    await c.run(CONTROLLERS);
    expect(sets(c)).toHaveLength(1);
    c.finishPodDeletions();
    await c.run(CONTROLLERS);
    expect(sets(c)).toHaveLength(2);
    await rollout(c);
    expect(active(c).every((p) => p.spec!.containers[0].image === "busybox:2")).toBe(true);
  });

  it("does not roll out while paused and says so in Progressing", async () => {
    const c = new FakeCluster();
    c.add("apps/deployments", deployment(2));
    await rollout(c);
    updateSpec(c, (d) => {
      d.spec!.paused = true;
      d.spec!.template.spec.containers[0].image = "busybox:2";
    });
    await c.run(CONTROLLERS);
    expect(sets(c)).toHaveLength(1);
    const d = c.get("apps/deployments", "default/web")!;
    expect(d.status.conditions.find((x: any) => x.type === "Progressing")).toMatchObject({
      status: "Unknown",
      reason: "DeploymentPaused",
      message: "Deployment is paused",
    });
    expect(d.status.observedGeneration).toBe(d.metadata.generation);
    updateSpec(c, (x) => (x.spec!.paused = false));
    await rollout(c, 30);
    expect(sets(c)).toHaveLength(2);
  });

  it("scales proportionally in the middle of a rollout", async () => {
    const c = new FakeCluster();
    c.add(
      "apps/deployments",
      deployment(10, "busybox:1", {
        strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 3, maxUnavailable: 2 } },
      }),
    );
    await rollout(c);
    updateSpec(c, (d) => (d.spec!.template.spec.containers[0].image = "busybox:2"));
    await c.run(CONTROLLERS); // new set at 3, old at 8: 11 < 13? the old set may shrink by 2
    const before = sets(c).reduce((n, rs) => n + rs.spec!.replicas, 0);
    expect(before).toBeLessThanOrEqual(13);
    updateSpec(c, (d) => (d.spec!.replicas = 20));
    await c.run(CONTROLLERS);
    const sizes = sets(c).map((rs) => rs.spec!.replicas);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(23);
    expect(
      sets(c).every((rs) => rs.metadata.annotations!["deployment.kubernetes.io/desired-replicas"] === "20"),
    ).toBe(true);
    expect(sets(c).every((rs) => rs.spec!.replicas > 3)).toBe(true);
    await rollout(c, 40);
    expect(active(c)).toHaveLength(20);
  });

  it("reports ProgressDeadlineExceeded when pods never become available", async () => {
    const c = new FakeCluster();
    c.add("apps/deployments", deployment(1, "busybox:1", { progressDeadlineSeconds: 30 }));
    await c.run(CONTROLLERS);
    const d1 = c.get("apps/deployments", "default/web")!;
    expect(d1.status.conditions.find((x: any) => x.type === "Progressing")).toMatchObject({
      reason: "ReplicaSetUpdated",
    });
    expect(
      c.enqueued.some(
        (e) =>
          e.controller === "deployment-controller" && e.key === "default/web" && (e.afterMs ?? 0) > 29_000,
      ),
    ).toBe(true);
    c.now += 31_000;
    await syncDeployment("default/web", c.ctx());
    const d = c.get("apps/deployments", "default/web")!;
    const rs = sets(c)[0];
    expect(d.status.conditions.find((x: any) => x.type === "Progressing")).toMatchObject({
      status: "False",
      reason: "ProgressDeadlineExceeded",
      message: `ReplicaSet "${rs.metadata.name}" has timed out progressing.`,
    });
    expect(d.status.conditions.find((x: any) => x.type === "Available")).toMatchObject({
      status: "False",
      reason: "MinimumReplicasUnavailable",
    });
  });

  it("a finished rollout that falls short later is not queued again by its deadline (once: at once, forever)", async () => {
    const c = new FakeCluster();
    c.add("apps/deployments", deployment(2));
    await rollout(c);
    // ten minutes on, a pod is no longer ready: the rollout is not complete, the Progressing
    // condition still says NewReplicaSetAvailable, and its deadline is long past
    c.now += 601_000;
    const [p] = c.list("/pods");
    c.add("/pods", { ...p, status: { ...p.status, conditions: [{ type: "Ready", status: "False" }] } });
    await c.run([replicaSetController]);
    const again: (number | undefined)[] = [];
    const ctx = c.ctx("deployment-controller");
    ctx.enqueue = (key, afterMs) => void (key === "default/web" && again.push(afterMs));
    await syncDeployment("default/web", ctx);
    // NewReplicaSetAvailable never times out; an immediate requeue here held the controllers'
    // thread, and the server with it
    expect(again).toEqual([]);
  });

  it("deleting the deployment removes its ReplicaSets and pods (background), orphan keeps them", async () => {
    const c = new FakeCluster();
    c.add("apps/deployments", deployment(2));
    await rollout(c);
    const { lookupGVR } = await import("../../../api/registry");
    const DEP = lookupGVR("apps", "v1", "deployments")!;
    await c.api.remove(DEP, "default", "web", { propagationPolicy: "Orphan" });
    await c.run(CONTROLLERS);
    expect(c.get("apps/deployments", "default/web")).toBeUndefined();
    expect(sets(c)).toHaveLength(1);
    expect(sets(c)[0].metadata.ownerReferences).toBeUndefined();
    // a new deployment adopts the orphaned set; deleting it in the background cascades
    c.add("apps/deployments", deployment(2));
    await rollout(c);
    expect(sets(c)).toHaveLength(1);
    await c.api.remove(DEP, "default", "web", { propagationPolicy: "Background" });
    await c.run(CONTROLLERS);
    expect(sets(c)).toHaveLength(0);
    expect(active(c)).toHaveLength(0);
  });
  it("bumps collisionCount when the hashed name is taken by another owner's set", async () => {
    const c = new FakeCluster();
    const { computeHash } = await import("../../../durable-objects/controllers/deployment/revisions");
    const d = deployment(1);
    const hash = computeHash(d.spec!.template);
    c.add("apps/replicasets", {
      metadata: {
        name: `web-${hash}`,
        namespace: "default",
        labels: { app: "other" },
        ownerReferences: [
          { apiVersion: "apps/v1", kind: "Deployment", name: "other", uid: "other-uid", controller: true },
        ],
      },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: "other" } },
        template: { metadata: { labels: { app: "other" } } },
      },
    });
    c.add("apps/deployments", d);
    await rollout(c);
    const dep = c.get("apps/deployments", "default/web")!;
    expect(dep.status.collisionCount).toBe(1);
    const mine = sets(c).filter((rs) => rs.metadata.ownerReferences?.[0].name === "web");
    expect(mine).toHaveLength(1);
    expect(mine[0].metadata.name).toBe(`web-${computeHash(d.spec!.template, 1)}`);
  });

  it("stops quietly when the deployment vanishes during a sync", async () => {
    const c = new FakeCluster();
    c.add("apps/deployments", deployment(1));
    const { notFound } = await import("../../../api/errors");
    c.failNext = { verb: "update", error: notFound({ group: "apps", resource: "deployments" }, "web") };
    await expect(syncDeployment("default/web", c.ctx())).resolves.toBeUndefined();
  });
});

describe("progressRecheckAfter", () => {
  it("never asks for a look at once: a second past the deadline, or a second when it has passed", () => {
    const now = Date.parse("2026-01-01T00:10:00Z");
    const progressing = (updated: string) => ({
      conditions: [
        { type: "Progressing", status: "True", reason: "ReplicaSetUpdated", lastUpdateTime: updated },
      ],
    });
    const d = { metadata: { name: "d" }, spec: { replicas: 1, progressDeadlineSeconds: 600 } };
    // the deadline half a second away, and already passed
    expect(progressRecheckAfter(d, progressing("2026-01-01T00:00:00.5Z"), now)).toBe(1500);
    expect(progressRecheckAfter(d, progressing("2025-12-31T23:59:00Z"), now)).toBe(1000);
    expect(progressRecheckAfter(d, progressing("2026-01-01T00:05:00Z"), now)).toBe(301_000);
  });
});
