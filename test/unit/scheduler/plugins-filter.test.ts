import { describe, expect, it } from "vitest";
import { computePodRequests } from "../../../durable-objects/scheduler/podinfo";
import { filterWith, makeNode, makePod } from "./helpers";

const reasons = (m: Record<string, { reasons: string[]; code: string } | undefined>) =>
  Object.fromEntries(Object.entries(m).map(([k, v]) => [k, v ? `${v.code}: ${v.reasons.join(", ")}` : "ok"]));

describe("NodeUnschedulable", () => {
  it("rejects cordoned nodes unless the pod tolerates the unschedulable taint", () => {
    const nodes = [makeNode("a", { unschedulable: true }), makeNode("b")];
    expect(reasons(filterWith("NodeUnschedulable", makePod("p"), nodes))).toEqual({
      a: "UnschedulableAndUnresolvable: node(s) were unschedulable",
      b: "ok",
    });
    const tolerant = makePod("t", {
      spec: {
        tolerations: [{ key: "node.kubernetes.io/unschedulable", operator: "Exists", effect: "NoSchedule" }],
      },
    });
    expect(reasons(filterWith("NodeUnschedulable", tolerant, nodes)).a).toBe("ok");
  });
});

describe("NodeName", () => {
  it("only fits the named node", () => {
    const r = reasons(
      filterWith("NodeName", makePod("p", { nodeName: "b" }), [makeNode("a"), makeNode("b")]),
    );
    expect(r).toEqual({
      a: "UnschedulableAndUnresolvable: node(s) didn't match the requested node name",
      b: "ok",
    });
  });
});

describe("NodeAffinity filter", () => {
  const nodes = [
    makeNode("a", { labels: { disk: "ssd", gen: "5", zone: "z1" } }),
    makeNode("b", { labels: { disk: "hdd", gen: "3" } }),
    makeNode("c", { labels: {} }),
  ];
  const fits = (spec: Record<string, unknown>) => {
    const r = filterWith("NodeAffinity", makePod("p", { spec }), nodes);
    return Object.keys(r).filter((k) => !r[k]);
  };
  const req = (...terms: unknown[]) => ({
    affinity: {
      nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } },
    },
  });

  it("applies nodeSelector", () => {
    expect(fits({ nodeSelector: { disk: "ssd" } })).toEqual(["a"]);
    const r = filterWith("NodeAffinity", makePod("p", { spec: { nodeSelector: { disk: "nvme" } } }), nodes);
    expect(r.a?.reasons).toEqual(["node(s) didn't match Node's node affinity/selector"]);
    expect(r.a?.code).toBe("UnschedulableAndUnresolvable");
  });

  it("supports every operator", () => {
    expect(
      fits(req({ matchExpressions: [{ key: "disk", operator: "In", values: ["ssd", "hdd"] }] })),
    ).toEqual(["a", "b"]);
    expect(fits(req({ matchExpressions: [{ key: "disk", operator: "NotIn", values: ["ssd"] }] }))).toEqual([
      "b",
      "c",
    ]);
    expect(fits(req({ matchExpressions: [{ key: "zone", operator: "Exists" }] }))).toEqual(["a"]);
    expect(fits(req({ matchExpressions: [{ key: "zone", operator: "DoesNotExist" }] }))).toEqual(["b", "c"]);
    expect(fits(req({ matchExpressions: [{ key: "gen", operator: "Gt", values: ["4"] }] }))).toEqual(["a"]);
    expect(fits(req({ matchExpressions: [{ key: "gen", operator: "Lt", values: ["4"] }] }))).toEqual(["b"]);
  });

  it("ORs terms, ANDs expressions, and matches metadata.name fields", () => {
    expect(
      fits(
        req(
          {
            matchExpressions: [
              { key: "disk", operator: "In", values: ["ssd"] },
              { key: "gen", operator: "Lt", values: ["4"] },
            ],
          },
          { matchFields: [{ key: "metadata.name", operator: "In", values: ["c"] }] },
        ),
      ),
    ).toEqual(["c"]);
    expect(fits(req({ matchFields: [{ key: "metadata.name", operator: "NotIn", values: ["a"] }] }))).toEqual([
      "b",
      "c",
    ]);
  });

  it("an empty term matches nothing; nodeSelector and affinity must both hold", () => {
    expect(fits(req({}))).toEqual([]);
    expect(
      fits({
        nodeSelector: { disk: "hdd" },
        ...req({ matchExpressions: [{ key: "gen", operator: "Exists" }] }),
      }),
    ).toEqual(["b"]);
  });
});

