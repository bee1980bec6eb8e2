import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../api/types";
import { createPodGC, terminatedToDelete } from "../../../durable-objects/controllers/gc/pod-gc";
import { createNodeLifecycleController } from "../../../durable-objects/controllers/node/lifecycle";
import {
  desiredTaints,
  evictionTime,
  silentNodeConditions,
  tolerates,
} from "../../../durable-objects/controllers/node/taints";
import { FakeCluster, pod } from "./fake";

function node(c: FakeCluster, name = "n1", ready = "True"): KubeObject {
  return c.add("/nodes", {
    metadata: { name },
    spec: {},
    status: {
      conditions: [
        {
          type: "Ready",
          status: ready,
          reason: "KubeletReady",
          lastHeartbeatTime: c.iso(),
          lastTransitionTime: c.iso(),
        },
      ],
    },
  });
}

function lease(c: FakeCluster, name = "n1"): void {
  c.add("coordination.k8s.io/leases", {
    metadata: { name, namespace: "kube-node-lease" },
    spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: new Date(c.now).toISOString() },
  });
}

describe("taint arithmetic", () => {
  it("matches tolerations as upstream", () => {
    const t = { key: "node.kubernetes.io/unreachable", effect: "NoExecute" };
    expect(tolerates({ operator: "Exists" }, t)).toBe(true);
    expect(tolerates({ key: t.key, operator: "Exists", effect: "NoSchedule" }, t)).toBe(false);
    expect(tolerates({ key: t.key, operator: "Equal", value: "" }, t)).toBe(true);
    expect(tolerates({ key: t.key, value: "x" }, t)).toBe(false);
    expect(tolerates({ key: "other", operator: "Exists" }, t)).toBe(false);
  });
  it("computes eviction times from tolerationSeconds and the 300 s default", () => {
    const now = Date.parse("2026-01-01T00:10:00Z");
    const taints = [
      { key: "node.kubernetes.io/unreachable", effect: "NoExecute", timeAdded: "2026-01-01T00:09:00Z" },
    ];
    const plain = pod("p", { created: "2025-12-31T00:00:00Z" });
    expect(evictionTime(plain, taints, 300, now)).toBe(Date.parse("2026-01-01T00:14:00Z"));
    const short = pod("s", { created: "2025-12-31T00:00:00Z" });
    short.spec!.tolerations = [
      {
        key: "node.kubernetes.io/unreachable",
        operator: "Exists",
        effect: "NoExecute",
        tolerationSeconds: 30,
      },
    ];
    expect(evictionTime(short, taints, 300, now)).toBe(Date.parse("2026-01-01T00:09:30Z"));
    const forever = pod("f", { created: "2025-12-31T00:00:00Z" });
    forever.spec!.tolerations = [
      { key: "node.kubernetes.io/unreachable", operator: "Exists", effect: "NoExecute" },
    ];
    expect(evictionTime(forever, taints, 300, now)).toBe(Infinity);
    // a pod that lands on the node after the taint gets its full toleration from its arrival
    const late = pod("late", { created: "2026-01-01T00:09:50Z" });
    late.spec!.tolerations = short.spec!.tolerations;
    expect(evictionTime(late, taints, 300, now)).toBe(Date.parse("2026-01-01T00:10:20Z"));
    const custom = [{ key: "example.com/bad", effect: "NoExecute" }];
    expect(evictionTime(plain, custom, 300, now)).toBe(0);
  });
  it("derives node taints from the Ready condition and keeps foreign ones", () => {
    const n: KubeObject = {
      metadata: { name: "n" },
      spec: { taints: [{ key: "dedicated", value: "gpu", effect: "NoSchedule" }] },
      status: { conditions: [{ type: "Ready", status: "Unknown" }] },
    };
    const t = desiredTaints(n, "2026-01-01T00:00:00Z")!;
    expect(t).toEqual([
      { key: "dedicated", value: "gpu", effect: "NoSchedule" },
      { key: "node.kubernetes.io/unreachable", effect: "NoSchedule" },
      { key: "node.kubernetes.io/unreachable", effect: "NoExecute", timeAdded: "2026-01-01T00:00:00Z" },
    ]);
    expect(desiredTaints({ ...n, spec: { taints: t } }, "2026-01-01T00:05:00Z")).toBeUndefined();
    const back = { ...n, spec: { taints: t }, status: { conditions: [{ type: "Ready", status: "True" }] } };
    expect(desiredTaints(back, "x")).toEqual([{ key: "dedicated", value: "gpu", effect: "NoSchedule" }]);
  });
  it("marks a silent node's conditions Unknown, adding the ones it never posted", () => {
    const list = silentNodeConditions(
      [
        { type: "Ready", status: "True", lastHeartbeatTime: "h" },
        { type: "MemoryPressure", status: "False" },
        { type: "NetworkUnavailable", status: "False" },
      ],
      "now",
      "created",
    )!;
    const stopped = {
      status: "Unknown",
      reason: "NodeStatusUnknown",
      message: "Kubelet stopped posting node status.",
    };
    const never = (type: string) => ({
      type,
      status: "Unknown",
      reason: "NodeStatusNeverUpdated",
      message: "Kubelet never posted node status.",
      lastHeartbeatTime: "created",
      lastTransitionTime: "now",
    });
    expect(list).toEqual([
      { type: "Ready", ...stopped, lastHeartbeatTime: "h", lastTransitionTime: "now" },
      { type: "MemoryPressure", ...stopped, lastTransitionTime: "now" },
      // the network condition belongs to the network plugin, not the kubelet: left as it is
      { type: "NetworkUnavailable", status: "False" },
      never("DiskPressure"),
      never("PIDPressure"),
    ]);
    expect(silentNodeConditions(list, "later", "created")).toBeUndefined();
  });
});

