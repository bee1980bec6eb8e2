import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../api/types";
import {
  computeHash,
  equalIgnoreHash,
  MAX_REPLICAS,
  safeEncode,
} from "../../../durable-objects/controllers/deployment/revisions";
import {
  maxSurge,
  maxUnavailable,
  newRSNewReplicas,
  reconcileOldReplicaSets,
  resolveFenceposts,
  scalePlan,
  setNewReplicaSetAnnotations,
} from "../../../durable-objects/controllers/deployment/scaling";
import { calculateDeploymentStatus } from "../../../durable-objects/controllers/deployment/status";

function dep(
  replicas: number,
  surge: number | string = "25%",
  unavailable: number | string = "25%",
): KubeObject {
  return {
    metadata: { name: "web", namespace: "default", generation: 1 },
    spec: {
      replicas,
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: surge, maxUnavailable: unavailable } },
    },
  };
}

let n = 0;
function set(
  name: string,
  replicas: number,
  available = replicas,
  created = `2025-01-0${++n % 9 || 1}T00:00:00Z`,
  ann: Record<string, string> = {},
): KubeObject {
  return {
    metadata: { name, uid: name, creationTimestamp: created, annotations: ann },
    spec: { replicas },
    status: { replicas, availableReplicas: available, readyReplicas: available },
  };
}

describe("fenceposts", () => {
  it("rounds surge up and unavailable down", () => {
    expect(resolveFenceposts("25%", "25%", 10)).toEqual([3, 2]);
    expect(resolveFenceposts("25%", "25%", 3)).toEqual([1, 0]);
    expect(resolveFenceposts(2, "50%", 5)).toEqual([2, 2]);
  });
  it("never lets both be zero", () => {
    expect(resolveFenceposts(0, 0, 4)).toEqual([0, 1]);
    expect(resolveFenceposts("10%", "10%", 1)).toEqual([1, 0]);
  });
  it("caps unavailable at the replica count and is zero for Recreate", () => {
    expect(maxUnavailable(dep(2, 0, 5))).toBe(2);
    const recreate = { ...dep(4), spec: { replicas: 4, strategy: { type: "Recreate" } } };
    expect(maxSurge(recreate)).toBe(0);
    expect(maxUnavailable(recreate)).toBe(0);
  });
});

describe("template hash", () => {
  it("is stable across key order, changes with content and collision count", () => {
    const a = {
      metadata: { labels: { app: "web", tier: "x" } },
      spec: { containers: [{ name: "c", image: "i:1" }] },
    };
    const b = {
      spec: { containers: [{ image: "i:1", name: "c" }] },
      metadata: { labels: { tier: "x", app: "web" } },
    };
    expect(computeHash(a)).toBe(computeHash(b));
    expect(computeHash(a)).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]{1,10}$/);
    expect(computeHash(a, 1)).not.toBe(computeHash(a));
    expect(computeHash({ ...a, spec: { containers: [{ name: "c", image: "i:2" }] } })).not.toBe(
      computeHash(a),
    );
  });
  it("safe-encodes like upstream", () => {
    // '0' and '1' are 48 and 49: 48 % 27 = 21 -> '4', 49 % 27 = 22 -> '5'
    expect(safeEncode("01")).toBe("45");
  });
  it("compares templates ignoring pod-template-hash", () => {
    const t = { metadata: { labels: { app: "web" } }, spec: { containers: [] } };
    expect(
      equalIgnoreHash(t, {
        metadata: { labels: { app: "web", "pod-template-hash": "abc" } },
        spec: { containers: [] },
      }),
    ).toBe(true);
    expect(equalIgnoreHash(t, { metadata: { labels: { app: "db" } }, spec: { containers: [] } })).toBe(false);
  });
  it("holds a template's zero creationTimestamp (null) the same as none, in equality and hash", () => {
    const t = { metadata: { labels: { app: "web" } }, spec: { containers: [] } };
    const z = { metadata: { labels: { app: "web" }, creationTimestamp: null }, spec: { containers: [] } };
    expect(equalIgnoreHash(t, z)).toBe(true);
    expect(computeHash(z)).toBe(computeHash(t));
  });
});

