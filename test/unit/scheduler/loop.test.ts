import { describe, expect, it } from "vitest";
import { SchedulingLoop } from "../../../durable-objects/scheduler/loop";
import { makeNode, makePod, seeded } from "./helpers";

describe("SchedulingLoop", () => {
  it("binds pending pods and ignores pods for other schedulers", () => {
    const loop = new SchedulingLoop({ random: seeded(1) });
    loop.onNode("ADDED", makeNode("n1"), 0);
    loop.onPod("ADDED", makePod("a"), 0);
    loop.onPod("ADDED", makePod("b", { spec: { schedulerName: "other" } }), 0);
    const actions = loop.runCycles(0);
    expect(actions).toHaveLength(1);
    const a = actions[0];
    expect(a.kind).toBe("bind");
    if (a.kind !== "bind") return;
    expect(a.binding.target).toEqual({ kind: "Node", name: "n1" });
    expect(a.event.note).toBe("Successfully assigned default/a to n1");
    loop.bindingResult(a.key, true, 10);
    // The store echoes the bound pod: it stays accounted once.
    loop.onPod("MODIFIED", { ...a.pod, spec: { ...a.pod.spec, nodeName: "n1" } }, 20);
    expect(loop.scheduler.cache.getNodeInfo("n1")!.pods).toHaveLength(1);
    expect(loop.queue.lengths()).toEqual({ active: 0, backoff: 0, unschedulable: 0, inFlight: 0 });
  });

  it("reports unschedulable pods and retries them when a node arrives", () => {
    const loop = new SchedulingLoop({ random: seeded(1) });
    loop.onNode("ADDED", makeNode("small", { cpu: "1" }), 0);
    loop.onPod("ADDED", makePod("big", { cpu: "2" }), 0);
    const [a] = loop.runCycles(0);
    expect(a.kind).toBe("unschedulable");
    if (a.kind !== "unschedulable") return;
    expect(a.message).toBe(
      "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
    );
    expect(a.event.reason).toBe("FailedScheduling");
    expect((a.status!.conditions as { reason: string }[])[0].reason).toBe("Unschedulable");
    expect(loop.runCycles(5000)).toHaveLength(0);
    loop.onNode("ADDED", makeNode("large", { cpu: "8" }), 6000);
    const [b] = loop.runCycles(6000);
    expect(b.kind === "bind" && b.nodeName).toBe("large");
  });

  it("retries a failed binding with backoff", () => {
    const loop = new SchedulingLoop({ random: seeded(1) });
    loop.onNode("ADDED", makeNode("n1", { cpu: "1" }), 0);
    loop.onPod("ADDED", makePod("a", { cpu: "1" }), 0);
    const [a] = loop.runCycles(0);
    loop.bindingResult(a.key, false, 100);
    expect(loop.scheduler.cache.getNodeInfo("n1")!.requested.milliCPU).toBe(0);
    expect(loop.runCycles(500)).toHaveLength(0);
    expect(loop.nextWakeAt(500)).toBe(1100);
    expect(loop.runCycles(1100)[0].kind).toBe("bind");
  });

  it("returns preemption victims with their events and nominates the node", () => {
    const loop = new SchedulingLoop({ random: seeded(1) });
    loop.onNode("ADDED", makeNode("n1", { cpu: "1" }), 0);
    loop.onPod("ADDED", makePod("low", { cpu: "1", priority: 1, nodeName: "n1" }), 0);
    loop.onPod("ADDED", makePod("high", { cpu: "1", priority: 100 }), 0);
    const [a] = loop.runCycles(0);
    expect(a.kind).toBe("unschedulable");
    if (a.kind !== "unschedulable") return;
    expect(a.nominatedNodeName).toBe("n1");
    expect(a.victims.map((v) => v.pod.metadata.name)).toEqual(["low"]);
    expect(a.victims[0].event.reason).toBe("Preempted");
    expect(a.status!.nominatedNodeName).toBe("n1");
    // The victim's deletion brings the preemptor back.
    loop.onPod("DELETED", a.victims[0].pod, 10);
    const [b] = loop.runCycles(2000);
    expect(b.kind === "bind" && b.nodeName).toBe("n1");
  });

  it("treats terminal pods as gone", () => {
    const loop = new SchedulingLoop();
    loop.onNode("ADDED", makeNode("n1", { cpu: "1" }), 0);
    const done = makePod("done", { cpu: "1", nodeName: "n1" });
    loop.onPod("ADDED", done, 0);
    expect(loop.scheduler.cache.getNodeInfo("n1")!.requested.milliCPU).toBe(1000);
    loop.onPod("MODIFIED", { ...done, status: { phase: "Succeeded" } }, 1);
    expect(loop.scheduler.cache.getNodeInfo("n1")!.requested.milliCPU).toBe(0);
  });

  it("stops at the pod limit", () => {
    const loop = new SchedulingLoop();
    loop.onNode("ADDED", makeNode("n1"), 0);
    for (let i = 0; i < 5; i++) loop.onPod("ADDED", makePod(`p${i}`), 0);
    expect(loop.runCycles(0, { maxPods: 3 })).toHaveLength(3);
    expect(loop.runCycles(0)).toHaveLength(2);
  });
});