describe("node lifecycle controller", () => {
  it("marks a node silent past the grace period unreachable, evicts pods later, untaints on return", async () => {
    const c = new FakeCluster();
    const ctl = createNodeLifecycleController({ gracePeriodMs: 40_000, defaultTolerationSeconds: 300 });
    node(c);
    lease(c);
    c.add("/pods", pod("web", { node: "n1", phase: "Running" }));
    const quick = pod("quick", { node: "n1", phase: "Running" });
    quick.spec!.tolerations = [
      {
        key: "node.kubernetes.io/unreachable",
        operator: "Exists",
        effect: "NoExecute",
        tolerationSeconds: 10,
      },
    ];
    c.add("/pods", quick);
    await c.run([ctl]);
    expect(c.get("/nodes", "n1")!.spec.taints).toBeUndefined();
    // a lease renewal within the grace period keeps it healthy
    c.now += 30_000;
    lease(c);
    await c.run([ctl]);
    c.now += 30_000;
    await c.run([ctl]);
    expect(c.get("/nodes", "n1")!.status.conditions[0].status).toBe("True");
    c.now += 11_000; // 41 s since the last renewal
    await c.run([ctl]);
    const n = c.get("/nodes", "n1")!;
    expect(n.status.conditions[0]).toMatchObject({
      type: "Ready",
      status: "Unknown",
      reason: "NodeStatusUnknown",
      message: "Kubelet stopped posting node status.",
    });
    expect(n.spec.taints.map((t: any) => `${t.key}:${t.effect}`)).toEqual([
      "node.kubernetes.io/unreachable:NoSchedule",
      "node.kubernetes.io/unreachable:NoExecute",
    ]);
    expect(c.get("/pods", "default/quick")!.metadata.deletionTimestamp).toBeUndefined();
    const requeue = c.enqueued.filter((e) => e.key === "n1").at(-1)!;
    expect(requeue.afterMs).toBeGreaterThan(9_000);
    expect(requeue.afterMs).toBeLessThanOrEqual(10_100);
    c.now += 10_000;
    await c.run([ctl]);
    expect(c.get("/pods", "default/quick")!.metadata.deletionTimestamp).toBeDefined();
    expect(
      c.get("/pods", "default/quick")!.status.conditions.find((x: any) => x.type === "DisruptionTarget"),
    ).toMatchObject({ reason: "DeletionByTaintManager" });
    expect(c.get("/pods", "default/web")!.metadata.deletionTimestamp).toBeUndefined();
    expect(c.events).toContainEqual({
      name: "quick",
      type: "Normal",
      reason: "TaintManagerEviction",
      message: "Marking for deletion Pod default/quick",
    });
    c.now += 290_000;
    await c.run([ctl]);
    expect(c.get("/pods", "default/web")!.metadata.deletionTimestamp).toBeDefined();
    // the kubelet comes back and posts Ready
    const back = structuredClone(c.get("/nodes", "n1")!);
    back.status.conditions[0] = {
      type: "Ready",
      status: "True",
      reason: "KubeletReady",
      lastHeartbeatTime: c.iso(),
      lastTransitionTime: c.iso(),
    };
    c.add("/nodes", back);
    await c.run([ctl]);
    expect(c.get("/nodes", "n1")!.spec.taints).toBeUndefined();
  });

  it("gives a node that never posted status Ready and pressure conditions Unknown, NodeStatusNeverUpdated", async () => {
    const c = new FakeCluster();
    const ctl = createNodeLifecycleController({ gracePeriodMs: 40_000 });
    const created = c.iso();
    c.add("/nodes", { metadata: { name: "bare" }, spec: {} });
    await c.run([ctl]);
    expect(c.get("/nodes", "bare")!.status?.conditions).toBeUndefined();
    // the startup grace period (60 s from creation), not the monitor's 40 s
    c.now += 41_000;
    await c.run([ctl]);
    expect(c.get("/nodes", "bare")!.status?.conditions).toBeUndefined();
    c.now += 20_000;
    await c.run([ctl]);
    const n = c.get("/nodes", "bare")!;
    const now = c.iso();
    expect(now).not.toBe(created);
    expect(n.status.conditions).toEqual(
      ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"].map((type) => ({
        type,
        status: "Unknown",
        reason: "NodeStatusNeverUpdated",
        message: "Kubelet never posted node status.",
        lastHeartbeatTime: created,
        lastTransitionTime: now,
      })),
    );
    expect(n.spec.taints.map((t: any) => `${t.key}:${t.effect}`)).toEqual([
      "node.kubernetes.io/unreachable:NoSchedule",
      "node.kubernetes.io/unreachable:NoExecute",
    ]);
    // written once: a later pass finds nothing to change
    const writes = c.writes.filter((w) => w.sub === "status").length;
    c.now += 60_000;
    await c.run([ctl]);
    expect(c.writes.filter((w) => w.sub === "status").length).toBe(writes);
  });

  it("judges a never-posted node from its creation: one created long before the controller saw it is marked at once", async () => {
    const c = new FakeCluster();
    const ctl = createNodeLifecycleController({ gracePeriodMs: 40_000 });
    c.add("/nodes", {
      metadata: { name: "old", creationTimestamp: new Date(c.now - 120_000).toISOString() },
      spec: {},
    });
    await c.run([ctl]);
    expect(c.get("/nodes", "old")!.status.conditions[0]).toMatchObject({
      type: "Ready",
      status: "Unknown",
      reason: "NodeStatusNeverUpdated",
    });
  });

  it("taints a NotReady node not-ready", async () => {
    const c = new FakeCluster();
    const ctl = createNodeLifecycleController();
    node(c, "n2", "False");
    await c.run([ctl]);
    expect(c.get("/nodes", "n2")!.spec.taints.map((t: any) => `${t.key}:${t.effect}`)).toEqual([
      "node.kubernetes.io/not-ready:NoSchedule",
      "node.kubernetes.io/not-ready:NoExecute",
    ]);
  });
});

