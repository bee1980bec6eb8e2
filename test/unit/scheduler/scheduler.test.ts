import { describe, expect, it } from "vitest";
import { Snapshot } from "../../../durable-objects/scheduler/cache";
import { defaultProfile } from "../../../durable-objects/scheduler/framework";
import { newPodInfo } from "../../../durable-objects/scheduler/podinfo";
import { numFeasibleNodesToFind, Scheduler, schedulePod } from "../../../durable-objects/scheduler/scheduler";
import { frameworkOf, makeNode, makePod, seeded } from "./helpers";

function schedulerWith(nodes: ReturnType<typeof makeNode>[], bound: ReturnType<typeof makePod>[] = []) {
  const s = new Scheduler({ random: seeded(7) });
  for (const n of nodes) s.cache.addNode(n);
  for (const p of bound) s.cache.addPod(p);
  return s;
}

describe("default profile", () => {
  it("has upstream's plugins and score weights", () => {
    const w = Object.fromEntries(
      defaultProfile()
        .plugins.filter((p) => p.weight)
        .map((p) => [p.name, p.weight]),
    );
    expect(w).toEqual({
      TaintToleration: 3,
      NodeAffinity: 2,
      NodeResourcesFit: 1,
      PodTopologySpread: 2,
      InterPodAffinity: 2,
      NodeResourcesBalancedAllocation: 1,
      ImageLocality: 1,
    });
  });
});

describe("numFeasibleNodesToFind", () => {
  it("scores all nodes in small clusters and an adaptive share of large ones", () => {
    expect(numFeasibleNodesToFind(0, 50)).toBe(50);
    expect(numFeasibleNodesToFind(0, 100)).toBe(100);
    expect(numFeasibleNodesToFind(0, 300)).toBe(144);
    expect(numFeasibleNodesToFind(0, 199)).toBe(100);
    expect(numFeasibleNodesToFind(0, 1000)).toBe(420);
    expect(numFeasibleNodesToFind(0, 5000)).toBe(500);
    expect(numFeasibleNodesToFind(0, 10000)).toBe(500);
    expect(numFeasibleNodesToFind(30, 1000)).toBe(300);
    expect(numFeasibleNodesToFind(100, 1000)).toBe(1000);
  });

  it("stops filtering once enough feasible nodes are found and rotates the start", () => {
    const nodes = Array.from({ length: 1000 }, (_, i) => makeNode(`n${i}`));
    const snap = Snapshot.from(nodes);
    const fwk = frameworkOf("NodeResourcesFit");
    const cursor = { next: 0 };
    const r = schedulePod(fwk, newPodInfo(makePod("p")), snap, { cursor, random: seeded(1) });
    expect("node" in r && r.feasibleNodes).toBe(420);
    expect(cursor.next).toBe(420);
    schedulePod(fwk, newPodInfo(makePod("q")), snap, { cursor, random: seeded(1) });
    expect(cursor.next).toBe(840);
  });
});

describe("scheduleOne", () => {
  it("picks the least allocated node and assumes the pod there", () => {
    const s = schedulerWith(
      [makeNode("busy"), makeNode("idle")],
      [makePod("x", { cpu: "3", memory: "6Gi", nodeName: "busy" })],
    );
    const r = s.scheduleOne(makePod("p", { cpu: "500m", memory: "1Gi" }));
    expect("node" in r && r.node).toBe("idle");
    if (!("node" in r)) return;
    expect(s.cache.isAssumed(r.pod.key)).toBe(true);
    expect(s.cache.getNodeInfo("idle")!.requested.milliCPU).toBe(500);
    s.bindingDone(r.pod.key, false);
    expect(s.cache.getNodeInfo("idle")!.requested.milliCPU).toBe(0);
  });

  it("spreads identical pods (random tie-break, then LeastAllocated)", () => {
    const s = schedulerWith(["a", "b", "c"].map((n) => makeNode(n)));
    const placed: Record<string, number> = {};
    for (let i = 0; i < 30; i++) {
      const r = s.scheduleOne(makePod(`p${i}`, { cpu: "100m", memory: "100Mi" }));
      if ("node" in r) placed[r.node] = (placed[r.node] ?? 0) + 1;
    }
    expect(placed).toEqual({ a: 10, b: 10, c: 10 });
  });

  it("prefers a node by weighted preferred node affinity", () => {
    const s = schedulerWith([makeNode("a"), makeNode("b", { labels: { fast: "yes" } })]);
    const pod = makePod("p", {
      spec: {
        affinity: {
          nodeAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              { weight: 50, preference: { matchExpressions: [{ key: "fast", operator: "Exists" }] } },
            ],
          },
        },
      },
    });
    const r = s.scheduleOne(pod);
    expect("node" in r && r.node).toBe("b");
  });

  it("tries the nominated node first", () => {
    const s = schedulerWith(
      [makeNode("a"), makeNode("b"), makeNode("c")],
      [makePod("x", { cpu: "3", nodeName: "c" })],
    );
    const pod = makePod("p", { cpu: "100m" });
    pod.status = { nominatedNodeName: "c" };
    const r = s.scheduleOne(pod);
    expect("node" in r && r.node).toBe("c");
  });

  it("reports no nodes as a scheduler error", () => {
    const r = new Scheduler().scheduleOne(makePod("p"));
    expect(r).toMatchObject({ error: "no nodes available to schedule pods" });
  });
});

