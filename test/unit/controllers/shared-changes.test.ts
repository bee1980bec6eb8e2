// Change events decoded once per isolate (durable-objects/controllers/runtime/shared-changes.ts):
// the controllers' and the scheduler's informers pulling the same pod changes from one shard
// hold one object per change, parsed, lightened and pooled once; a resource with one
// subscriber is decoded by it alone, and nothing waits for a subscriber that never comes.
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../api/types";
import { Informers } from "../../../durable-objects/controllers/runtime/informers";
import { decodeChange, pendingChanges } from "../../../durable-objects/controllers/runtime/shared-changes";
import type { Env } from "../../../durable-objects/env";

function pod(name: string, rv: number, nodeName?: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: "ns",
      uid: `uid-${name}`,
      resourceVersion: String(rv),
      managedFields: [{ manager: "kubectl", operation: "Update" }],
    },
    spec: {
      nodeName,
      containers: [{ name: "c", image: "busybox", volumeMounts: [{ name: "token", mountPath: "/var/run" }] }],
      volumes: [{ name: "token", projected: { sources: [] } }],
    },
  } as KubeObject;
}

/** A pods shard whose change log holds `log` (revisions 1..n); counts the JSON it hands out. */
function fakeShard(log: { type: string; obj: KubeObject }[]) {
  const shard = {
    listStream() {
      const body = JSON.stringify({
        kind: "PodList",
        apiVersion: "v1",
        metadata: { resourceVersion: "0" },
        items: [],
      });
      return Promise.resolve({ ok: true, stream: new Response(body).body });
    },
    changesSince(_res: string, rv: number) {
      const events = log.slice(rv).map((e) => ({ type: e.type, data: JSON.stringify(e.obj) }));
      return Promise.resolve({ expired: false, head: log.length, upTo: log.length, events });
    },
  };
  return {
    EDGEPLANE_CLUSTER: "default",
    STORE: { idFromName: (name: string) => ({ name }), get: () => shard },
  } as unknown as Env;
}

describe("change events decoded once per isolate", () => {
  it("gives the controllers' and the scheduler's informers one lightened object per pod change", async () => {
    const log = [
      { type: "ADDED", obj: pod("a", 1) },
      { type: "MODIFIED", obj: pod("a", 2, "node-1") },
    ];
    const env = fakeShard(log);
    const controllers = new Informers(env, ["/pods"]);
    const scheduler = new Informers(env, ["/pods"]);
    const seen: KubeObject[][] = [[], []];
    controllers.onChange((_r, _t, obj) => seen[0]!.push(obj));
    scheduler.onChange((_r, _t, obj) => seen[1]!.push(obj));
    await controllers.startAll();
    await scheduler.startAll();
    const before = pendingChanges();
    await controllers.pull("/pods");
    expect(pendingChanges()).toBe(before + 2); // waiting for the scheduler
    await scheduler.pull("/pods");
    expect(pendingChanges()).toBe(before);
    expect(seen[0]).toHaveLength(2);
    expect(seen[1]).toHaveLength(2);
    expect(seen[1]![0]).toBe(seen[0]![0]);
    expect(seen[1]![1]).toBe(seen[0]![1]);
    const a = scheduler.get("/pods", "ns/a")!;
    expect(a).toBe(controllers.get("/pods", "ns/a"));
    expect(a.spec?.nodeName).toBe("node-1");
    // lightened as each informer's cache keeps pods
    expect(a.metadata.managedFields).toBeUndefined();
    expect(a.spec?.volumes).toBeUndefined();
    expect((a.spec!.containers as { volumeMounts?: unknown }[])[0]!.volumeMounts).toBeUndefined();
  });

  it("decodes a resource with one subscriber alone, and bounds what waits for a subscriber", () => {
    const data = JSON.stringify(pod("x", 5));
    const one = decodeChange("/configmaps", data, () => {
      throw new Error("prepared by its informer's apply, not here");
    });
    expect(one.prepared).toBe(false);
    expect(decodeChange("/configmaps", data, () => {}).obj).not.toBe(one.obj);
    // pods have two subscribers: a change only one of them ever pulls (each Durable Object in
    // an isolate of its own, on Cloudflare) leaves by the bound
    for (let i = 0; i < 3000; i++) decodeChange("/pods", JSON.stringify(pod(`p-${i}`, i + 10)), () => {});
    expect(pendingChanges()).toBeLessThanOrEqual(1024);
  });
});
