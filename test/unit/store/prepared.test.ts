import { describe, expect, it } from "vitest";
import { lookupGVR } from "../../../api/registry";
import type { KubeObject } from "../../../api/types";
import {
  preparable,
  prepareCreate,
  preparedData,
  prepareUpdate,
  storedBase,
} from "../../../durable-objects/store/prepared";

const pods = lookupGVR("", "v1", "pods")!;
const deployments = lookupGVR("apps", "v1", "deployments")!;
const services = lookupGVR("", "v1", "services")!;

function pod(): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: "p",
      namespace: "ns",
      labels: { app: "a" },
      // a client's string that looks like a revision mark stays as it is
      annotations: { note: "rv:00000000-0000-0000-0000-000000000000" },
      deletionTimestamp: "2026-01-01T00:00:00Z",
    },
    spec: { nodeName: "n1", containers: [{ name: "c", image: "x" }] },
    status: { phase: "Pending" },
  };
}

describe("a create prepared by the Worker", () => {
  it("carries the system fields, the selectable fields and JSON with the revision to fill in", () => {
    const obj = pod();
    const p = prepareCreate(pods, obj);
    expect(p.namespace).toBe("ns");
    expect(p.name).toBe("p");
    expect(p.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(p.labels).toEqual({ app: "a" });
    expect(p.fields).toMatchObject({
      "metadata.name": "p",
      "metadata.namespace": "ns",
      "spec.nodeName": "n1",
    });
    // the object itself has them too, but no revision
    expect(obj.metadata.uid).toBe(p.uid);
    expect(obj.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(obj.metadata.resourceVersion).toBeUndefined();
    expect(obj.metadata.deletionTimestamp).toBeUndefined();

    const stored = JSON.parse(preparedData(p, 42)!);
    expect(stored.metadata.resourceVersion).toBe("42");
    expect(stored.metadata.annotations.note).toBe("rv:00000000-0000-0000-0000-000000000000");
    expect(stored).toEqual({ ...obj, metadata: { ...obj.metadata, resourceVersion: "42" } });
  });

  it("sets generation for resources that track it", () => {
    const d: KubeObject = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "d", namespace: "ns" },
    };
    prepareCreate(deployments, d);
    expect(d.metadata.generation).toBe(1);
    const p = pod();
    prepareCreate(pods, p);
    expect(p.metadata.generation).toBeUndefined();
  });

  it("refuses JSON without its mark, and is not used where the shard allocates", () => {
    const p = prepareCreate(pods, pod());
    expect(preparedData({ ...p, json: p.json.replace(p.rvMark, "other") }, 1)).toBeUndefined();
    expect(preparable(pods)).toBe(true);
    expect(preparable(services)).toBe(false);
  });
});

describe("an update prepared by the Worker", () => {
  /** A stored pod as the Worker reads it: the JSON and a parsed copy. */
  function stored() {
    const obj = pod();
    delete obj.metadata.deletionTimestamp;
    Object.assign(obj.metadata, {
      uid: "u-1",
      creationTimestamp: "2026-01-01T00:00:00Z",
      resourceVersion: "7",
    });
    const json = JSON.stringify(obj);
    const read = JSON.parse(json) as KubeObject;
    return { json, read, base: storedBase(json, read) };
  }

  it("keeps the stored system fields, whatever the object says by then, and encodes against that revision", () => {
    const { read, base } = stored();
    // a handler that changed the object it read, system fields included
    read.metadata.creationTimestamp = "1999-01-01T00:00:00Z";
    read.metadata.resourceVersion = "3";
    delete read.metadata.uid;
    read.metadata.labels = { app: "b" };
    const p = prepareUpdate(pods, read, base);
    expect(p).toMatchObject({
      expectRV: "7",
      uid: "u-1",
      unchanged: false,
      remove: false,
      labels: { app: "b" },
    });
    expect(read.metadata.resourceVersion).toBe("7");
    const next = JSON.parse(preparedData(p, 9)!);
    expect(next.metadata).toMatchObject({
      uid: "u-1",
      creationTimestamp: "2026-01-01T00:00:00Z",
      resourceVersion: "9",
      labels: { app: "b" },
    });
  });

  it("says when nothing changes, sends the client's uid as a precondition, and removes a finished deletion", () => {
    const a = stored();
    expect(prepareUpdate(pods, a.read, a.base).unchanged).toBe(true);
    const b = stored();
    b.read.metadata.uid = "someone-else";
    expect(prepareUpdate(pods, b.read, b.base)).toMatchObject({ uid: "someone-else", unchanged: false });
    const c = stored();
    c.read.metadata.deletionTimestamp = "2026-01-02T00:00:00Z";
    c.read.metadata.deletionGracePeriodSeconds = 0;
    expect(prepareUpdate(pods, c.read, c.base)).toMatchObject({ unchanged: false, remove: true });
    const d = stored();
    d.read.metadata.deletionTimestamp = "2026-01-02T00:00:00Z";
    d.read.metadata.deletionGracePeriodSeconds = 0;
    d.read.metadata.finalizers = ["example.com/hold"];
    expect(prepareUpdate(pods, d.read, d.base).remove).toBe(false);
  });
});
