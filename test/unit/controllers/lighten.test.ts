// What the controllers' and the scheduler's caches keep of an object (runtime/informers.ts).
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../api/types";
import { lighten } from "../../../durable-objects/controllers/runtime/informers";

const managed = [
  { manager: "kubectl", operation: "Update", fieldsType: "FieldsV1", fieldsV1: { "f:spec": {} } },
];

function pod(): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: "web-1",
      namespace: "default",
      uid: "u1",
      labels: { app: "web" },
      ownerReferences: [
        { apiVersion: "apps/v1", kind: "ReplicaSet", name: "web", uid: "rs1", controller: true },
      ],
      managedFields: managed,
      resourceVersion: "7",
    },
    spec: {
      volumes: [
        { name: "kube-api-access-x", projected: { sources: [{ serviceAccountToken: { path: "token" } }] } },
      ],
      initContainers: [{ name: "init", image: "busybox", volumeMounts: [{ name: "data", mountPath: "/d" }] }],
      containers: [
        {
          name: "web",
          image: "nginx",
          ports: [{ name: "http", containerPort: 80 }],
          resources: { requests: { cpu: "100m" } },
          volumeMounts: [
            { name: "kube-api-access-x", mountPath: "/var/run/secrets/kubernetes.io/serviceaccount" },
          ],
        },
      ],
      nodeName: "n1",
      tolerations: [{ key: "k", operator: "Exists" }],
    },
    status: { phase: "Running", podIP: "10.0.0.5", conditions: [{ type: "Ready", status: "True" }] },
  } as KubeObject;
}

describe("lighten", () => {
  it("keeps of a pod everything but field ownership, volumes and volume mounts", () => {
    const p = pod();
    lighten("/pods", p);
    const want = pod();
    want.metadata.managedFields = undefined;
    want.spec.volumes = undefined;
    want.spec.initContainers[0].volumeMounts = undefined;
    want.spec.containers[0].volumeMounts = undefined;
    expect(p).toStrictEqual(want);
    // as stored JSON, only those fields are gone
    const text = JSON.parse(JSON.stringify(p));
    expect(text.spec.containers[0]).toEqual({
      name: "web",
      image: "nginx",
      ports: [{ name: "http", containerPort: 80 }],
      resources: { requests: { cpu: "100m" } },
    });
    expect(Object.keys(text.metadata)).not.toContain("managedFields");
  });

  it("leaves other resources' specs whole (a ReplicaSet's pod template keeps its volumes)", () => {
    const rs = {
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      metadata: { name: "web", namespace: "default", managedFields: managed },
      spec: {
        template: {
          spec: { volumes: [{ name: "v", emptyDir: {} }], containers: [{ name: "c", image: "i" }] },
        },
      },
    } as KubeObject;
    const before = structuredClone(rs);
    lighten("apps/replicasets", rs);
    expect(rs.metadata.managedFields).toBeUndefined();
    expect(rs.spec).toStrictEqual(before.spec);
  });
});
