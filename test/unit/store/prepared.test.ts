import { describe, expect, it } from "vitest";
import { lookupGVR } from "../../../api/registry";
import type { KubeObject } from "../../../api/types";
import { preparable, prepareCreate, preparedData } from "../../../durable-objects/store/prepared";

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
