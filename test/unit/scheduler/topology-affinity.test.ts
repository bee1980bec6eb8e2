import { describe, expect, it } from "vitest";
import { filterWith, makeNode, makePod, scoreWith } from "./helpers";

const ZONE = "topology.kubernetes.io/zone";
const zoneNodes = () => [
  makeNode("a1", { labels: { [ZONE]: "a" } }),
  makeNode("a2", { labels: { [ZONE]: "a" } }),
  makeNode("b1", { labels: { [ZONE]: "b" } }),
  makeNode("nolabel"),
];
const web = (name: string, nodeName?: string) => makePod(name, { labels: { app: "web" }, nodeName });
const spread = (name: string, when = "DoNotSchedule", extra: Record<string, unknown> = {}) =>
  makePod(name, {
    labels: { app: "web" },
    spec: {
      topologySpreadConstraints: [
        {
          maxSkew: 1,
          topologyKey: ZONE,
          whenUnsatisfiable: when,
          labelSelector: { matchLabels: { app: "web" } },
          ...extra,
        },
      ],
    },
  });

describe("PodTopologySpread filter", () => {
  it("enforces maxSkew across zones", () => {
    const r = filterWith("PodTopologySpread", spread("p"), zoneNodes(), [web("x", "a1")]);
    expect(r.a1?.reasons).toEqual(["node(s) didn't match pod topology spread constraints"]);
    expect(r.a1?.code).toBe("Unschedulable");
    expect(r.a2?.code).toBe("Unschedulable");
    expect(r.b1).toBeUndefined();
  });

  it("rejects nodes missing the topology key as unresolvable", () => {
    const r = filterWith("PodTopologySpread", spread("p"), zoneNodes());
    expect(r.nolabel?.code).toBe("UnschedulableAndUnresolvable");
    expect(r.nolabel?.reasons).toEqual([
      "node(s) didn't match pod topology spread constraints (missing required label)",
    ]);
    expect(r.a1).toBeUndefined();
  });

  it("ignores pods of other namespaces or labels", () => {
    const other = makePod("o", { ns: "other", labels: { app: "web" }, nodeName: "a1" });
    const db = makePod("d", { labels: { app: "db" }, nodeName: "a1" });
    const r = filterWith("PodTopologySpread", spread("p"), zoneNodes(), [other, db]);
    expect(r.a1).toBeUndefined();
  });

  it("treats the global minimum as 0 when fewer domains than minDomains exist", () => {
    const bound = [web("x", "a1"), web("y", "b1")];
    expect(filterWith("PodTopologySpread", spread("p"), zoneNodes(), bound).a1).toBeUndefined();
    const r = filterWith(
      "PodTopologySpread",
      spread("p", "DoNotSchedule", { minDomains: 3 }),
      zoneNodes(),
      bound,
    );
    expect(r.a1?.code).toBe("Unschedulable");
    expect(r.b1?.code).toBe("Unschedulable");
  });

  it("honours node affinity when counting domains (nodeAffinityPolicy Honor)", () => {
    const pod = spread("p");
    pod.spec.nodeSelector = { [ZONE]: "a" };
    // Zone b is not eligible for this pod, so it doesn't hold the minimum at 0.
    const r = filterWith("PodTopologySpread", pod, zoneNodes(), [web("x", "a1"), web("y", "a2")]);
    expect(r.a1).toBeUndefined();
  });
});

describe("PodTopologySpread score", () => {
  it("prefers the emptier domain for ScheduleAnyway constraints", () => {
    const s = scoreWith("PodTopologySpread", spread("p", "ScheduleAnyway"), zoneNodes().slice(0, 3), [
      web("x", "a1"),
      web("y", "a2"),
    ])!;
    expect(s.b1).toBe(100);
    expect(s.a1).toBeLessThan(s.b1);
    expect(s.a1).toBe(s.a2);
  });

  it("gives nodes without the key a zero score", () => {
    const s = scoreWith("PodTopologySpread", spread("p", "ScheduleAnyway"), zoneNodes(), [web("x", "a1")])!;
    expect(s.nolabel).toBe(0);
    expect(s.b1).toBe(100);
  });
});

const HOST = "kubernetes.io/hostname";
const affinityPod = (
  name: string,
  kind: "podAffinity" | "podAntiAffinity",
  key = HOST,
  labels = { app: "web" },
) =>
  makePod(name, {
    labels,
    spec: {
      affinity: {
        [kind]: {
          requiredDuringSchedulingIgnoredDuringExecution: [
            { topologyKey: key, labelSelector: { matchLabels: { app: "web" } } },
          ],
        },
      },
    },
  });