describe("pod GC", () => {
  it("keeps the newest finished pods up to the threshold", () => {
    const pods = [1, 2, 3, 4].map((i) =>
      pod(`p${i}`, { phase: i % 2 ? "Succeeded" : "Failed", created: `2026-01-0${i}T00:00:00Z` }),
    );
    pods.push(pod("running", { phase: "Running", created: "2025-01-01T00:00:00Z" }));
    expect(terminatedToDelete(pods, 2).map((p) => p.metadata.name)).toEqual(["p1", "p2"]);
    expect(terminatedToDelete(pods, 4)).toEqual([]);
    expect(terminatedToDelete(pods, 0)).toEqual([]);
  });

  it("force-deletes pods of vanished nodes after the quarantine, and unscheduled terminating pods", async () => {
    const c = new FakeCluster();
    const gc = createPodGC({ quarantineMs: 40_000 });
    node(c, "alive");
    c.add("/pods", pod("ok", { node: "alive", phase: "Running" }));
    c.add("/pods", pod("lost", { node: "ghost", phase: "Running" }));
    const unscheduled = pod("unsched", {});
    unscheduled.metadata.deletionTimestamp = c.iso();
    unscheduled.metadata.finalizers = [];
    c.add("/pods", unscheduled);
    await c.run([gc]);
    expect(c.get("/pods", "default/unsched")).toBeUndefined();
    expect(c.get("/pods", "default/lost")).toBeDefined();
    c.now += 41_000;
    await c.run([gc]);
    expect(c.get("/pods", "default/lost")).toBeUndefined();
    expect(c.get("/pods", "default/ok")).toBeDefined();
    const del = c.writes.find((w) => w.verb === "delete" && w.key === "default/lost")!;
    expect(del.body).toMatchObject({ gracePeriodSeconds: 0 });
  });

  it("force-deletes terminating pods on a not-ready node once past their deadline", async () => {
    const c = new FakeCluster();
    const gc = createPodGC();
    node(c, "down", "Unknown");
    node(c, "up", "True");
    for (const [name, n] of [
      ["stuck", "down"],
      ["fine", "up"],
    ]) {
      const p = pod(name, { node: n, phase: "Running" });
      p.metadata.deletionTimestamp = new Date(c.now + 30_000).toISOString();
      p.metadata.deletionGracePeriodSeconds = 30;
      c.add("/pods", p);
    }
    await c.run([gc]);
    expect(c.get("/pods", "default/stuck")).toBeDefined();
    c.now += 31_000;
    await c.run([gc]);
    expect(c.get("/pods", "default/stuck")).toBeUndefined();
    expect(c.get("/pods", "default/fine")).toBeDefined();
  });
});
