// Request bodies captured from real kubectl v1.32.4 (a plain-HTTP capture server answered
// discovery; see fixtures/kubectl-1.32-bodies.json). Where kubectl can print the same object with
// `--dry-run=client -o json` (Go's JSON of the very struct it encodes), the decoded body must equal
// that output exactly (fixtures/kubectl-1.32-dry-run-json.json). The others are checked against
// hand-written expectations derived from upstream's JSON tags.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { decodeKubeProtobuf, isKubeProtobuf } from "../../../api/protobuf/decode";

interface Capture {
  name: string;
  method: string;
  path: string;
  contentType: string;
  accept: string;
  hex: string;
}

const here = dirname(fileURLToPath(import.meta.url));
const load = (file: string) => JSON.parse(readFileSync(join(here, "fixtures", file), "utf8"));
const captures: Capture[] = load("kubectl-1.32-bodies.json").requests;
const dryRun: Record<string, unknown> = load("kubectl-1.32-dry-run-json.json").objects;
const bytesOf = (c: Capture) => new Uint8Array(Buffer.from(c.hex, "hex"));

const auth = "authorization.k8s.io/v1";
const rbac = "rbac.authorization.k8s.io/v1";
const noTime = { creationTimestamp: null };

const handChecked: Record<string, unknown> = {
  "create-token": {
    kind: "TokenRequest",
    apiVersion: "authentication.k8s.io/v1",
    metadata: noTime,
    spec: { audiences: null, expirationSeconds: 3600, boundObjectRef: null },
    status: { token: "", expirationTimestamp: null },
  },
  "create-token-bound": {
    kind: "TokenRequest",
    apiVersion: "authentication.k8s.io/v1",
    metadata: noTime,
    spec: {
      audiences: ["aud1", "aud2"],
      expirationSeconds: null,
      boundObjectRef: { kind: "Pod", apiVersion: "v1", name: "p1", uid: "abc" },
    },
    status: { token: "", expirationTimestamp: null },
  },
  "auth-can-i-get-pods": {
    kind: "SelfSubjectAccessReview",
    apiVersion: auth,
    metadata: noTime,
    spec: { resourceAttributes: { namespace: "default", verb: "get", resource: "pods" } },
    status: { allowed: false },
  },
  // `kubectl auth can-i create pods/exec` reads "pods/exec" as TYPE/NAME.
  "auth-can-i-subresource": {
    kind: "SelfSubjectAccessReview",
    apiVersion: auth,
    metadata: noTime,
    spec: { resourceAttributes: { namespace: "ns1", verb: "create", resource: "pods", name: "exec" } },
    status: { allowed: false },
  },
  "auth-can-i-nonresource": {
    kind: "SelfSubjectAccessReview",
    apiVersion: auth,
    metadata: noTime,
    spec: { nonResourceAttributes: { path: "/healthz", verb: "get" } },
    status: { allowed: false },
  },
  "auth-can-i-all-namespaces": {
    kind: "SelfSubjectAccessReview",
    apiVersion: auth,
    metadata: noTime,
    spec: { resourceAttributes: { verb: "list", resource: "secrets", subresource: "x" } },
    status: { allowed: false },
  },
  "auth-can-i-list": {
    kind: "SelfSubjectRulesReview",
    apiVersion: auth,
    metadata: noTime,
    spec: { namespace: "default" },
    status: { resourceRules: null, nonResourceRules: null, incomplete: false },
  },
  "auth-whoami": {
    kind: "SelfSubjectReview",
    apiVersion: "authentication.k8s.io/v1",
    metadata: noTime,
    status: { userInfo: {} },
  },
  "drain-delete-options": { kind: "DeleteOptions", apiVersion: "v1" },
  "debug-node-pod": {
    kind: "Pod",
    apiVersion: "v1",
    metadata: { name: "node-debugger-n1-47pfh", creationTimestamp: null },
    spec: {
      volumes: [{ name: "host-root", hostPath: { path: "/" } }],
      containers: [
        {
          name: "debugger",
          image: "busybox",
          resources: {},
          volumeMounts: [{ name: "host-root", mountPath: "/host" }],
          terminationMessagePolicy: "File",
          stdin: true,
          tty: true,
        },
      ],
      restartPolicy: "Never",
      nodeName: "n1",
      hostNetwork: true,
      hostPID: true,
      hostIPC: true,
      tolerations: [{ operator: "Exists" }],
    },
    status: {},
  },
  "debug-copy-to-pod": {
    kind: "Pod",
    apiVersion: "v1",
    metadata: { name: "p9-copy", namespace: "default", creationTimestamp: null },
    spec: {
      containers: [
        { name: "c", image: "busybox", resources: {} },
        { name: "dbg", image: "busybox", resources: {}, terminationMessagePolicy: "File" },
      ],
    },
    status: {},
  },
  "certificate-approve": {
    kind: "CertificateSigningRequest",
    apiVersion: "certificates.k8s.io/v1",
    metadata: { name: "csr1", uid: "cu", resourceVersion: "7", creationTimestamp: null },
    spec: {
      request: "AAAA",
      signerName: "kubernetes.io/kube-apiserver-client",
      usages: ["client auth"],
      username: "bob",
    },
    status: {
      conditions: [
        {
          type: "Approved",
          status: "True",
          reason: "KubectlApprove",
          message: "This CSR was approved by kubectl certificate approve.",
          lastUpdateTime: "2026-11-29T18:00:39Z",
          lastTransitionTime: null,
        },
      ],
    },
  },
  "auth-reconcile-clusterrole": {
    kind: "ClusterRole",
    apiVersion: rbac,
    metadata: { name: "agg-view", creationTimestamp: null, labels: { team: "a" } },
    rules: [
      {
        verbs: ["get", "watch"],
        apiGroups: ["", "apps"],
        resources: ["pods", "deployments/scale"],
        resourceNames: ["x"],
      },
      { verbs: ["get"], nonResourceURLs: ["/metrics", "/logs/*"] },
    ],
    aggregationRule: {
      clusterRoleSelectors: [
        { matchLabels: { "rbac.example.com/aggregate-to-view": "true" } },
        {
          matchExpressions: [
            { key: "tier", operator: "In", values: ["gold", "silver"] },
            { key: "legacy", operator: "DoesNotExist" },
          ],
        },
      ],
    },
  },
  "auth-reconcile-rolebinding": {
    kind: "RoleBinding",
    apiVersion: rbac,
    metadata: { name: "rb-many", namespace: "team-a", creationTimestamp: null, annotations: { why: "test" } },
    subjects: [
      { kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "bob" },
      { kind: "Group", apiGroup: "rbac.authorization.k8s.io", name: "system:authenticated" },
      { kind: "ServiceAccount", name: "builder", namespace: "ci" },
    ],
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "agg-view" },
  },
};

