import { describe, expect, it } from "vitest";
import { normalizeImageName, SchedulerCache, Snapshot } from "../../../durable-objects/scheduler/cache";
import { newPodInfo } from "../../../durable-objects/scheduler/podinfo";
import { SchedulingQueue } from "../../../durable-objects/scheduler/queue";
import { makeNode, makePod } from "./helpers";

describe("SchedulerCache", () => {
  it("accounts bound pods, assumed pods and their removal", () => {
    const c = new SchedulerCache();
    c.addNode(makeNode("n"));
    const bound = makePod("b", { cpu: "1", memory: "1Gi", nodeName: "n" });
    c.addPod(bound);
    const pending = makePod("p", { cpu: "500m" });
    const info = newPodInfo({ ...pending, spec: { ...pending.spec, nodeName: "n" } });
    c.assumePod(info, "n");
    expect(c.getNodeInfo("n")!.requested.milliCPU).toBe(1500);
    expect(c.isAssumed(info.key)).toBe(true);
    expect(() => c.assumePod(info, "n")).toThrow(/can't be assumed/);
    // The store confirms the binding: no double counting.
    c.addPod({ ...pending, spec: { ...pending.spec, nodeName: "n" } });
    expect(c.isAssumed(info.key)).toBe(false);
    expect(c.getNodeInfo("n")!.requested.milliCPU).toBe(1500);
    expect(c.getNodeInfo("n")!.pods.length).toBe(2);
    c.removePod(bound);
    expect(c.getNodeInfo("n")!.requested.milliCPU).toBe(500);
    expect(c.getNodeInfo("n")!.requested.memory).toBe(0);
  });

  it("forgets an assumed pod whose binding failed, and expires confirmed-late ones with a TTL", () => {
    const c = new SchedulerCache();
    c.addNode(makeNode("n"));
    const a = newPodInfo(makePod("a", { cpu: "1" }));
    c.assumePod(a, "n");
    c.forgetPod(a.key);
    expect(c.getNodeInfo("n")!.pods).toHaveLength(0);
    c.assumedPodTTLMs = 30_000;
    c.assumePod(a, "n");
    c.finishBinding(a.key, 1000);
    expect(c.cleanupAssumedPods(20_000)).toEqual([]);
    expect(c.cleanupAssumedPods(31_000)).toEqual([a.key]);
    expect(c.podCount()).toBe(0);
  });

  it("keeps pods of a deleted node until they are removed", () => {
    const c = new SchedulerCache();
    c.addNode(makeNode("n"));
    const p = makePod("p", { nodeName: "n" });
    c.addPod(p);
    c.removeNode("n");
    const s = new Snapshot();
    c.updateSnapshot(s);
    expect(s.numNodes()).toBe(0);
    expect(c.getNodeInfo("n")?.pods).toHaveLength(1);
    c.removePod(p);
    expect(c.getNodeInfo("n")).toBeUndefined();
  });

  it("tracks how many nodes hold each image", () => {
    const img = { names: ["docker.io/library/nginx:1.25"], sizeBytes: 100 };
    const c = new SchedulerCache();
    c.addNode(makeNode("a", { images: [img] }));
    c.addNode(makeNode("b", { images: [img] }));
    expect(c.getNodeInfo("a")!.imageStates.get("nginx:1.25")?.numNodes).toBe(2);
    c.removeNode("b");
    expect(c.getNodeInfo("a")!.imageStates.get("nginx:1.25")?.numNodes).toBe(1);
    expect(normalizeImageName("nginx")).toBe("nginx:latest");
    expect(normalizeImageName("docker.io/library/nginx")).toBe("nginx:latest");
    expect(normalizeImageName("localhost:5000/app")).toBe("localhost:5000/app:latest");
    expect(normalizeImageName("quay.io/x/y:v1")).toBe("quay.io/x/y:v1");
  });

  it("snapshots copy only changed nodes and are isolated from later cache changes", () => {
    const c = new SchedulerCache();
    c.addNode(makeNode("a"));
    c.addNode(makeNode("b"));
    const s = new Snapshot();
    c.updateSnapshot(s);
    const a0 = s.get("a")!;
    const b0 = s.get("b")!;
    c.addPod(makePod("p", { cpu: "1", nodeName: "a" }));
    expect(s.get("a")!.requested.milliCPU).toBe(0);
    c.updateSnapshot(s);
    expect(s.get("a")).not.toBe(a0);
    expect(s.get("a")!.requested.milliCPU).toBe(1000);
    expect(s.get("b")).toBe(b0);
    expect(s.nodeInfoList.map((n) => n.name)).toEqual(["a", "b"]);
    c.addNode(makeNode("c"));
    c.updateSnapshot(s);
    expect(s.numNodes()).toBe(3);
    expect(s.get("b")).toBe(b0);
  });

  it("keeps the lists of nodes with (anti-)affinity pods current as pods come and go", () => {
    const c = new SchedulerCache();
    c.addNode(makeNode("a"));
    c.addNode(makeNode("b"));
    const s = new Snapshot();
    c.updateSnapshot(s);
    c.addPod(makePod("plain", { nodeName: "a" }));
    c.updateSnapshot(s);
    expect(s.havePodsWithAffinityList).toEqual([]);
    const term = { labelSelector: { matchLabels: { app: "x" } }, topologyKey: "kubernetes.io/hostname" };
    const anti = makePod("anti", {
      nodeName: "b",
      spec: { affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term] } } },
    });
    c.addPod(anti);
    c.updateSnapshot(s);
    expect(s.havePodsWithAffinityList.map((n) => n.name)).toEqual(["b"]);
    expect(s.havePodsWithRequiredAntiAffinityList.map((n) => n.name)).toEqual(["b"]);
    // a change elsewhere keeps them; the list holds the snapshot's current copy of b
    c.addPod(makePod("plain2", { nodeName: "a" }));
    c.updateSnapshot(s);
    expect(s.havePodsWithAffinityList[0]).toBe(s.get("b"));
    c.addPod(makePod("plain3", { nodeName: "b" }));
    c.updateSnapshot(s);
    expect(s.havePodsWithAffinityList[0]).toBe(s.get("b"));
    expect(s.havePodsWithAffinityList[0]!.pods.length).toBe(2);
    c.removePod(anti);
    c.updateSnapshot(s);
    expect(s.havePodsWithAffinityList).toEqual([]);
    expect(s.havePodsWithRequiredAntiAffinityList).toEqual([]);
  });
});