describe("FitError messages", () => {
  it("matches upstream's example wording", () => {
    const s = schedulerWith([
      makeNode("cp", { taints: [{ key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" }] }),
      makeNode("w1"),
      makeNode("w2"),
    ]);
    const r = s.scheduleOne(makePod("p", { spec: { nodeSelector: { disk: "ssd" } } }));
    expect("message" in r && r.message).toBe(
      "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, " +
        "2 node(s) didn't match Node's node affinity/selector. " +
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
    );
  });

  it("aggregates several reasons per node and reports no preemption victims", () => {
    const s = schedulerWith([
      makeNode("a", { cpu: "1", memory: "1Gi" }),
      makeNode("b", { cpu: "1", memory: "4Gi" }),
    ]);
    const r = s.scheduleOne(makePod("p", { cpu: "2", memory: "2Gi" }));
    expect("message" in r && r.message).toBe(
      "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu. " +
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.",
    );
  });

  it("uses each plugin's reason", () => {
    const hp = (name: string, nodeName?: string) =>
      makePod(name, { nodeName, containers: [{ name: "c", ports: [{ containerPort: 80, hostPort: 80 }] }] });
    const s = schedulerWith(
      [makeNode("cordoned", { unschedulable: true }), makeNode("ports"), makeNode("full", { pods: "1" })],
      [hp("x", "ports"), makePod("y", { nodeName: "full" })],
    );
    const r = s.scheduleOne(hp("p"));
    expect("message" in r && r.message).toBe(
      "0/3 nodes are available: 1 Too many pods, 1 node(s) didn't have free ports for the requested pod ports, " +
        "1 node(s) were unschedulable. preemption: 0/3 nodes are available: " +
        "1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.",
    );
  });

  it("reports a pod that may not preempt", () => {
    const s = schedulerWith([makeNode("a", { cpu: "1" })]);
    const r = s.scheduleOne(makePod("p", { cpu: "2", spec: { preemptionPolicy: "Never" } }));
    expect("message" in r && r.message).toBe(
      "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.",
    );
  });

  it("reports the requested node name and spread constraint reasons", () => {
    const s = schedulerWith([makeNode("a"), makeNode("b")]);
    const r = s.scheduleOne(makePod("p", { nodeName: "zzz" }));
    expect("message" in r && r.message).toBe(
      "0/2 nodes are available: 2 node(s) didn't match the requested node name. " +
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
    );
  });
});

describe("DefaultPreemption", () => {
  it("nominates a node and picks the cheapest victims", () => {
    const s = schedulerWith(
      [makeNode("a", { cpu: "2" }), makeNode("b", { cpu: "2" })],
      [
        makePod("a-low", { cpu: "1", priority: 10, nodeName: "a" }),
        makePod("a-mid", { cpu: "1", priority: 100, nodeName: "a" }),
        makePod("b-high", { cpu: "1", priority: 500, nodeName: "b" }),
        makePod("b-mid", { cpu: "1", priority: 50, nodeName: "b" }),
      ],
    );
    const r = s.scheduleOne(makePod("p", { cpu: "1", priority: 1000 }));
    expect("nominatedNodeName" in r && r.nominatedNodeName).toBe("a");
    if (!("victims" in r)) return;
    expect(r.victims!.map((v) => v.name)).toEqual(["a-low"]);
    expect(r.message).toBe("0/2 nodes are available: 2 Insufficient cpu.");
  });

  it("does not evict pods of equal or higher priority", () => {
    const s = schedulerWith(
      [makeNode("a", { cpu: "1" })],
      [makePod("x", { cpu: "1", priority: 5, nodeName: "a" })],
    );
    const r = s.scheduleOne(makePod("p", { cpu: "1", priority: 5 }));
    expect("victims" in r && r.victims).toBeFalsy();
    expect("message" in r && r.message).toContain("1 No preemption victims found for incoming pod.");
  });

  it("reports filter reasons that remain after removing every lower-priority pod", () => {
    const s = schedulerWith(
      [makeNode("a", { cpu: "2" })],
      [makePod("x", { cpu: "1", priority: 1, nodeName: "a" })],
    );
    const r = s.scheduleOne(makePod("p", { cpu: "4", priority: 10 }));
    expect("message" in r && r.message).toBe(
      "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Insufficient cpu.",
    );
  });

  it("reprieves the more important pods that can stay", () => {
    const s = schedulerWith(
      [makeNode("a", { cpu: "2" })],
      [
        makePod("v1", { cpu: "1", priority: 1, nodeName: "a", labels: { app: "web" } }),
        makePod("v2", { cpu: "1", priority: 2, nodeName: "a", labels: { app: "db" } }),
      ],
    );
    const r = s.scheduleOne(makePod("p", { cpu: "1", priority: 10 }));
    expect("victims" in r && r.victims!.map((v) => v.name)).toEqual(["v1"]);
  });
});

describe("PreFilter node restriction (DaemonSet-style matchFields)", () => {
  const pinned = (node: string, cpu = "100m") =>
    makePod("ds", {
      cpu,
      spec: {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchFields: [{ key: "metadata.name", operator: "In", values: [node] }] },
              ],
            },
          },
        },
      },
    });

  it("only evaluates the named node and counts the rest as not satisfying NodeAffinity", () => {
    const s = schedulerWith([makeNode("a", { cpu: "1" }), makeNode("b"), makeNode("c")]);
    expect("node" in s.scheduleOne(pinned("b")) && "b").toBe("b");
    const r = s.scheduleOne(pinned("a", "2"));
    expect("message" in r && r.message).toBe(
      "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. " +
        "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, " +
        "2 Preemption is not helpful for scheduling.",
    );
  });

  it("reports a PreFilter rejection once for every node", () => {
    const s = schedulerWith([makeNode("a"), makeNode("b")]);
    const pod = pinned("a");
    pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields.push(
      {
        key: "metadata.name",
        operator: "In",
        values: ["b"],
      },
    );
    const r = s.scheduleOne(pod);
    expect("message" in r && r.message).toBe(
      "0/2 nodes are available: pod affinity terms conflict. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
    );
  });
});