describe("InterPodAffinity filter", () => {
  it("required affinity needs a matching pod in the same topology", () => {
    const nodes = zoneNodes();
    const r = filterWith("InterPodAffinity", affinityPod("p", "podAffinity", ZONE, { app: "other" }), nodes, [
      web("x", "a1"),
    ]);
    expect(r.a1).toBeUndefined();
    expect(r.a2).toBeUndefined();
    expect(r.b1?.reasons).toEqual(["node(s) didn't match pod affinity rules"]);
    expect(r.b1?.code).toBe("UnschedulableAndUnresolvable");
    expect(r.nolabel?.code).toBe("UnschedulableAndUnresolvable");
  });

  it("lets the first pod of a self-affine group land anywhere", () => {
    const r = filterWith("InterPodAffinity", affinityPod("p", "podAffinity", ZONE), zoneNodes());
    expect(r.a1).toBeUndefined();
    expect(r.b1).toBeUndefined();
    const notSelf = filterWith(
      "InterPodAffinity",
      affinityPod("p", "podAffinity", ZONE, { app: "x" }),
      zoneNodes(),
    );
    expect(notSelf.a1?.code).toBe("UnschedulableAndUnresolvable");
  });

  it("required anti-affinity keeps the pod away from matching pods", () => {
    const r = filterWith("InterPodAffinity", affinityPod("p", "podAntiAffinity"), zoneNodes(), [
      web("x", "a1"),
    ]);
    expect(r.a1?.reasons).toEqual(["node(s) didn't match pod anti-affinity rules"]);
    expect(r.a1?.code).toBe("Unschedulable");
    expect(r.a2).toBeUndefined();
  });

  it("existing pods' anti-affinity rejects the incoming pod symmetrically", () => {
    const existing = affinityPod("x", "podAntiAffinity", ZONE, { app: "db" });
    existing.spec.nodeName = "a1";
    const r = filterWith("InterPodAffinity", web("p"), zoneNodes(), [existing]);
    expect(r.a1?.reasons).toEqual(["node(s) didn't satisfy existing pods anti-affinity rules"]);
    expect(r.a2?.code).toBe("Unschedulable");
    expect(r.b1).toBeUndefined();
  });

  it("only looks at the term's namespaces", () => {
    const other = makePod("x", { ns: "other", labels: { app: "web" }, nodeName: "a1" });
    const r = filterWith("InterPodAffinity", affinityPod("p", "podAntiAffinity"), zoneNodes(), [other]);
    expect(r.a1).toBeUndefined();
  });
});

describe("InterPodAffinity score", () => {
  it("scores preferred affinity and anti-affinity by weight, min-max normalized", () => {
    const pod = makePod("p", {
      spec: {
        affinity: {
          podAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 10,
                podAffinityTerm: { topologyKey: ZONE, labelSelector: { matchLabels: { app: "web" } } },
              },
            ],
          },
          podAntiAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 5,
                podAffinityTerm: { topologyKey: HOST, labelSelector: { matchLabels: { app: "web" } } },
              },
            ],
          },
        },
      },
    });
    const s = scoreWith("InterPodAffinity", pod, zoneNodes().slice(0, 3), [web("x", "a1")])!;
    // a1: +10 -5 = 5; a2: +10; b1: 0 -> normalized: a2 100, a1 50, b1 0
    expect(s).toEqual({ a1: 50, a2: 100, b1: 0 });
  });

  it("skips when neither the pod nor existing pods have affinity", () => {
    expect(scoreWith("InterPodAffinity", makePod("p"), zoneNodes(), [web("x", "a1")])).toBeNull();
  });
});

import { Snapshot } from "../../../durable-objects/scheduler/cache";
import { CycleState, Framework } from "../../../durable-objects/scheduler/framework";
import { defaultRegistry } from "../../../durable-objects/scheduler/plugins/index";
import { newPodInfo } from "../../../durable-objects/scheduler/podinfo";

describe("PodTopologySpread system defaults", () => {
  it("spreads constraint-less pods by hostname and zone when a sibling selector is known", () => {
    const fwk = new Framework(
      {
        schedulerName: "t",
        plugins: [
          {
            name: "PodTopologySpread",
            weight: 2,
            args: { defaultSelector: () => ({ matchLabels: { app: "web" } }) },
          },
        ],
      },
      defaultRegistry(),
    );
    const nodes = [...zoneNodes()];
    const snap = Snapshot.from(nodes, [web("x", "a1"), web("y", "a1"), web("z", "a2")]);
    const state = new CycleState(snap, fwk);
    const pod = newPodInfo(web("p"));
    const pl = fwk.plugins[0];
    expect(pl.preScore!(state, pod, snap.nodeInfoList)).toBeUndefined();
    const scores = snap.nodeInfoList.map((n) => ({ name: n.name, score: pl.score!(state, pod, n) }));
    pl.normalizeScore!(state, pod, scores);
    const by = Object.fromEntries(scores.map((s) => [s.name, s.score]));
    // Nodes without a zone are still scored on hostname (no zone key required for defaults).
    expect(by.nolabel).toBeGreaterThan(by.a1);
    expect(by.b1).toBeGreaterThan(by.a2);
    expect(by.a2).toBeGreaterThan(by.a1);
    // Without a selector there is nothing to spread.
    const plain = new Framework(
      { schedulerName: "t", plugins: [{ name: "PodTopologySpread" }] },
      defaultRegistry(),
    );
    expect(plain.plugins[0].preScore!(new CycleState(snap, plain), pod, snap.nodeInfoList)?.code).toBe(
      "Skip",
    );
  });
});