describe("SchedulingQueue", () => {
  it("pops by priority, then creation time", () => {
    const q = new SchedulingQueue();
    q.add(makePod("low", { priority: 1, created: "2026-01-01T00:00:00Z" }), 0);
    q.add(makePod("late", { priority: 10, created: "2026-01-01T00:00:05Z" }), 0);
    q.add(makePod("early", { priority: 10, created: "2026-01-01T00:00:01Z" }), 0);
    expect([q.pop(0), q.pop(0), q.pop(0)].map((p) => p?.info.name)).toEqual(["early", "late", "low"]);
    expect(q.pop(0)).toBeUndefined();
  });

  it("backs off exponentially from 1s to 10s", () => {
    const q = new SchedulingQueue();
    expect([1, 2, 3, 4, 5, 6].map((a) => q.backoffDuration(a))).toEqual([
      1000, 2000, 4000, 8000, 10000, 10000,
    ]);
  });

  it("parks unschedulable pods until a cluster event, honouring backoff", () => {
    const q = new SchedulingQueue();
    q.add(makePod("p"), 0);
    const p = q.pop(0)!;
    q.requeueFailed(p, 100);
    expect(q.where(p.key)).toBe("unschedulable");
    expect(q.pop(5000)).toBeUndefined();
    // Event while still backing off (1s after the failure at t=100): goes to backoffQ.
    q.moveAllToActiveOrBackoff("NodeAdd", 500);
    expect(q.where(p.key)).toBe("backoff");
    expect(q.pop(900)).toBeUndefined();
    expect(q.nextWakeAt(900)).toBe(1100);
    const again = q.pop(1100)!;
    expect(again.attempts).toBe(2);
    q.requeueFailed(again, 2000);
    q.moveAllToActiveOrBackoff("AssignedPodDelete", 5000);
    expect(q.where(p.key)).toBe("active");
  });

  it("retries parked pods after 5 minutes", () => {
    const q = new SchedulingQueue();
    q.add(makePod("p"), 0);
    const p = q.pop(0)!;
    q.requeueFailed(p, 0);
    expect(q.flushUnschedulableLeftover(299_999)).toBe(0);
    expect(q.nextWakeAt(1000)).toBe(300_000);
    expect(q.flushUnschedulableLeftover(300_000)).toBe(1);
    expect(q.pop(300_000)?.key).toBe(p.key);
  });

  it("sends errors, and failures racing a cluster event, to backoffQ", () => {
    const q = new SchedulingQueue();
    q.add(makePod("a"), 0);
    q.add(makePod("b"), 0);
    const a = q.pop(0)!;
    q.requeueFailed(a, 0, { error: true });
    expect(q.where(a.key)).toBe("backoff");
    const b = q.pop(0)!;
    q.moveAllToActiveOrBackoff("NodeUpdate", 0); // arrives while b is being scheduled
    q.requeueFailed(b, 0);
    expect(q.where(b.key)).toBe("backoff");
  });

  it("holds pods with scheduling gates until an update removes them", () => {
    const q = new SchedulingQueue();
    const pod = makePod("g", { spec: { schedulingGates: [{ name: "wait" }] } });
    q.add(pod, 0);
    q.moveAllToActiveOrBackoff("NodeAdd", 0);
    expect(q.pop(0)).toBeUndefined();
    q.update({ ...pod, spec: { ...pod.spec, schedulingGates: [] } }, 10);
    expect(q.pop(10)?.info.name).toBe("g");
  });

  it("drops deleted pods", () => {
    const q = new SchedulingQueue();
    const pod = makePod("d");
    q.add(pod, 0);
    q.delete(pod);
    expect(q.pop(0)).toBeUndefined();
    expect(q.lengths()).toEqual({ active: 0, backoff: 0, unschedulable: 0, inFlight: 0 });
  });
});