describe("TaintToleration filter", () => {
  const nodes = [
    makeNode("cp", { taints: [{ key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" }] }),
    makeNode("gpu", { taints: [{ key: "dedicated", value: "gpu", effect: "NoExecute" }] }),
    makeNode("soft", { taints: [{ key: "x", value: "y", effect: "PreferNoSchedule" }] }),
  ];

  it("rejects untolerated NoSchedule/NoExecute taints with upstream's wording", () => {
    const r = reasons(filterWith("TaintToleration", makePod("p"), nodes));
    expect(r).toEqual({
      cp: "UnschedulableAndUnresolvable: node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }",
      gpu: "UnschedulableAndUnresolvable: node(s) had untolerated taint {dedicated: gpu}",
      soft: "ok",
    });
  });

  it("honours Equal, Exists, empty-key and effect-less tolerations", () => {
    const tolerated = (tolerations: unknown[]) => {
      const r = filterWith("TaintToleration", makePod("p", { spec: { tolerations } }), nodes);
      return Object.keys(r).filter((k) => !r[k]);
    };
    expect(tolerated([{ key: "dedicated", operator: "Equal", value: "gpu", effect: "NoExecute" }])).toEqual([
      "gpu",
      "soft",
    ]);
    expect(tolerated([{ key: "dedicated", value: "cpu" }])).toEqual(["soft"]);
    expect(tolerated([{ key: "dedicated", operator: "Exists" }])).toEqual(["gpu", "soft"]);
    expect(tolerated([{ operator: "Exists" }])).toEqual(["cp", "gpu", "soft"]);
    expect(
      tolerated([{ key: "node-role.kubernetes.io/control-plane", operator: "Exists", effect: "NoExecute" }]),
    ).toEqual(["soft"]);
  });
});

describe("NodeResourcesFit filter", () => {
  it("reports each insufficient resource", () => {
    const nodes = [
      makeNode("small", { cpu: "1", memory: "1Gi" }),
      makeNode("big", { cpu: "8", memory: "16Gi" }),
    ];
    const bound = [makePod("x", { cpu: "500m", memory: "512Mi", nodeName: "small" })];
    const r = reasons(
      filterWith("NodeResourcesFit", makePod("p", { cpu: "600m", memory: "600Mi" }), nodes, bound),
    );
    expect(r).toEqual({ small: "Unschedulable: Insufficient cpu, Insufficient memory", big: "ok" });
  });

  it("stays Unschedulable (v1.32) even when the request exceeds the node's allocatable", () => {
    const r = filterWith("NodeResourcesFit", makePod("p", { cpu: "5" }), [makeNode("n", { cpu: "4" })]);
    expect(r.n?.code).toBe("Unschedulable");
    expect(r.n?.reasons).toEqual(["Insufficient cpu"]);
  });

  it("limits the pod count", () => {
    const nodes = [makeNode("n", { pods: "1" })];
    const r = filterWith("NodeResourcesFit", makePod("p"), nodes, [makePod("x", { nodeName: "n" })]);
    expect(r.n?.reasons).toEqual(["Too many pods"]);
  });

  it("checks extended resources and ephemeral storage", () => {
    const nodes = [makeNode("n", { extra: { "nvidia.com/gpu": "1", "ephemeral-storage": "10Gi" } })];
    const pod = makePod("p", {
      containers: [
        { name: "c", resources: { requests: { "nvidia.com/gpu": "2", "ephemeral-storage": "20Gi" } } },
      ],
    });
    expect(filterWith("NodeResourcesFit", pod, nodes).n?.reasons).toEqual([
      "Insufficient ephemeral-storage",
      "Insufficient nvidia.com/gpu",
    ]);
  });

  it("counts init containers by their maximum, sidecars and overhead", () => {
    const pod = makePod("p", {
      containers: [
        { name: "a", resources: { requests: { cpu: "200m", memory: "100Mi" } } },
        { name: "b", resources: { requests: { cpu: "300m" } } },
      ],
      spec: {
        initContainers: [
          { name: "i1", resources: { requests: { cpu: "1", memory: "50Mi" } } },
          { name: "side", restartPolicy: "Always", resources: { requests: { cpu: "100m", memory: "10Mi" } } },
          { name: "i2", resources: { requests: { cpu: "800m" } } },
        ],
        overhead: { cpu: "50m", memory: "1Mi" },
      },
    });
    const r = computePodRequests(pod, false);
    // app 500m + sidecar 100m = 600m; init steps: 1000m, then 100m+800m = 900m -> max 1000m; + 50m overhead
    expect(r.milliCPU).toBe(1050);
    expect(r.memory).toBe(110 * 1024 * 1024 + 1024 * 1024);
    const nz = computePodRequests(makePod("z"), true);
    expect(nz.milliCPU).toBe(100);
    expect(nz.memory).toBe(200 * 1024 * 1024);
  });
});

describe("NodePorts", () => {
  const withPort = (name: string, hostPort: number, hostIP?: string, protocol?: string, nodeName?: string) =>
    makePod(name, {
      nodeName,
      containers: [{ name: "c", ports: [{ containerPort: 80, hostPort, hostIP, protocol }] }],
    });

  it("rejects nodes where the host port is taken", () => {
    const nodes = [makeNode("a"), makeNode("b")];
    const r = reasons(
      filterWith("NodePorts", withPort("p", 8080), nodes, [withPort("x", 8080, undefined, undefined, "a")]),
    );
    expect(r).toEqual({
      a: "Unschedulable: node(s) didn't have free ports for the requested pod ports",
      b: "ok",
    });
  });

  it("distinguishes protocols and specific host IPs", () => {
    const nodes = [makeNode("a")];
    const bound = [withPort("x", 53, "10.0.0.1", "UDP", "a")];
    expect(filterWith("NodePorts", withPort("tcp", 53, "10.0.0.1"), nodes, bound).a).toBeUndefined();
    expect(
      filterWith("NodePorts", withPort("otherip", 53, "10.0.0.2", "UDP"), nodes, bound).a,
    ).toBeUndefined();
    expect(filterWith("NodePorts", withPort("sameip", 53, "10.0.0.1", "UDP"), nodes, bound).a).toBeDefined();
    expect(filterWith("NodePorts", withPort("any", 53, undefined, "UDP"), nodes, bound).a).toBeDefined();
  });
});
