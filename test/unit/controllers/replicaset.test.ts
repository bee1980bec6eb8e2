import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../api/types";
import {
  replicaSetController,
  syncReplicaSet,
} from "../../../durable-objects/controllers/replicaset/controller";
import { podsToDelete } from "../../../durable-objects/controllers/replicaset/pod-ranking";
import {
  calculateReplicaSetStatus,
  slowStartBatch,
} from "../../../durable-objects/controllers/replicaset/status";
import { FakeCluster, pod } from "./fake";

function rs(name: string, replicas: number, extra: Partial<KubeObject["spec"]> = {}): KubeObject {
  return {
    metadata: { name, namespace: "default" },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "c", image: "busybox" }] },
      },
      ...extra,
    },
  };
}

function setup(replicas: number) {
  const c = new FakeCluster();
  const ctx = c.ctx();
  replicaSetController.setup!(ctx);
  const r = c.add("apps/replicasets", rs("web", replicas));
  return { c, ctx, r };
}

describe("slowStartBatch", () => {
  it("runs batches of 1, 2, 4 and stops after a failing batch", async () => {
    let calls = 0;
    const res = await slowStartBatch(10, 1, async () => {
      calls++;
      if (calls === 5) throw new Error("boom");
    });
    // batches 1 + 2 + 4: the failure is in the third batch, whose other calls still ran
    expect(calls).toBe(7);
    expect(res.ok).toBe(6);
    expect((res.error as Error).message).toBe("boom");
  });
  it("creates everything when nothing fails", async () => {
    let calls = 0;
    const res = await slowStartBatch(5, 1, async () => void calls++);
    expect(calls).toBe(5);
    expect(res).toEqual({ ok: 5 });
  });
});

describe("pod ranking for scale-down", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  it("prefers unassigned, then pending, then not ready, then newer", () => {
    const running = pod("running-ready", {
      node: "n1",
      phase: "Running",
      ready: true,
      created: "2025-12-01T00:00:00Z",
    });
    const unassigned = pod("unassigned", { phase: "Pending" });
    const pending = pod("pending", { node: "n1", phase: "Pending" });
    const notReady = pod("not-ready", { node: "n1", phase: "Running", ready: false });
    const order = podsToDelete([running, notReady, pending, unassigned], [], 4, now).map(
      (p) => p.metadata.name,
    );
    expect(order).toEqual(["unassigned", "pending", "not-ready", "running-ready"]);
  });
  it("deletes from the node with more related pods first and the newer of equal pods", () => {
    const a = pod("a", {
      node: "n1",
      phase: "Running",
      ready: true,
      readySince: "2025-12-01T00:00:00Z",
      created: "2025-12-01T00:00:00Z",
    });
    const b = pod("b", {
      node: "n2",
      phase: "Running",
      ready: true,
      readySince: "2025-12-01T00:00:00Z",
      created: "2025-12-01T00:00:00Z",
    });
    const c2 = pod("c", {
      node: "n2",
      phase: "Running",
      ready: true,
      readySince: "2025-12-01T00:00:00Z",
      created: "2025-12-01T00:00:00Z",
    });
    expect(podsToDelete([a, b, c2], [a, b, c2], 1, now)[0].spec!.nodeName).toBe("n2");
    const old = pod("old", {
      node: "n1",
      phase: "Running",
      ready: true,
      readySince: "2025-01-01T00:00:00Z",
      created: "2025-01-01T00:00:00Z",
    });
    const young = pod("young", {
      node: "n2",
      phase: "Running",
      ready: true,
      readySince: "2025-12-31T23:59:00Z",
      created: "2025-12-31T23:58:00Z",
    });
    expect(podsToDelete([old, young], [], 1, now)[0].metadata.name).toBe("young");
  });
  it("honours pod-deletion-cost", () => {
    const cheap = pod("cheap", { node: "n1", phase: "Running", ready: true });
    const dear = pod("dear", { node: "n1", phase: "Running", ready: true });
    cheap.metadata.annotations = { "controller.kubernetes.io/pod-deletion-cost": "-5" };
    dear.metadata.annotations = { "controller.kubernetes.io/pod-deletion-cost": "100" };
    expect(podsToDelete([dear, cheap], [], 1, now)[0].metadata.name).toBe("cheap");
  });
});

