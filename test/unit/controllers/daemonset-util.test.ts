// The DaemonSet controller's decisions: which nodes run a daemon pod, the pod made for a node,
// and each step of a rolling update with maxUnavailable or maxSurge.
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../api/types";
import {
  daemonPod,
  nodeShouldRun,
  REVISION_HASH,
  rollingUpdatePlan,
  targetNode,
  updateBudget,
} from "../../../durable-objects/controllers/daemonset/pods";
import { templatePatch } from "../../../durable-objects/controllers/lib/history";

const NOW = Date.parse("2026-12-01T00:00:00Z");

function daemonSet(
  podSpec: Record<string, unknown> = {},
  rollingUpdate?: Record<string, unknown>,
): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: {
      name: "ds",
      namespace: "n",
      uid: "u1",
      annotations: { "deprecated.daemonset.template.generation": "2" },
    },
    spec: {
      selector: { matchLabels: { app: "ds" } },
      updateStrategy: {
        type: "RollingUpdate",
        rollingUpdate: rollingUpdate ?? { maxUnavailable: 1, maxSurge: 0 },
      },
      template: {
        metadata: { labels: { app: "ds" } },
        spec: { containers: [{ name: "c", image: "i" }], ...podSpec },
      },
    },
  };
}

const node = (name: string, labels: Record<string, string> = {}, taints: unknown[] = []): KubeObject => ({
  apiVersion: "v1",
  kind: "Node",
  metadata: { name, labels },
  spec: { taints },
});

function pod(name: string, nodeName: string, hash: string, ready = true): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, labels: { [REVISION_HASH]: hash }, creationTimestamp: "2026-11-30T00:00:00Z" },
    spec: { nodeName },
    status: {
      phase: "Running",
      conditions: [
        { type: "Ready", status: ready ? "True" : "False", lastTransitionTime: "2026-11-30T00:00:00Z" },
      ],
    },
  };
}

describe("nodeShouldRun", () => {
  it("follows the node selector, required node affinity and a fixed nodeName", () => {
    const sel = daemonSet({ nodeSelector: { disk: "ssd" } });
    expect(nodeShouldRun(node("a", { disk: "ssd" }), sel).shouldRun).toBe(true);
    expect(nodeShouldRun(node("b", { disk: "hdd" }), sel)).toEqual({
      shouldRun: false,
      shouldContinueRunning: false,
    });
    const aff = daemonSet({
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: "zone", operator: "In", values: ["a", "b"] }] }],
          },
        },
      },
    });
    expect(nodeShouldRun(node("a", { zone: "b" }), aff).shouldRun).toBe(true);
    expect(nodeShouldRun(node("a", { zone: "c" }), aff).shouldRun).toBe(false);
    expect(nodeShouldRun(node("x"), daemonSet({ nodeName: "y" })).shouldContinueRunning).toBe(false);
  });

  it("keeps off untolerated taints: a NoSchedule one lets a running pod stay, a NoExecute one does not", () => {
    const ds = daemonSet();
    const noSchedule = node("a", {}, [{ key: "gpu", effect: "NoSchedule" }]);
    expect(nodeShouldRun(noSchedule, ds)).toEqual({ shouldRun: false, shouldContinueRunning: true });
    const noExecute = node("a", {}, [{ key: "gpu", effect: "NoExecute" }]);
    expect(nodeShouldRun(noExecute, ds)).toEqual({ shouldRun: false, shouldContinueRunning: false });
    expect(nodeShouldRun(node("a", {}, [{ key: "gpu", effect: "PreferNoSchedule" }]), ds).shouldRun).toBe(
      true,
    );
    // what every daemon pod tolerates: cordoned and not-ready nodes still run it
    const cordoned = node("a", {}, [
      { key: "node.kubernetes.io/unschedulable", effect: "NoSchedule" },
      { key: "node.kubernetes.io/not-ready", effect: "NoExecute" },
    ]);
    expect(nodeShouldRun(cordoned, ds).shouldRun).toBe(true);
    // network-unavailable only for host-network pods
    const noNet = node("a", {}, [{ key: "node.kubernetes.io/network-unavailable", effect: "NoSchedule" }]);
    expect(nodeShouldRun(noNet, ds).shouldRun).toBe(false);
    expect(nodeShouldRun(noNet, daemonSet({ hostNetwork: true })).shouldRun).toBe(true);
    const tolerant = daemonSet({ tolerations: [{ key: "gpu", operator: "Exists" }] });
    expect(nodeShouldRun(noExecute, tolerant).shouldRun).toBe(true);
  });
});

