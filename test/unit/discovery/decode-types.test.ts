// A body's values of the wrong JSON type, reported as kube-apiserver's decoder reports them:
// the first one in the body, in encoding/json's words, with the Go struct and type.
import { describe, expect, it } from "vitest";
import { decodeTypeError } from "../../../workers/discovery/decode-types";

const pod = (spec: Record<string, unknown>, metadata: Record<string, unknown> = { name: "p" }) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata,
  spec,
});
const container = (extra: Record<string, unknown>) => ({ containers: [{ name: "c", image: "x", ...extra }] });

describe("decodeTypeError", () => {
  it("names the Go struct, the field's path without indexes or map keys, and the Go type", () => {
    const cases: [unknown, string][] = [
      [
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { port: 8080 } },
        "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
      ],
      [
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: ["a"] },
        "json: cannot unmarshal array into Go struct field ConfigMap.data of type map[string]string",
      ],
      [
        pod(container({}), { name: "p", labels: { a: true } }),
        "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string",
      ],
      [
        pod(container({ ports: [{ containerPort: "80" }] })),
        "json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32",
      ],
      [
        pod(container({ env: [{ name: "A", value: 1 }] })),
        "json: cannot unmarshal number into Go struct field EnvVar.spec.containers.env.value of type string",
      ],
      [
        pod({ containers: {} }),
        "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container",
      ],
      [
        { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "d" }, spec: "x" },
        "json: cannot unmarshal string into Go struct field Deployment.spec of type v1.DeploymentSpec",
      ],
      [
        pod({ ...container({}), activeDeadlineSeconds: 1.5 }),
        "json: cannot unmarshal number 1.5 into Go struct field PodSpec.spec.activeDeadlineSeconds of type int64",
      ],
      [
        pod(container({ ports: [{ containerPort: 2 ** 31 }] })),
        `json: cannot unmarshal number ${2 ** 31} into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32`,
      ],
      [
        pod({ ...container({}), hostNetwork: "yes" }),
        "json: cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool",
      ],
      [
        { apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, data: { a: 1 } },
        "json: cannot unmarshal number into Go struct field Secret.data of type []uint8",
      ],
    ];
    for (const [obj, want] of cases) {
      const o = obj as { apiVersion: string; kind: string };
      expect(decodeTypeError(o.apiVersion, o.kind, obj), JSON.stringify(obj)).toBe(want);
    }
  });

  it("names named types as Go does: named strings, named maps, their elements", () => {
    const cases: [unknown, string][] = [
      [
        pod({ ...container({}), restartPolicy: 5 }),
        "json: cannot unmarshal number into Go struct field PodSpec.spec.restartPolicy of type v1.RestartPolicy",
      ],
      [
        pod(container({ securityContext: { capabilities: { add: [1] } } })),
        "json: cannot unmarshal number into Go struct field Capabilities.spec.containers.securityContext.capabilities.add of type v1.Capability",
      ],
      [
        pod(container({ resources: { requests: "1" } })),
        "json: cannot unmarshal string into Go struct field ResourceRequirements.spec.containers.resources.requests of type v1.ResourceList",
      ],
      [
        pod(container({}), { name: "p", uid: 5 }),
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.uid of type types.UID",
      ],
    ];
    for (const [obj, want] of cases)
      expect(decodeTypeError("v1", "Pod", obj), JSON.stringify(obj)).toBe(want);
  });

  it("reads the types with decoders of their own as those decoders do", () => {
    const quantity = pod(container({ resources: { requests: { cpu: "abc" } } }));
    expect(decodeTypeError("v1", "Pod", quantity)).toBe(
      "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    );
    const service = (targetPort: unknown) => ({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "s" },
      spec: { ports: [{ port: 80, targetPort }] },
    });
    expect(decodeTypeError("v1", "Service", service({}))).toBe(
      "json: cannot unmarshal object into Go value of type int32",
    );
    expect(decodeTypeError("v1", "Service", service(1.5))).toBe(
      "json: cannot unmarshal number 1.5 into Go value of type int32",
    );
    const stamped = pod(container({}), { name: "p", deletionTimestamp: 5 });
    expect(decodeTypeError("v1", "Pod", stamped)).toBe(
      "json: cannot unmarshal number into Go value of type string",
    );
  });

  it("lets through what fits: nulls, numbers as quantities, either form of an int-or-string, unknown fields", () => {
    const fine = [
      pod({ ...container({ resources: { limits: { cpu: 2, memory: "1Gi" } } }), nodeName: null }),
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "s" },
        spec: { ports: [{ port: 80, targetPort: "http" }] },
      },
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "s" },
        spec: { ports: [{ port: 80, targetPort: 8080 }] },
      },
      pod({ ...container({}), notAField: 5 }),
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { a: "1" } },
    ];
    for (const obj of fine)
      expect(decodeTypeError(obj.apiVersion, obj.kind, obj), JSON.stringify(obj)).toBeUndefined();
    // the first in the body is the one reported
    const two = pod(container({ ports: [{ containerPort: "80" }], env: [{ name: "A", value: 1 }] }));
    expect(decodeTypeError("v1", "Pod", two)).toContain("ContainerPort.spec.containers.ports.containerPort");
    expect(decodeTypeError("v1", "NoSuchKind", { a: 1 })).toBeUndefined();
  });

  it("speaks the unstructured converter's words for a strategic merge patch's result", () => {
    const cm = (data: unknown) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data });
    const cases: [unknown, string][] = [
      // Go converts a number to a string and a fraction to an integer, JSON does not
      [cm({ port: 8080 }), "cannot convert int64 to string"],
      [pod({ ...container({}), activeDeadlineSeconds: 1.5 }), "cannot convert float64 to int64"],
      [pod({ ...container({}), restartPolicy: 1 }), "cannot convert int64 to v1.RestartPolicy"],
      // kinds Go cannot convert between
      [cm({ port: 80.5 }), "unrecognized type: string"],
      [cm({ on: true }), "unrecognized type: string"],
      [pod(container({ ports: [{ containerPort: "80" }] })), "unrecognized type: int32"],
      [pod({ ...container({}), hostNetwork: "yes" }), "unrecognized type: bool"],
      // structs, lists and maps from anything else
      [
        { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "d" }, spec: "x" },
        "cannot restore struct from: string",
      ],
      [pod({ containers: {} }), "cannot restore slice from map"],
      [cm(["a"]), "cannot restore map from slice"],
      [pod(container({}), { name: "p", labels: 3 }), "cannot restore map from int64"],
    ];
    for (const [obj, want] of cases) {
      const o = obj as { apiVersion: string; kind: string };
      expect(decodeTypeError(o.apiVersion, o.kind, obj, "converter"), JSON.stringify(obj)).toBe(want);
    }
    // Go's conversion wraps a whole number too big for an int32; the JSON decoder refuses it
    const big = pod(container({ ports: [{ containerPort: 2 ** 31 }] }));
    expect(decodeTypeError("v1", "Pod", big, "converter")).toBeUndefined();
    expect(decodeTypeError("v1", "Pod", big)).toContain("number 2147483648");
    // bytes may come as a list of numbers
    const secret = { apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, data: { a: [104, 105] } };
    expect(decodeTypeError("v1", "Secret", secret, "converter")).toBeUndefined();
  });

  it("reads numbers' texts again only for a body with an integer field holding a number", () => {
    let asked = 0;
    const texts = () => {
      asked++;
      return undefined;
    };
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { csv: "1,2.5" } };
    expect(decodeTypeError("v1", "ConfigMap", cm, "json", texts)).toBeUndefined();
    expect(asked).toBe(0);
    const svc = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "s" },
      spec: { ports: [{ port: 80 }] },
    };
    expect(decodeTypeError("v1", "Service", svc, "json", texts)).toBeUndefined();
    expect(asked).toBe(1);
  });
});