describe("ReplicaSet status", () => {
  it("counts ready and available with minReadySeconds, excluding nothing it is given", () => {
    const now = Date.parse("2026-01-01T00:00:30Z");
    const set = {
      metadata: { name: "x", generation: 3 },
      spec: { replicas: 3, minReadySeconds: 20, template: { metadata: { labels: { app: "x", tier: "a" } } } },
    };
    const pods = [
      pod("a", { labels: { app: "x", tier: "a" }, ready: true, readySince: "2026-01-01T00:00:00Z" }),
      pod("b", { labels: { app: "x", tier: "a" }, ready: true, readySince: "2026-01-01T00:00:20Z" }),
      pod("c", { labels: { app: "x" }, ready: false }),
    ];
    const s = calculateReplicaSetStatus(set, pods, undefined, now);
    expect(s).toEqual({
      replicas: 3,
      fullyLabeledReplicas: 2,
      readyReplicas: 2,
      availableReplicas: 1,
      observedGeneration: 3,
    });
  });
  it("adds ReplicaFailure on a failed create and removes it once fine", () => {
    const set: KubeObject = { metadata: { name: "x" }, spec: { replicas: 2 } };
    const s = calculateReplicaSetStatus(set, [], new Error("quota exceeded"), 0);
    expect(s.conditions).toEqual([
      {
        type: "ReplicaFailure",
        status: "True",
        reason: "FailedCreate",
        message: "quota exceeded",
        lastTransitionTime: "1970-01-01T00:00:00Z",
      },
    ]);
    const s2 = calculateReplicaSetStatus({ ...set, status: s }, [], undefined, 0);
    expect(s2.conditions).toBeUndefined();
  });
});

