// Decoding of Kubernetes protobuf bodies built independently with protobufjs (field numbers as in
// upstream's generated.proto), compared with the JSON upstream's Go structs would marshal to.
import { describe, expect, it } from "vitest";
import { StatusError } from "../../../api/errors";
import { decodeKubeProtobuf, isKubeProtobuf } from "../../../api/protobuf/decode";
import { body, encodeMessage, envelopeRaw, seconds } from "./upstream-subset";

const utf8 = (s: string) => new TextEncoder().encode(s);

function statusOf(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (err) {
    if (err instanceof StatusError) return err;
    throw err;
  }
  throw new Error("expected a StatusError");
}

describe("decodeKubeProtobuf: objects kubectl creates", () => {
  it("decodes a Deployment as `kubectl create deployment web --image=busybox --replicas=3` sends it", () => {
    // Go's protobuf marshaller writes every non-pointer field, zero or not.
    const bytes = body("apps/v1", "Deployment", "Deployment", {
      metadata: { name: "web", creationTimestamp: {}, labels: { app: "web" } },
      spec: {
        replicas: 3,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { creationTimestamp: {}, labels: { app: "web" } },
          spec: {
            containers: [
              {
                name: "busybox",
                image: "busybox",
                resources: {},
                terminationMessagePath: "",
                imagePullPolicy: "",
                stdin: false,
              },
            ],
            restartPolicy: "",
            dnsPolicy: "",
            hostNetwork: false,
            schedulerName: "",
          },
        },
        strategy: { type: "" },
        minReadySeconds: 0,
        paused: false,
      },
      status: {
        observedGeneration: 0,
        replicas: 0,
        updatedReplicas: 0,
        availableReplicas: 0,
        readyReplicas: 0,
      },
    });
    const { object, unknownFields } = decodeKubeProtobuf(bytes);
    expect(unknownFields).toEqual([]);
    expect(object).toStrictEqual({
      kind: "Deployment",
      apiVersion: "apps/v1",
      metadata: { name: "web", creationTimestamp: null, labels: { app: "web" } },
      spec: {
        replicas: 3,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { creationTimestamp: null, labels: { app: "web" } },
          spec: { containers: [{ name: "busybox", image: "busybox", resources: {} }] },
        },
        strategy: {},
      },
      status: {},
    });
  });

  it("keeps zero values of pointer fields and decodes IntOrString, Quantity, probes and inlined volume sources", () => {
    const bytes = body("apps/v1", "Deployment", "Deployment", {
      metadata: { name: "api", namespace: "prod", creationTimestamp: {} },
      spec: {
        replicas: 0,
        selector: { matchExpressions: [{ key: "tier", operator: "In", values: ["web", "api"] }] },
        template: {
          metadata: { creationTimestamp: {} },
          spec: {
            volumes: [
              { name: "cache", volumeSource: { emptyDir: { medium: "", sizeLimit: { string: "1Gi" } } } },
            ],
            containers: [
              {
                name: "app",
                image: "nginx:1.27",
                command: ["nginx", "-g", "daemon off;"],
                ports: [{ name: "http", hostPort: 0, containerPort: 8080, protocol: "TCP" }],
                env: [
                  {
                    name: "POD",
                    value: "",
                    valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.name" } },
                  },
                  { name: "EMPTY", value: "" },
                ],
                resources: {
                  limits: { cpu: { string: "500m" }, memory: { string: "128Mi" } },
                  requests: { cpu: { string: "250m" } },
                },
                livenessProbe: {
                  handler: {
                    httpGet: {
                      path: "/healthz",
                      port: { type: 1, intVal: 0, strVal: "http" },
                      scheme: "HTTP",
                    },
                  },
                  initialDelaySeconds: 3,
                  periodSeconds: 0,
                },
                terminationMessagePath: "/dev/termination-log",
                imagePullPolicy: "IfNotPresent",
                stdin: false,
              },
            ],
            restartPolicy: "Always",
            terminationGracePeriodSeconds: 0,
            dnsPolicy: "ClusterFirst",
            nodeSelector: { "kubernetes.io/os": "linux" },
            hostNetwork: false,
            schedulerName: "default-scheduler",
            tolerations: [
              { key: "k", operator: "Exists", value: "", effect: "NoExecute", tolerationSeconds: 0 },
            ],
          },
        },
        strategy: {
          type: "RollingUpdate",
          rollingUpdate: {
            maxUnavailable: { type: 0, intVal: 0, strVal: "" },
            maxSurge: { type: 1, intVal: 0, strVal: "25%" },
          },
        },
        minReadySeconds: 5,
        revisionHistoryLimit: 0,
        paused: false,
        progressDeadlineSeconds: 600,
      },
      status: {
        observedGeneration: 4,
        replicas: 2,
        updatedReplicas: 2,
        availableReplicas: 1,
        readyReplicas: 0,
      },
    });
    const { object } = decodeKubeProtobuf(bytes);
    expect(object).toStrictEqual({
      kind: "Deployment",
      apiVersion: "apps/v1",
      metadata: { name: "api", namespace: "prod", creationTimestamp: null },
      spec: {
        replicas: 0,
        selector: { matchExpressions: [{ key: "tier", operator: "In", values: ["web", "api"] }] },
        template: {
          metadata: { creationTimestamp: null },
          spec: {
            volumes: [{ name: "cache", emptyDir: { sizeLimit: "1Gi" } }],
            containers: [
              {
                name: "app",
                image: "nginx:1.27",
                command: ["nginx", "-g", "daemon off;"],
                ports: [{ name: "http", containerPort: 8080, protocol: "TCP" }],
                env: [
                  { name: "POD", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.name" } } },
                  { name: "EMPTY" },
                ],
                resources: { limits: { cpu: "500m", memory: "128Mi" }, requests: { cpu: "250m" } },
                livenessProbe: {
                  httpGet: { path: "/healthz", port: "http", scheme: "HTTP" },
                  initialDelaySeconds: 3,
                },
                terminationMessagePath: "/dev/termination-log",
                imagePullPolicy: "IfNotPresent",
              },
            ],
            restartPolicy: "Always",
            terminationGracePeriodSeconds: 0,
            dnsPolicy: "ClusterFirst",
            nodeSelector: { "kubernetes.io/os": "linux" },
            schedulerName: "default-scheduler",
            tolerations: [{ key: "k", operator: "Exists", effect: "NoExecute", tolerationSeconds: 0 }],
          },
        },
        strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: "25%" } },
        minReadySeconds: 5,
        revisionHistoryLimit: 0,
        progressDeadlineSeconds: 600,
      },
      status: { observedGeneration: 4, replicas: 2, updatedReplicas: 2, availableReplicas: 1 },
    });
  });

  it("decodes ConfigMap data and binaryData, metadata times, owner references and managedFields", () => {
    const created = seconds("2024-05-06T07:08:09Z");
    const bytes = body("v1", "ConfigMap", "ConfigMap", {
      metadata: {
        name: "cfg",
        generateName: "",
        namespace: "team-a",
        uid: "0b6c6f1e-1111-2222-3333-444455556666",
        resourceVersion: "12",
        generation: 2,
        creationTimestamp: { seconds: created, nanos: 999_000_000 },
        deletionTimestamp: { seconds: seconds("2030-01-01T00:00:00Z"), nanos: 0 },
        deletionGracePeriodSeconds: 0,
        annotations: { note: "" },
        finalizers: ["example.com/cleanup"],
        ownerReferences: [
          { apiVersion: "apps/v1", kind: "Deployment", name: "d", uid: "du", controller: false },
        ],
        managedFields: [
          {
            manager: "kubectl-create",
            operation: "Update",
            apiVersion: "v1",
            time: { seconds: created, nanos: 0 },
            fieldsType: "FieldsV1",
            fieldsV1: { Raw: utf8('{"f:data":{".":{},"f:a":{}}}') },
            subresource: "",
          },
        ],
      },
      data: { a: "1", multi: "line\nvalue" },
      binaryData: { bin: new Uint8Array([0, 1, 0xff, 0xfe, 0x80]) },
      immutable: false,
    });
    expect(decodeKubeProtobuf(bytes).object).toStrictEqual({
      kind: "ConfigMap",
      apiVersion: "v1",
      metadata: {
        name: "cfg",
        namespace: "team-a",
        uid: "0b6c6f1e-1111-2222-3333-444455556666",
        resourceVersion: "12",
        generation: 2,
        creationTimestamp: "2024-05-06T07:08:09Z",
        deletionTimestamp: "2030-01-01T00:00:00Z",
        deletionGracePeriodSeconds: 0,
        annotations: { note: "" },
        ownerReferences: [
          { apiVersion: "apps/v1", kind: "Deployment", name: "d", uid: "du", controller: false },
        ],
        finalizers: ["example.com/cleanup"],
        managedFields: [
          {
            manager: "kubectl-create",
            operation: "Update",
            apiVersion: "v1",
            time: "2024-05-06T07:08:09Z",
            fieldsType: "FieldsV1",
            fieldsV1: { "f:data": { ".": {}, "f:a": {} } },
          },
        ],
      },
      immutable: false,
      data: { a: "1", multi: "line\nvalue" },
      binaryData: { bin: "AAH//oA=" },
    });
  });

  it("decodes Secret bytes as base64 strings, including empty values", () => {
    const bytes = body("v1", "Secret", "Secret", {
      metadata: { name: "s1", creationTimestamp: {} },
      data: { pw: utf8("hunter2"), empty: new Uint8Array(0) },
      stringData: { plain: "text" },
      type: "Opaque",
    });
    expect(decodeKubeProtobuf(bytes).object).toStrictEqual({
      kind: "Secret",
      apiVersion: "v1",
      metadata: { name: "s1", creationTimestamp: null },
      data: { pw: "aHVudGVyMg==", empty: "" },
      stringData: { plain: "text" },
      type: "Opaque",
    });
  });

  it("keeps map keys such as __proto__ as ordinary entries", () => {
    const bytes = body("v1", "ConfigMap", "ConfigMap", {
      // Computed keys: a literal __proto__ key would set the prototype instead.
      metadata: { name: "p", labels: { ["__proto__"]: "x" } },
      data: { ["__proto__"]: "y", constructor: "z" },
    });
    const object = decodeKubeProtobuf(bytes).object as { data: Record<string, string> };
    expect(Object.getPrototypeOf(object.data)).toBe(Object.prototype);
    expect(Object.entries(object.data)).toEqual([
      ["__proto__", "y"],
      ["constructor", "z"],
    ]);
  });

  it("decodes a RoleBinding", () => {
    const bytes = body("rbac.authorization.k8s.io/v1", "RoleBinding", "RoleBinding", {
      metadata: { name: "rb1", namespace: "default", creationTimestamp: {} },
      subjects: [
        { kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "alice", namespace: "" },
        { kind: "ServiceAccount", apiGroup: "", name: "builder", namespace: "ci" },
      ],
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "r1" },
    });
    expect(decodeKubeProtobuf(bytes).object).toStrictEqual({
      kind: "RoleBinding",
      apiVersion: "rbac.authorization.k8s.io/v1",
      metadata: { name: "rb1", namespace: "default", creationTimestamp: null },
      subjects: [
        { kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "alice" },
        { kind: "ServiceAccount", name: "builder", namespace: "ci" },
      ],
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "r1" },
    });
  });

  it("decodes a SelfSubjectAccessReview (kubectl auth can-i)", () => {
    const bytes = body("authorization.k8s.io/v1", "SelfSubjectAccessReview", "SelfSubjectAccessReview", {
      metadata: { creationTimestamp: {} },
      spec: {
        resourceAttributes: {
          namespace: "default",
          verb: "get",
          group: "",
          version: "",
          resource: "pods",
          subresource: "",
          name: "",
        },
      },
      status: { allowed: false, reason: "", denied: false },
    });
    expect(decodeKubeProtobuf(bytes).object).toStrictEqual({
      kind: "SelfSubjectAccessReview",
      apiVersion: "authorization.k8s.io/v1",
      metadata: { creationTimestamp: null },
      spec: { resourceAttributes: { namespace: "default", verb: "get", resource: "pods" } },
      status: { allowed: false },
    });
  });

  it("decodes a SubjectAccessReview with extra values (a map of string lists)", () => {
    const bytes = body("authorization.k8s.io/v1", "SubjectAccessReview", "SubjectAccessReview", {
      metadata: { creationTimestamp: {} },
      spec: {
        resourceAttributes: { verb: "list", resource: "secrets" },
        user: "bob",
        groups: ["devs"],
        extra: { scopes: { items: ["a", "b"] }, none: { items: [] } },
        uid: "",
      },
      status: { allowed: true, reason: "ok", denied: false },
    });
    expect(decodeKubeProtobuf(bytes).object).toStrictEqual({
      kind: "SubjectAccessReview",
      apiVersion: "authorization.k8s.io/v1",
      metadata: { creationTimestamp: null },
      spec: {
        resourceAttributes: { verb: "list", resource: "secrets" },
        user: "bob",
        groups: ["devs"],
        extra: { scopes: ["a", "b"], none: [] },
      },
      status: { allowed: true, reason: "ok" },
    });
  });

  it("decodes a TokenRequest (kubectl create token)", () => {
    const bytes = body("authentication.k8s.io/v1", "TokenRequest", "TokenRequest", {
      metadata: { creationTimestamp: {} },
      spec: {
        audiences: ["https://kubernetes.default.svc"],
        boundObjectRef: { kind: "Pod", apiVersion: "v1", name: "p1", uID: "123" },
        expirationSeconds: 3600,
      },
      status: { token: "", expirationTimestamp: {} },
    });
    expect(decodeKubeProtobuf(bytes).object).toStrictEqual({
      kind: "TokenRequest",
      apiVersion: "authentication.k8s.io/v1",
      metadata: { creationTimestamp: null },
      spec: {
        audiences: ["https://kubernetes.default.svc"],
        expirationSeconds: 3600,
        boundObjectRef: { kind: "Pod", apiVersion: "v1", name: "p1", uid: "123" },
      },
      status: { token: "", expirationTimestamp: null },
    });
  });

  it("decodes a Lease with MicroTime fields", () => {
    const bytes = body("coordination.k8s.io/v1", "Lease", "Lease", {
      metadata: { name: "node-1", namespace: "kube-node-lease", creationTimestamp: {} },
      spec: {
        holderIdentity: "node-1",
        leaseDurationSeconds: 40,
        renewTime: { seconds: seconds("2025-03-04T05:06:07Z"), nanos: 123_456_789 },
        leaseTransitions: 0,
      },
    });
    expect(decodeKubeProtobuf(bytes).object).toStrictEqual({
      kind: "Lease",
      apiVersion: "coordination.k8s.io/v1",
      metadata: { name: "node-1", namespace: "kube-node-lease", creationTimestamp: null },
      spec: {
        holderIdentity: "node-1",
        leaseDurationSeconds: 40,
        renewTime: "2025-03-04T05:06:07.123456Z",
        leaseTransitions: 0,
      },
    });
  });

  it("decodes an Eviction and a Scale", () => {
    const eviction = body("policy/v1", "Eviction", "Eviction", {
      metadata: { name: "p1", namespace: "default", creationTimestamp: {} },
      deleteOptions: { gracePeriodSeconds: 10, dryRun: [] },
    });
    expect(decodeKubeProtobuf(eviction).object).toStrictEqual({
      kind: "Eviction",
      apiVersion: "policy/v1",
      metadata: { name: "p1", namespace: "default", creationTimestamp: null },
      deleteOptions: { gracePeriodSeconds: 10 },
    });
    const scale = body("autoscaling/v1", "Scale", "Scale", {
      metadata: { name: "web", namespace: "default", creationTimestamp: {} },
      spec: { replicas: 0 },
      status: { replicas: 3, selector: "" },
    });
    expect(decodeKubeProtobuf(scale).object).toStrictEqual({
      kind: "Scale",
      apiVersion: "autoscaling/v1",
      metadata: { name: "web", namespace: "default", creationTimestamp: null },
      spec: {},
      status: { replicas: 3 },
    });
  });
});

