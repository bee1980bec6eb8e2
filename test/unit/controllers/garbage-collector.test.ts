import { describe, expect, it } from "vitest";
import { lookupGVR } from "../../../api/registry";
import type { KubeObject } from "../../../api/types";
import { garbageCollector, syncGarbage } from "../../../durable-objects/controllers/gc/garbage-collector";
import { FakeCluster, pod } from "./fake";

const RS = lookupGVR("apps", "v1", "replicasets")!;
const DEP = lookupGVR("apps", "v1", "deployments")!;

function owned(c: FakeCluster) {
  const d = c.add("apps/deployments", {
    metadata: { name: "web", namespace: "default" },
    spec: { replicas: 1 },
  });
  const rs = c.add("apps/replicasets", {
    metadata: {
      name: "web-1",
      namespace: "default",
      ownerReferences: [
        {
          apiVersion: "apps/v1",
          kind: "Deployment",
          name: "web",
          uid: d.metadata.uid!,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: { replicas: 1 },
  });
  const p = c.add("/pods", pod("web-1-a", { owner: rs, node: "n1", phase: "Running" }));
  return { d, rs, p };
}

describe("garbage collector", () => {
  it("deletes dependents whose owner is gone, cascading down (background)", async () => {
    const c = new FakeCluster();
    owned(c);
    await c.api.remove(DEP, "default", "web", {});
    await c.run([garbageCollector]);
    expect(c.get("apps/replicasets", "default/web-1")).toBeUndefined();
    // the pod is bound: it is terminating, waiting for its node
    expect(c.get("/pods", "default/web-1-a")!.metadata.deletionTimestamp).toBeDefined();
    const del = c.writes.find((w) => w.verb === "delete" && w.res === "apps/replicasets");
    expect(del!.body).toMatchObject({
      propagationPolicy: "Background",
      preconditions: { uid: expect.any(String) },
    });
  });

  it("treats an owner with another uid as gone, and keeps dependents of live owners", async () => {
    const c = new FakeCluster();
    const { rs } = owned(c);
    await c.run([garbageCollector]);
    expect(c.writes).toEqual([]);
    // the deployment is replaced by a namesake
    const fresh = structuredClone(c.get("apps/deployments", "default/web")!);
    fresh.metadata.uid = "another";
    c.add("apps/deployments", fresh);
    await syncGarbage("apps/replicasets|default/web-1", c.ctx());
    expect(c.get("apps/replicasets", "default/web-1")).toBeUndefined();
    expect(rs.metadata.uid).toBeDefined();
  });

  it("only drops the dangling reference when another owner remains", async () => {
    const c = new FakeCluster();
    const a = c.add("apps/replicasets", { metadata: { name: "a", namespace: "default" }, spec: {} });
    const p = pod("shared", {});
    p.metadata.ownerReferences = [
      { apiVersion: "apps/v1", kind: "ReplicaSet", name: "a", uid: a.metadata.uid! },
      { apiVersion: "apps/v1", kind: "ReplicaSet", name: "gone", uid: "gone-uid" },
    ];
    c.add("/pods", p);
    await c.run([garbageCollector]);
    expect(c.get("/pods", "default/shared")!.metadata.ownerReferences).toEqual([
      { apiVersion: "apps/v1", kind: "ReplicaSet", name: "a", uid: a.metadata.uid },
    ]);
  });

  it("checks owners of kinds it does not cache with a live read", async () => {
    const c = new FakeCluster();
    const cm = c.add("/configmaps", { metadata: { name: "j", namespace: "default" } });
    const p = pod("j-1", {});
    p.metadata.ownerReferences = [{ apiVersion: "v1", kind: "ConfigMap", name: "j", uid: cm.metadata.uid! }];
    c.add("/pods", p);
    await c.run([garbageCollector]);
    expect(c.get("/pods", "default/j-1")).toBeDefined();
    const q = pod("k-1", {});
    q.metadata.ownerReferences = [{ apiVersion: "v1", kind: "ConfigMap", name: "k", uid: "k-uid" }];
    c.add("/pods", q);
    await c.run([garbageCollector]);
    expect(c.get("/pods", "default/k-1")).toBeUndefined();
  });

  it("foreground: deletes dependents first and removes the finalizer once blocking ones are gone", async () => {
    const c = new FakeCluster();
    owned(c);
    await c.api.remove(DEP, "default", "web", { propagationPolicy: "Foreground" });
    expect(c.get("apps/deployments", "default/web")!.metadata.finalizers).toEqual(["foregroundDeletion"]);
    await c.run([garbageCollector]);
    // the ReplicaSet is deleted in the foreground too: it waits for its terminating pod
    expect(c.get("apps/deployments", "default/web")).toBeDefined();
    expect(c.get("apps/replicasets", "default/web-1")!.metadata.finalizers).toEqual(["foregroundDeletion"]);
    expect(c.get("/pods", "default/web-1-a")!.metadata.deletionTimestamp).toBeDefined();
    c.finishPodDeletions();
    await c.run([garbageCollector]);
    expect(c.get("apps/replicasets", "default/web-1")).toBeUndefined();
    expect(c.get("apps/deployments", "default/web")).toBeUndefined();
  });

  it("orphan: removes the owner reference from dependents, then the finalizer", async () => {
    const c = new FakeCluster();
    const { d } = owned(c);
    await c.api.remove(DEP, "default", "web", { propagationPolicy: "Orphan" });
    await c.run([garbageCollector]);
    expect(c.get("apps/deployments", "default/web")).toBeUndefined();
    const rs = c.get("apps/replicasets", "default/web-1")!;
    expect(rs.metadata.ownerReferences).toBeUndefined();
    expect(c.get("/pods", "default/web-1-a")!.metadata.deletionTimestamp).toBeUndefined();
    expect(d.metadata.uid).toBeDefined();
  });

  it("deletes a lease whose node is gone (cluster-scoped owner)", async () => {
    const c = new FakeCluster();
    const node = c.add("/nodes", { metadata: { name: "n1" } });
    c.add("coordination.k8s.io/leases", {
      metadata: {
        name: "n1",
        namespace: "kube-node-lease",
        ownerReferences: [{ apiVersion: "v1", kind: "Node", name: "n1", uid: node.metadata.uid! }],
      },
      spec: {},
    });
    await c.run([garbageCollector]);
    expect(c.get("coordination.k8s.io/leases", "kube-node-lease/n1")).toBeDefined();
    await c.api.remove(lookupGVR("", "v1", "nodes")!, undefined, "n1");
    await c.run([garbageCollector]);
    expect(c.get("coordination.k8s.io/leases", "kube-node-lease/n1")).toBeUndefined();
  });

  it("shrugs off a dependent deleted meanwhile", async () => {
    const c = new FakeCluster();
    const ctx = c.ctx();
    garbageCollector.setup!(ctx);
    const p = pod("x", {}) as KubeObject;
    p.metadata.ownerReferences = [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "gone", uid: "u" }];
    c.add("/pods", p);
    const { notFound } = await import("../../../api/errors");
    c.failNext = { verb: "delete", error: notFound({ group: "", resource: "pods" }, "x") };
    await expect(syncGarbage("/pods|default/x", ctx)).resolves.toBeUndefined();
    expect(RS.kind).toBe("ReplicaSet");
  });
});
