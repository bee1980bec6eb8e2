import { describe, expect, it } from "vitest";
import { balancedScore } from "../../../durable-objects/scheduler/plugins/balancedallocation";
import { imageScore } from "../../../durable-objects/scheduler/plugins/imagelocality";
import { leastRequestedScore } from "../../../durable-objects/scheduler/plugins/noderesourcesfit";
import { makeNode, makePod, scoreWith } from "./helpers";

const MB = 1024 * 1024;

describe("NodeResourcesFit LeastAllocated score", () => {
  it("computes ((cap - req) * 100) / cap averaged over cpu and memory", () => {
    expect(leastRequestedScore(3000, 4000)).toBe(25);
    expect(leastRequestedScore(5000, 4000)).toBe(0);
    expect(leastRequestedScore(0, 0)).toBe(0);
    const nodes = [makeNode("a", { cpu: "4", memory: "8Gi" }), makeNode("b", { cpu: "4", memory: "8Gi" })];
    const bound = [makePod("x", { cpu: "2", memory: "4Gi", nodeName: "a" })];
    const s = scoreWith("NodeResourcesFit", makePod("p", { cpu: "1", memory: "2Gi" }), nodes, bound)!;
    // a: cpu (4000-3000)*100/4000 = 25, mem 25 -> 25; b: 75, 75 -> 75
    expect(s).toEqual({ a: 25, b: 75 });
  });

  it("charges the default 100m / 200MB for containers without requests", () => {
    const s = scoreWith("NodeResourcesFit", makePod("p"), [makeNode("a", { cpu: "1", memory: "1000Mi" })])!;
    // cpu: (1000-100)*100/1000 = 90; mem: (1000-200)*100/1000 = 80 -> 85
    expect(s.a).toBe(85);
  });
});

describe("NodeResourcesBalancedAllocation", () => {
  it("scores (1 - |cpu% - mem%| / 2) * 100 after placing the pod", () => {
    expect(balancedScore([0.5, 0.5])).toBe(100);
    expect(balancedScore([1, 0])).toBe(50);
    const nodes = [makeNode("a", { cpu: "4", memory: "4Gi" }), makeNode("b", { cpu: "4", memory: "4Gi" })];
    const bound = [makePod("x", { cpu: "2", nodeName: "b" })];
    const s = scoreWith(
      "NodeResourcesBalancedAllocation",
      makePod("p", { cpu: "1", memory: "1Gi" }),
      nodes,
      bound,
    )!;
    // a: cpu .25 mem .25 -> 100; b: cpu .75, mem .25 -> (1 - .25) * 100 = 75
    expect(s).toEqual({ a: 100, b: 75 });
  });

  it("skips best-effort pods", () => {
    expect(scoreWith("NodeResourcesBalancedAllocation", makePod("p"), [makeNode("a")])).toBeNull();
  });
});

describe("ImageLocality", () => {
  it("scales image size by spread between 23MB and 1000MB per container", () => {
    expect(imageScore(0, 1)).toBe(0);
    expect(imageScore(1000 * MB, 1)).toBe(100);
    expect(imageScore(2000 * MB, 1)).toBe(100);
    expect(imageScore(511.5 * MB, 1)).toBe(50);
  });

  it("prefers nodes that hold the image, matching normalized names", () => {
    const big = {
      names: ["docker.io/library/nginx:1.25", "docker.io/library/nginx@sha256:abc"],
      sizeBytes: 500 * MB,
    };
    const nodes = [makeNode("a", { images: [big] }), makeNode("b", { images: [big] }), makeNode("c")];
    const s = scoreWith("ImageLocality", makePod("p", { image: "nginx:1.25" }), nodes)!;
    // spread 2/3: 500MB * 2/3 = 333.33MB -> 100 * (333.33 - 23) / 977
    expect(s.a).toBe(Math.trunc((100 * (Math.trunc(500 * MB * (2 / 3)) - 23 * MB)) / (977 * MB)));
    expect(s.a).toBe(s.b);
    expect(s.c).toBe(0);
  });
});

describe("TaintToleration score", () => {
  it("prefers fewer untolerated PreferNoSchedule taints (reverse-normalized)", () => {
    const nodes = [
      makeNode("clean"),
      makeNode("one", { taints: [{ key: "a", effect: "PreferNoSchedule" }] }),
      makeNode("two", {
        taints: [
          { key: "a", effect: "PreferNoSchedule" },
          { key: "b", effect: "PreferNoSchedule" },
        ],
      }),
    ];
    expect(scoreWith("TaintToleration", makePod("p"), nodes)).toEqual({ clean: 100, one: 50, two: 0 });
    const tol = makePod("t", {
      spec: { tolerations: [{ key: "b", operator: "Exists", effect: "PreferNoSchedule" }] },
    });
    expect(scoreWith("TaintToleration", tol, nodes)).toEqual({ clean: 100, one: 0, two: 0 });
  });
});

describe("NodeAffinity score", () => {
  it("sums matching preferred term weights, normalized to 100", () => {
    const nodes = [
      makeNode("a", { labels: { disk: "ssd", zone: "z1" } }),
      makeNode("b", { labels: { disk: "ssd" } }),
      makeNode("c"),
    ];
    const pod = makePod("p", {
      spec: {
        affinity: {
          nodeAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 20,
                preference: { matchExpressions: [{ key: "disk", operator: "In", values: ["ssd"] }] },
              },
              { weight: 60, preference: { matchExpressions: [{ key: "zone", operator: "Exists" }] } },
            ],
          },
        },
      },
    });
    expect(scoreWith("NodeAffinity", pod, nodes)).toEqual({ a: 100, b: 25, c: 0 });
    expect(scoreWith("NodeAffinity", makePod("q"), nodes)).toBeNull();
  });
});