describe("daemonPod", () => {
  it("names its node in a required affinity that replaces the template's terms, and adds the daemon tolerations", () => {
    const ds = daemonSet({
      tolerations: [
        {
          key: "node.kubernetes.io/unreachable",
          operator: "Exists",
          effect: "NoExecute",
          tolerationSeconds: 5,
        },
      ],
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: "zone", operator: "In", values: ["a"] }] }],
          },
          preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: {} }],
        },
      },
    });
    const p = daemonPod(ds, "node-7", "abc");
    expect(p.metadata.generateName).toBe("ds-");
    expect(p.metadata.labels).toEqual({ app: "ds", [REVISION_HASH]: "abc", "pod-template-generation": "2" });
    expect(p.spec!.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution).toEqual({
      nodeSelectorTerms: [{ matchFields: [{ key: "metadata.name", operator: "In", values: ["node-7"] }] }],
    });
    expect(p.spec!.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution).toHaveLength(1);
    // the same toleration is replaced in place (its tolerationSeconds goes), the others appended
    expect(p.spec!.tolerations[0]).toEqual({
      key: "node.kubernetes.io/unreachable",
      operator: "Exists",
      effect: "NoExecute",
    });
    expect(p.spec!.tolerations.map((t: any) => t.key)).toEqual([
      "node.kubernetes.io/unreachable",
      "node.kubernetes.io/not-ready",
      "node.kubernetes.io/disk-pressure",
      "node.kubernetes.io/memory-pressure",
      "node.kubernetes.io/pid-pressure",
      "node.kubernetes.io/unschedulable",
    ]);
    expect(targetNode(p)).toBe("node-7");
    // the template is not touched
    expect(ds.spec!.template.spec.tolerations).toHaveLength(1);
  });

  it("snapshots the template as upstream's patch bytes: sorted keys, null creationTimestamp, $patch replace", () => {
    const patch = templatePatch(daemonSet());
    expect(JSON.stringify(patch)).toBe(
      '{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"ds"}},"spec":{"containers":[{"image":"i","name":"c"}]}}}}',
    );
  });
});

describe("rollingUpdatePlan", () => {
  const all = () => true;

  it("replaces at most maxUnavailable available old pods, counting new pods that are not ready yet", () => {
    const ds = daemonSet();
    const byNode = new Map([
      ["a", [pod("a-old", "a", "old")]],
      ["b", [pod("b-old", "b", "old")]],
      ["c", [pod("c-old", "c", "old")]],
    ]);
    const first = rollingUpdatePlan(ds, byNode, all, "new", NOW);
    expect(first.deletePods.map((p) => p.metadata.name)).toEqual(["a-old"]);
    expect(first.createOn).toEqual([]);
    // a's new pod is not ready: the budget is spent
    byNode.set("a", [pod("a-new", "a", "new", false)]);
    expect(rollingUpdatePlan(ds, byNode, all, "new", NOW).deletePods).toEqual([]);
    // an old pod that is not ready is replaced whatever the budget
    byNode.set("c", [pod("c-old", "c", "old", false)]);
    expect(rollingUpdatePlan(ds, byNode, all, "new", NOW).deletePods.map((p) => p.metadata.name)).toEqual([
      "c-old",
    ]);
    // a node with no pod counts as unavailable
    byNode.set("a", []);
    byNode.set("c", [pod("c-old", "c", "old")]);
    expect(rollingUpdatePlan(ds, byNode, all, "new", NOW).deletePods).toEqual([]);
  });

  it("resolves percentages against the nodes that should run the pod, rounding up", () => {
    expect(updateBudget(daemonSet({}, { maxUnavailable: "10%", maxSurge: 0 }), 15)).toEqual({
      maxSurge: 0,
      maxUnavailable: 2,
    });
    expect(updateBudget(daemonSet({}, { maxUnavailable: 0, maxSurge: "50%" }), 3)).toEqual({
      maxSurge: 2,
      maxUnavailable: 0,
    });
    // both zero: one may be unavailable
    expect(updateBudget(daemonSet({}, { maxUnavailable: "0%", maxSurge: 0 }), 4)).toEqual({
      maxSurge: 0,
      maxUnavailable: 1,
    });
  });

  it("with maxSurge starts new pods beside old ones and deletes an old one once its new one is available", () => {
    const ds = daemonSet({}, { maxUnavailable: 0, maxSurge: 1 });
    const byNode = new Map([
      ["a", [pod("a-old", "a", "old")]],
      ["b", [pod("b-old", "b", "old")]],
    ]);
    expect(rollingUpdatePlan(ds, byNode, all, "new", NOW)).toEqual({ deletePods: [], createOn: ["a"] });
    byNode.set("a", [pod("a-old", "a", "old"), pod("a-new", "a", "new", false)]);
    expect(rollingUpdatePlan(ds, byNode, all, "new", NOW)).toEqual({ deletePods: [], createOn: [] });
    byNode.set("a", [pod("a-old", "a", "old"), pod("a-new", "a", "new")]);
    const plan = rollingUpdatePlan(ds, byNode, all, "new", NOW);
    expect(plan.deletePods.map((p) => p.metadata.name)).toEqual(["a-old"]);
    expect(plan.createOn).toEqual(["b"]);
  });
});