describe("rolling update steps", () => {
  it("grows the new set up to replicas + surge", () => {
    const d = dep(10, 3, 2);
    const old = set("old", 10);
    const fresh = set("new", 0);
    expect(newRSNewReplicas(d, [old, fresh], fresh)).toBe(3);
    expect(newRSNewReplicas(d, [set("old", 7), set("new", 6)], set("new", 6))).toBe(6);
    expect(newRSNewReplicas(d, [set("old", 2), set("new", 8)], set("new", 8))).toBe(10);
  });
  it("scales old sets down as far as availability allows", () => {
    const d = dep(10, 3, 2);
    const old = set("old", 10, 10);
    const fresh = set("new", 3, 0);
    // all = 13, minAvailable = 8, new unavailable = 3 -> may remove 2
    const ops = reconcileOldReplicaSets(d, [old, fresh], [old], fresh);
    expect(ops.map((o) => [o.rs.metadata.name, o.to])).toEqual([["old", 8]]);
  });
  it("removes unhealthy old replicas first, oldest set first", () => {
    const d = dep(4, 1, 1);
    const older = set("older", 2, 0, "2025-01-01T00:00:00Z");
    const newer = set("newer", 2, 2, "2025-01-02T00:00:00Z");
    const fresh = set("new", 1, 1, "2025-01-03T00:00:00Z");
    // all = 5, minAvailable = 3, new unavailable 0 -> maxScaledDown 2: both unhealthy of "older"
    // then available = 3 = minAvailable: nothing more
    const ops = reconcileOldReplicaSets(d, [older, newer, fresh], [older, newer], fresh);
    expect(ops.map((o) => [o.rs.metadata.name, o.to])).toEqual([["older", 0]]);
  });
  it("does nothing while too few are available", () => {
    const d = dep(3, 1, 0);
    const old = set("old", 3, 3);
    const fresh = set("new", 1, 0);
    expect(reconcileOldReplicaSets(d, [old, fresh], [old], fresh)).toEqual([]);
  });
});

describe("proportional scaling", () => {
  it("spreads a scale-up over the sets in proportion (upstream example numbers)", () => {
    const d = dep(20, 3, 0);
    const old = set("old", 8, 8, "2025-01-01T00:00:00Z", { [MAX_REPLICAS]: "13" });
    const fresh = set("new", 5, 0, "2025-01-02T00:00:00Z", { [MAX_REPLICAS]: "13" });
    const plan = scalePlan(d, fresh, [old]);
    expect(Object.fromEntries(plan.map((o) => [o.rs.metadata.name, o.to]))).toEqual({ old: 14, new: 9 });
  });
  it("scales the only active set straight to the new size", () => {
    const d = dep(5);
    const only = set("only", 3);
    expect(scalePlan(d, only, [set("gone", 0)])).toEqual([{ rs: only, to: 5 }]);
  });
  it("spreads a scale-down, giving the remainder to the biggest set", () => {
    const d = dep(5, 1, 0);
    const old = set("old", 6, 6, "2025-01-01T00:00:00Z", { [MAX_REPLICAS]: "11" });
    const fresh = set("new", 5, 0, "2025-01-02T00:00:00Z", { [MAX_REPLICAS]: "11" });
    const plan = Object.fromEntries(scalePlan(d, fresh, [old]).map((o) => [o.rs.metadata.name, o.to]));
    expect(plan.old + plan.new).toBe(6);
    expect(plan).toEqual({ old: 3, new: 3 });
  });
});

describe("annotations and status", () => {
  it("copies annotations, bumps the revision and keeps the history", () => {
    const d = {
      ...dep(3),
      metadata: {
        name: "web",
        annotations: {
          "kubernetes.io/change-cause": "v2",
          "kubectl.kubernetes.io/last-applied-configuration": "{}",
        },
      },
    };
    const rs: KubeObject = {
      metadata: { name: "web-x", annotations: { "deployment.kubernetes.io/revision": "1" } },
      spec: { replicas: 0 },
    };
    expect(setNewReplicaSetAnnotations(d, rs, "3", true)).toBe(true);
    expect(rs.metadata.annotations).toEqual({
      "kubernetes.io/change-cause": "v2",
      "deployment.kubernetes.io/revision": "3",
      "deployment.kubernetes.io/revision-history": "1",
    });
    const fresh: KubeObject = { metadata: { name: "web-y" }, spec: {} };
    setNewReplicaSetAnnotations(d, fresh, "1", false);
    expect(fresh.metadata.annotations).toMatchObject({
      "deployment.kubernetes.io/revision": "1",
      "deployment.kubernetes.io/desired-replicas": "3",
      "deployment.kubernetes.io/max-replicas": "4",
    });
  });
  it("computes counts and the Available condition", () => {
    const d = dep(4, 1, 1);
    d.metadata.generation = 7;
    const old = set("old", 2, 2);
    const fresh = { ...set("new", 3, 1), status: { replicas: 3, availableReplicas: 1, readyReplicas: 2 } };
    const s = calculateDeploymentStatus(d, [old, fresh], fresh, "2026-01-01T00:00:00Z");
    expect(s).toMatchObject({
      observedGeneration: 7,
      replicas: 5,
      updatedReplicas: 3,
      readyReplicas: 4,
      availableReplicas: 3,
      unavailableReplicas: 2,
    });
    expect(s.conditions).toEqual([
      {
        type: "Available",
        status: "True",
        reason: "MinimumReplicasAvailable",
        message: "Deployment has minimum availability.",
        lastUpdateTime: "2026-01-01T00:00:00Z",
        lastTransitionTime: "2026-01-01T00:00:00Z",
      },
    ]);
  });
});