describe("ReplicaSet sync", () => {
  it("creates the missing pods from the template with a controller reference and events", async () => {
    const { c, ctx, r } = setup(3);
    await syncReplicaSet("default/web", ctx);
    const pods = c.list("/pods", "default");
    expect(pods).toHaveLength(3);
    for (const p of pods) {
      expect(p.metadata.name).toMatch(/^web-/);
      expect(p.metadata.labels).toEqual({ app: "web" });
      expect(p.metadata.ownerReferences).toEqual([
        {
          apiVersion: "apps/v1",
          kind: "ReplicaSet",
          name: "web",
          uid: r.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
    }
    expect(c.events.filter((e) => e.reason === "SuccessfulCreate").map((e) => e.message)).toEqual(
      pods.map((p) => `Created pod: ${p.metadata.name}`),
    );
    const status = c.get("apps/replicasets", "default/web")!.status;
    // zero counts are omitted, as upstream's omitempty fields
    expect(status).toEqual({ replicas: 3, fullyLabeledReplicas: 3, observedGeneration: 1 });
    // a second sync changes nothing
    const n = c.writes.length;
    await syncReplicaSet("default/web", ctx);
    expect(c.writes.length).toBe(n);
  });

  it("adopts matching orphans and releases owned pods that stopped matching", async () => {
    const { c, ctx, r } = setup(2);
    c.add("/pods", pod("orphan", { labels: { app: "web" } }));
    c.add("/pods", pod("stray", { labels: { app: "other" }, owner: r }));
    c.add(
      "/pods",
      pod("foreign", {
        labels: { app: "web" },
        owner: { apiVersion: "apps/v1", kind: "ReplicaSet", metadata: { name: "x", uid: "other" } },
      }),
    );
    await syncReplicaSet("default/web", ctx);
    expect(c.get("/pods", "default/orphan")!.metadata.ownerReferences?.[0].uid).toBe(r.metadata.uid);
    expect(c.get("/pods", "default/stray")!.metadata.ownerReferences).toBeUndefined();
    const owned = c.list("/pods").filter((p) => p.metadata.ownerReferences?.[0]?.uid === r.metadata.uid);
    expect(owned).toHaveLength(2); // the orphan plus one new pod
  });

  it("scales down the least valuable pods and does not count terminating ones", async () => {
    const { c, ctx, r } = setup(1);
    c.add(
      "/pods",
      pod("ready", { labels: { app: "web" }, owner: r, node: "n1", phase: "Running", ready: true }),
    );
    c.add("/pods", pod("pending", { labels: { app: "web" }, owner: r, node: "n1", phase: "Pending" }));
    c.add("/pods", pod("unbound", { labels: { app: "web" }, owner: r }));
    await syncReplicaSet("default/web", ctx);
    // the bound pending pod is marked for graceful deletion, the unbound one is gone at once
    expect(c.get("/pods", "default/unbound")).toBeUndefined();
    expect(c.get("/pods", "default/pending")!.metadata.deletionTimestamp).toBeDefined();
    expect(
      c.events
        .filter((e) => e.reason === "SuccessfulDelete")
        .map((e) => e.message)
        .sort(),
    ).toEqual(["Deleted pod: pending", "Deleted pod: unbound"]);
    expect(c.get("apps/replicasets", "default/web")!.status.replicas).toBe(1);
    // the terminating pod is not a replica: scaling to 2 creates a new one
    c.add("apps/replicasets", {
      ...c.get("apps/replicasets", "default/web")!,
      spec: { ...r.spec, replicas: 2 },
    });
    await syncReplicaSet("default/web", ctx);
    expect(c.list("/pods").filter((p) => !p.metadata.deletionTimestamp)).toHaveLength(2);
  });

  it("records ReplicaFailure and returns the error when creation fails", async () => {
    const { c, ctx } = setup(2);
    const { StatusError } = await import("../../../api/errors");
    c.failNext = {
      verb: "create",
      error: new StatusError(403, "Forbidden", 'pods "web-" is forbidden: exceeded quota'),
    };
    await expect(syncReplicaSet("default/web", ctx)).rejects.toThrow(/exceeded quota/);
    const st = c.get("apps/replicasets", "default/web")!.status;
    expect(st.conditions[0]).toMatchObject({ type: "ReplicaFailure", reason: "FailedCreate" });
    expect(c.events.some((e) => e.reason === "FailedCreate" && e.type === "Warning")).toBe(true);
  });

  it("returns conflicts for the queue to retry", async () => {
    const { c, ctx } = setup(0);
    const { conflict } = await import("../../../api/errors");
    c.failNext = {
      verb: "update",
      error: conflict({ group: "apps", resource: "replicasets" }, "web", "the object has been modified"),
    };
    await expect(syncReplicaSet("default/web", ctx)).rejects.toThrow(/modified/);
  });

  it("requeues to see pods become available after minReadySeconds", async () => {
    const c = new FakeCluster();
    const ctx = c.ctx();
    replicaSetController.setup!(ctx);
    const r = c.add("apps/replicasets", rs("web", 1, { minReadySeconds: 10 }));
    c.add(
      "/pods",
      pod("p", {
        labels: { app: "web" },
        owner: r,
        node: "n",
        phase: "Running",
        ready: true,
        readySince: c.iso(),
      }),
    );
    await syncReplicaSet("default/web", ctx);
    expect(c.enqueued).toContainEqual({ controller: "test", key: "default/web", afterMs: 10_000 });
    const st = c.get("apps/replicasets", "default/web")!.status;
    expect(st.readyReplicas).toBe(1);
    expect(st.availableReplicas).toBeUndefined();
  });

  it("ignores a ReplicaSet that is gone", async () => {
    const c = new FakeCluster();
    await syncReplicaSet("default/nope", c.ctx());
    expect(c.writes).toEqual([]);
  });
});