describe("decodeKubeProtobuf: DeleteOptions", () => {
  const options = encodeMessage("DeleteOptions", {
    gracePeriodSeconds: 0,
    preconditions: { uid: "u1", resourceVersion: "5" },
    propagationPolicy: "Foreground",
    dryRun: ["All"],
  });

  it.each(["v1", "apps/v1", "meta.k8s.io/v1"])("decodes DeleteOptions sent as %s", (apiVersion) => {
    expect(decodeKubeProtobuf(envelopeRaw(apiVersion, "DeleteOptions", options)).object).toStrictEqual({
      kind: "DeleteOptions",
      apiVersion,
      gracePeriodSeconds: 0,
      preconditions: { uid: "u1", resourceVersion: "5" },
      propagationPolicy: "Foreground",
      dryRun: ["All"],
    });
  });

  it("decodes empty DeleteOptions (kubectl drain --disable-eviction)", () => {
    expect(decodeKubeProtobuf(envelopeRaw("v1", "DeleteOptions", new Uint8Array(0))).object).toStrictEqual({
      kind: "DeleteOptions",
      apiVersion: "v1",
    });
  });
});

describe("decodeKubeProtobuf: unknown fields and errors", () => {
  it("skips field numbers it does not know and reports them with their JSON path", () => {
    const bytes = body("apps/v1", "Deployment", "DeploymentWithExtra", {
      metadata: { name: "x" },
      spec: { replicas: 2, futureField: "later" },
      topLevelExtra: "y",
    });
    const { object, unknownFields } = decodeKubeProtobuf(bytes);
    expect(unknownFields).toEqual(["spec.#999", "#77"]);
    expect(object.spec).toMatchObject({ replicas: 2 });
    expect(JSON.stringify(object)).not.toContain("later");
  });

  it("rejects a body without the k8s\\0 prefix with 400", () => {
    const err = statusOf(() => decodeKubeProtobuf(utf8('{"kind":"Pod"}')));
    expect(err.code).toBe(400);
    expect(err.reason).toBe("BadRequest");
    expect(err.message).toContain("protobuf");
  });

  it("rejects truncated data with 400", () => {
    const good = body("v1", "ConfigMap", "ConfigMap", { metadata: { name: "cfg" }, data: { a: "b" } });
    const err = statusOf(() => decodeKubeProtobuf(good.subarray(0, good.length - 6)));
    expect(err.code).toBe(400);
  });

  it("rejects a field with the wrong wire type with 400", () => {
    // ConfigMap field 1 (metadata) sent as a varint.
    const err = statusOf(() =>
      decodeKubeProtobuf(envelopeRaw("v1", "ConfigMap", new Uint8Array([0x08, 0x01]))),
    );
    expect(err.code).toBe(400);
    expect(err.message).toContain("metadata");
  });

  it("rejects a missing kind with 400", () => {
    expect(statusOf(() => decodeKubeProtobuf(envelopeRaw("v1", "", new Uint8Array(0)))).code).toBe(400);
  });

  it.each([
    ["v1", "Widget"],
    ["apps/v1", "Pod"],
    ["example.com/v1", "Deployment"],
    ["v1", "PodSpec"],
  ])("answers 415 for a kind it cannot decode (%s %s)", (apiVersion, kind) => {
    const err = statusOf(() => decodeKubeProtobuf(envelopeRaw(apiVersion, kind, new Uint8Array(0))));
    expect(err.code).toBe(415);
    expect(err.reason).toBe("UnsupportedMediaType");
    expect(err.message).toContain(kind);
  });

  it("answers 415 for an envelope with a content encoding", () => {
    const bytes = envelopeRaw("v1", "ConfigMap", new Uint8Array(0), { contentEncoding: "gzip" });
    expect(statusOf(() => decodeKubeProtobuf(bytes)).code).toBe(415);
  });

  it("rejects embedded JSON that does not parse with 400", () => {
    const bytes = body("v1", "ConfigMap", "ConfigMap", {
      metadata: { name: "m", managedFields: [{ manager: "x", fieldsV1: { Raw: utf8("{not json") } }] },
    });
    expect(statusOf(() => decodeKubeProtobuf(bytes)).code).toBe(400);
  });

  it("decodes a WatchEvent whose object is JSON or a nested protobuf envelope", () => {
    const inner = body("v1", "ConfigMap", "ConfigMap", { metadata: { name: "n" }, data: { k: "v" } });
    const nested = body("v1", "WatchEvent", "WatchEvent", { type: "ADDED", object: { raw: inner } });
    expect(decodeKubeProtobuf(nested).object).toStrictEqual({
      kind: "WatchEvent",
      apiVersion: "v1",
      type: "ADDED",
      object: {
        kind: "ConfigMap",
        apiVersion: "v1",
        metadata: { name: "n", creationTimestamp: null },
        data: { k: "v" },
      },
    });
    const json = body("v1", "WatchEvent", "WatchEvent", {
      type: "DELETED",
      object: { raw: utf8('{"kind":"X"}') },
    });
    expect(decodeKubeProtobuf(json).object).toStrictEqual({
      kind: "WatchEvent",
      apiVersion: "v1",
      type: "DELETED",
      object: { kind: "X" },
    });
  });
});

describe("isKubeProtobuf", () => {
  it.each([
    ["application/vnd.kubernetes.protobuf", true],
    ["Application/VND.Kubernetes.Protobuf; charset=binary", true],
    ["application/vnd.kubernetes.protobuf;stream=watch", true],
    ["application/json", false],
    ["application/apply-patch+yaml", false],
    ["", false],
    [null, false],
    [undefined, false],
  ])("%s -> %s", (ct, expected) => {
    expect(isKubeProtobuf(ct)).toBe(expected);
  });
});
