import { describe, expect, it } from "vitest";
import { fieldPath, hasSchema, schemaCauses } from "../../../api/validation/schema";

describe("schemaCauses", () => {
  it("accepts a valid pod", () => {
    expect(
      schemaCauses("v1", "Pod", {
        metadata: { name: "a" },
        spec: { containers: [{ name: "c", image: "x" }] },
      }),
    ).toEqual([]);
  });

  it("maps required, type and enum errors to upstream-like causes", () => {
    const causes = schemaCauses("v1", "Pod", {
      metadata: { name: "a", labels: { "app.kubernetes.io/name": 5 } },
      spec: { containers: [{ image: "x", ports: [{ containerPort: "80", protocol: "FOO" }] }] },
    });
    expect(causes).toEqual(
      expect.arrayContaining([
        { type: "FieldValueRequired", field: "spec.containers[0].name", message: "Required value" },
        {
          type: "FieldValueInvalid",
          field: "spec.containers[0].ports[0].containerPort",
          message: 'Invalid value: "80": must be of type integer',
        },
        {
          type: "FieldValueNotSupported",
          field: "spec.containers[0].ports[0].protocol",
          message: 'Unsupported value: "FOO": supported values: "SCTP", "TCP", "UDP"',
        },
        {
          type: "FieldValueInvalid",
          field: "metadata.labels[app.kubernetes.io/name]",
          message: "Invalid value: 5: must be of type string",
        },
      ]),
    );
  });

  it("treats a property set to undefined as absent, even in a map, and leaves the object as it was", () => {
    const pod = {
      metadata: { name: "a", labels: { app: "a", gone: undefined } },
      spec: { containers: [{ name: "c", image: "x", workingDir: undefined }] },
    };
    const before = structuredClone(pod);
    expect(schemaCauses("v1", "Pod", pod)).toEqual([]);
    expect(pod).toStrictEqual(before);
    // without undefined anywhere, the object itself is checked; it is not changed either
    const plain = {
      metadata: { name: "a", labels: { app: 7 } },
      spec: { containers: [{ name: "c", image: "x" }] },
    };
    const copy = structuredClone(plain);
    expect(schemaCauses("v1", "Pod", plain).map((c) => c.field)).toEqual(["metadata.labels.app"]);
    expect(plain).toStrictEqual(copy);
  });

  it("knows the served kinds only", () => {
    expect(hasSchema("apps/v1", "Deployment")).toBe(true);
    expect(hasSchema("autoscaling/v1", "Scale")).toBe(true);
    expect(hasSchema("batch/v1", "Job")).toBe(true);
    expect(hasSchema("batch/v1", "CronJob")).toBe(true);
    expect(hasSchema("networking.k8s.io/v1", "Ingress")).toBe(true);
    expect(hasSchema("storage.k8s.io/v1", "StorageClass")).toBe(true);
    expect(hasSchema("storage.k8s.io/v1", "CSIDriver")).toBe(true);
    expect(hasSchema("storage.k8s.io/v1", "VolumeAttributesClass")).toBe(false);
    expect(schemaCauses("storage.k8s.io/v1", "VolumeAttributesClass", { driverName: 1 })).toEqual([]);
    expect(
      schemaCauses("apps/v1", "Deployment", {
        metadata: { name: "d" },
        spec: { selector: {}, template: {} },
      }),
    ).toEqual([]);
    const causes = schemaCauses("apps/v1", "Deployment", {
      metadata: { name: "d" },
      spec: { replicas: "x" },
    });
    expect(causes.map((c) => c.field).sort()).toEqual(["spec.replicas", "spec.selector", "spec.template"]);
  });

  it("builds field paths", () => {
    expect(fieldPath(["spec", "containers", "0", "name"])).toBe("spec.containers[0].name");
    expect(fieldPath(["metadata", "annotations", "a/b"])).toBe("metadata.annotations[a/b]");
  });

  it("accepts what kubectl sends (nulls, empty objects)", () => {
    const run = {
      kind: "Pod",
      apiVersion: "v1",
      metadata: { name: "nginx", creationTimestamp: null, labels: { run: "nginx" } },
      spec: {
        containers: [{ name: "nginx", image: "nginx", resources: {} }],
        restartPolicy: "Always",
        dnsPolicy: "ClusterFirst",
      },
      status: {},
    };
    const dep = {
      kind: "Deployment",
      apiVersion: "apps/v1",
      metadata: { name: "web", creationTimestamp: null, labels: { app: "web" } },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { creationTimestamp: null, labels: { app: "web" } },
          spec: { containers: [{ name: "nginx", image: "nginx", resources: {} }] },
        },
        strategy: {},
      },
      status: {},
    };
    const ssar = {
      metadata: { creationTimestamp: null },
      spec: { resourceAttributes: { namespace: "default", verb: "get", resource: "pods" } },
      status: { allowed: false },
    };
    expect(schemaCauses("v1", "Pod", run)).toEqual([]);
    expect(schemaCauses("apps/v1", "Deployment", dep)).toEqual([]);
    expect(schemaCauses("authorization.k8s.io/v1", "SelfSubjectAccessReview", ssar)).toEqual([]);
  });
});