describe("kubectl 1.32 captured protobuf bodies", () => {
  it("every capture has an expectation", () => {
    const missing = captures
      .filter((c) => !(c.name in dryRun) && !(c.name in handChecked))
      .map((c) => c.name);
    expect(missing).toEqual([]);
    expect(captures.length).toBeGreaterThanOrEqual(45);
  });

  it("kubectl sends these bodies as protobuf but also accepts JSON responses", () => {
    for (const c of captures) {
      expect(isKubeProtobuf(c.contentType)).toBe(true);
      expect(c.accept.split(",").map((s) => s.trim())).toEqual([
        "application/vnd.kubernetes.protobuf",
        "application/json",
      ]);
    }
  });

  it.each(captures.filter((c) => c.name in dryRun).map((c) => [c.name, c] as const))(
    "%s decodes to kubectl's own --dry-run=client JSON",
    (_name, capture) => {
      const { object, unknownFields } = decodeKubeProtobuf(bytesOf(capture));
      expect(unknownFields).toEqual([]);
      expect(object).toStrictEqual(dryRun[capture.name]);
    },
  );

  it.each(captures.filter((c) => c.name in handChecked).map((c) => [c.name, c] as const))(
    "%s decodes to the expected JSON",
    (_name, capture) => {
      const { object, unknownFields } = decodeKubeProtobuf(bytesOf(capture));
      expect(unknownFields).toEqual([]);
      expect(object).toStrictEqual(handChecked[capture.name]);
    },
  );

  it("decodes a full pod template copied by `kubectl create job --from=cronjob/...`", () => {
    // The served CronJob (fixtures/rich-cronjob-served.json) carries nearly every PodSpec field;
    // the whole Job is compared with kubectl's dry-run JSON above. Spot checks of the encodings:
    const capture = captures.find((c) => c.name === "create-job-from-rich-cronjob")!;
    const served = load("rich-cronjob-served.json");
    const job = decodeKubeProtobuf(bytesOf(capture)).object as any;
    const template = job.spec.template;
    expect(template.metadata).toStrictEqual(served.spec.jobTemplate.spec.template.metadata);
    const main = template.spec.containers[0];
    expect(main.livenessProbe.httpGet.port).toBe("http");
    expect(main.livenessProbe.terminationGracePeriodSeconds).toBe(0);
    expect(main.readinessProbe.tcpSocket.port).toBe(80);
    expect(main.resources.limits).toStrictEqual({ cpu: "500m", memory: "128Mi", "nvidia.com/gpu": "1" });
    expect(
      template.spec.volumes.map((v: Record<string, unknown>) => Object.keys(v).sort().join(",")),
    ).toEqual([
      "emptyDir,name",
      "emptyDir,name",
      "configMap,name",
      "name,secret",
      "hostPath,name",
      "downwardAPI,name",
      "name,projected",
      "name,persistentVolumeClaim",
      "name,nfs",
      "image,name",
      "ephemeral,name",
    ]);
    expect(template.spec.securityContext.runAsUser).toBe(0);
    expect(job.spec.podFailurePolicy.rules[0].onExitCodes.values).toEqual([1, 2, 42]);
  });
});
