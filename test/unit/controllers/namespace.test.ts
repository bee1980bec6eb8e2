import { describe, expect, it } from "vitest";
import { lookupGVR } from "../../../api/registry";
import {
  contentResources,
  namespaceConditions,
  namespaceController,
  syncNamespace,
} from "../../../durable-objects/controllers/namespace/controller";
import {
  serviceAccountController,
  syncServiceAccounts,
} from "../../../durable-objects/controllers/serviceaccount/controller";
import { FakeCluster, pod } from "./fake";

const NS = lookupGVR("", "v1", "namespaces")!;

function terminating(c: FakeCluster, name = "team") {
  return c.add("/namespaces", {
    metadata: { name, deletionTimestamp: c.iso() },
    spec: { finalizers: ["kubernetes"] },
    status: { phase: "Active" },
  });
}

describe("namespace controller", () => {
  it("knows which resources to empty", () => {
    const names = contentResources().map((d) => d.resource);
    expect(names).toEqual(
      expect.arrayContaining([
        "pods",
        "configmaps",
        "services",
        "deployments",
        "replicasets",
        "serviceaccounts",
        "events",
      ]),
    );
    expect(names).not.toContain("namespaces");
    expect(names).not.toContain("nodes");
  });

  it("marks Terminating, deletes the content and requeues while pods terminate", async () => {
    const c = new FakeCluster();
    terminating(c);
    c.add("/pods", pod("bound", { ns: "team", node: "n1", phase: "Running" }));
    c.add("/configmaps", { metadata: { name: "cfg", namespace: "team" } });
    c.add("/services", { metadata: { name: "svc", namespace: "team" }, spec: {} });
    c.add("/configmaps", { metadata: { name: "elsewhere", namespace: "default" } });
    await syncNamespace("team", c.ctx());
    const ns = c.get("/namespaces", "team")!;
    expect(ns.status.phase).toBe("Terminating");
    expect(c.get("/configmaps", "team/cfg")).toBeUndefined();
    expect(c.get("/services", "team/svc")).toBeUndefined();
    expect(c.get("/configmaps", "default/elsewhere")).toBeDefined();
    expect(c.get("/pods", "team/bound")!.metadata.deletionTimestamp).toBeDefined();
    const remaining = ns.status.conditions.find((x: any) => x.type === "NamespaceContentRemaining");
    expect(remaining).toMatchObject({
      status: "True",
      reason: "SomeResourcesRemain",
      message: "Some resources are remaining: pods has 1 resource instances",
    });
    expect(ns.spec.finalizers).toEqual(["kubernetes"]);
    expect(c.enqueued.at(-1)).toMatchObject({ key: "team" });
    expect(c.enqueued.at(-1)!.afterMs).toBeGreaterThanOrEqual(1000);

    c.finishPodDeletions();
    await syncNamespace("team", c.ctx());
    const done = c.writes.filter((w) => w.res === "/namespaces" && w.sub === "finalize");
    expect(done).toHaveLength(1);
    expect(done[0].body.spec.finalizers).toEqual([]);
    const lastStatus = c.writes.filter((w) => w.res === "/namespaces" && w.sub === "status").at(-1)!;
    expect(
      lastStatus.body.status.conditions.find((x: any) => x.type === "NamespaceContentRemaining"),
    ).toMatchObject({ status: "False", reason: "ContentRemoved" });
    // with no finalizer left, the (fake) store removes the namespace
    expect(c.get("/namespaces", "team")).toBeUndefined();
  });

  it("leaves active namespaces alone", async () => {
    const c = new FakeCluster();
    c.add("/namespaces", {
      metadata: { name: "live" },
      spec: { finalizers: ["kubernetes"] },
      status: { phase: "Active" },
    });
    c.add("/configmaps", { metadata: { name: "cfg", namespace: "live" } });
    await syncNamespace("live", c.ctx());
    expect(c.writes).toEqual([]);
    expect(
      namespaceController.watches["/namespaces"](c.get("/namespaces", "live")!, undefined, c.ctx()),
    ).toEqual([]);
  });

  it("reports finalizers that hold content", () => {
    const list = namespaceConditions(
      undefined,
      {
        remaining: ["configmaps has 1 resource instances"],
        finalizers: ["example.com/keep in 1 resource instances"],
        errors: [],
        estimateMs: 0,
      },
      "2026-01-01T00:00:00Z",
    );
    expect(list.find((x) => x.type === "NamespaceFinalizersRemaining")).toMatchObject({
      status: "True",
      reason: "SomeFinalizersRemain",
      message:
        "Some content in the namespace has finalizers remaining: example.com/keep in 1 resource instances",
    });
    expect(list.map((x) => x.type)).toEqual([
      "NamespaceDeletionDiscoveryFailure",
      "NamespaceDeletionGroupVersionParsingFailure",
      "NamespaceDeletionContentFailure",
      "NamespaceContentRemaining",
      "NamespaceFinalizersRemaining",
    ]);
  });

  it("falls back to a plain update when finalize is not served", async () => {
    const c = new FakeCluster();
    terminating(c);
    const { notFoundPath } = await import("../../../api/errors");
    // status update succeeds, then the finalize PUT fails with 404 (not served)
    const ctx = c.ctx();
    const update = ctx.api.update.bind(ctx.api);
    ctx.api.update = (async (def: any, obj: any, sub?: string) => {
      if (sub === "finalize") throw notFoundPath();
      return update(def, obj, sub);
    }) as any;
    await syncNamespace("team", ctx);
    const plain = c.writes.filter((w) => w.res === "/namespaces" && w.verb === "update" && !w.sub);
    expect(plain).toHaveLength(1);
    expect(plain[0].body.spec.finalizers).toEqual([]);
    expect(NS.resource).toBe("namespaces");
  });
});

describe("service account controller", () => {
  it("creates default in active namespaces, again after deletion, never in terminating ones", async () => {
    const c = new FakeCluster();
    c.add("/namespaces", { metadata: { name: "a" }, status: { phase: "Active" } });
    terminating(c, "b");
    await c.run([serviceAccountController]);
    expect(c.get("/serviceaccounts", "a/default")).toBeDefined();
    expect(c.get("/serviceaccounts", "b/default")).toBeUndefined();
    await c.api.remove(lookupGVR("", "v1", "serviceaccounts")!, "a", "default");
    await c.run([serviceAccountController]);
    expect(c.get("/serviceaccounts", "a/default")).toBeDefined();
    const creates = c.writes.filter((w) => w.verb === "create" && w.res === "/serviceaccounts");
    expect(creates).toHaveLength(2);
  });

  it("treats AlreadyExists as done", async () => {
    const c = new FakeCluster();
    c.add("/namespaces", { metadata: { name: "a" }, status: { phase: "Active" } });
    const { alreadyExists } = await import("../../../api/errors");
    c.failNext = {
      verb: "create",
      error: alreadyExists({ group: "", resource: "serviceaccounts" }, "default"),
    };
    await expect(syncServiceAccounts("a", c.ctx())).resolves.toBeUndefined();
  });
});
