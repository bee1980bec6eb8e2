// Every write through a subresource runs the admission chain with the attributes upstream gives
// it (resource, subresource, operation, the subresource's own kind): NodeRestriction with a node
// credential, a ValidatingAdmissionPolicy denying every subresource write, and a webhook that
// sees an Eviction. Each refusal is a metav1.Status and leaves the objects as they were. Its own
// server, with static tokens for two nodes.
import { execFileSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allResources } from "../../api/registry";
import { startDevServer } from "../../local-engine/devserver";
import { certificateRequest } from "../helpers/client-certs";
import { api, freshNamespace, type Target } from "../helpers/cluster";
import { removeStateDir, tempStateDir } from "../helpers/own-server";

const CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
/** resources as a Status names them outside the core group */
const GROUP_QUALIFIED: Record<string, string> = {
  deployments: "deployments.apps",
  clusters: "clusters.tenancy.edgeplane.dev",
  certificatesigningrequests: "certificatesigningrequests.certificates.k8s.io",
};

const ADMREG = "/apis/admissionregistration.k8s.io/v1";
const CLUSTERS = "/apis/tenancy.edgeplane.dev/v1alpha1/clusters";
const TOKENS = [
  "tok-node-a,system:node:node-a,u3,system:nodes",
  "tok-node-b,system:node:node-b,u4,system:nodes",
];
const MERGE = { "content-type": "application/merge-patch+json" };
const STRATEGIC = { "content-type": "application/strategic-merge-patch+json" };

async function eventually<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 6000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A validating webhook that records each AdmissionReview and denies it. */
function denyingWebhook(): Promise<{ server: Server; url: string; reviews: any[] }> {
  const reviews: any[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => {
      body += d;
    });
    req.on("end", () => {
      const review = JSON.parse(body);
      reviews.push(review.request);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          apiVersion: "admission.k8s.io/v1",
          kind: "AdmissionReview",
          response: {
            uid: review.request.uid,
            allowed: false,
            status: { code: 403, message: "evictions are reviewed by hand" },
          },
        }),
      );
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, reviews }),
    ),
  );
}

/** The subresources some verb writes through, by name, over every built-in resource. */
function writableSubresources(): Set<string> {
  const out = new Set<string>();
  for (const def of allResources())
    for (const [name, sub] of Object.entries(def.subresources ?? {}))
      if (sub.verbs.some((v) => ["create", "update", "patch", "delete"].includes(v))) out.add(name);
  return out;
}

describe("admission of subresource writes", () => {
  let server: Target & { stop(): Promise<void> };
  let stateDir: string;
  let ns: string;
  let finNs: string;
  let nodeA: Target;
  let hook: Awaited<ReturnType<typeof denyingWebhook>>;
  const pods = () => `/api/v1/namespaces/${ns}/pods`;
  const getPod = async (name: string) => (await api(server, "GET", `${pods()}/${name}`)).json;

  const pod = (name: string, nodeName?: string) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, labels: { app: "sr" } },
    spec: {
      // no scheduler takes the unbound one: only the refused binding below could bind it
      ...(nodeName ? { nodeName } : { schedulerName: "sr-nobody" }),
      serviceAccountName: "sr-sa",
      containers: [{ name: "c", image: "busybox" }],
    },
  });

  beforeAll(async () => {
    hook = await denyingWebhook();
    stateDir = tempStateDir("edgeplane-subadm-");
    server = await startDevServer({ stateDir, quiet: true, tokens: TOKENS });
    nodeA = { url: server.url, token: "tok-node-a", kubeconfigPath: "" };
    ns = await freshNamespace(server, "sr");
    finNs = await freshNamespace(server, "sr-fin");
    const made = [
      await api(server, "POST", `/api/v1/namespaces/${ns}/serviceaccounts`, {
        apiVersion: "v1",
        kind: "ServiceAccount",
        metadata: { name: "sr-sa" },
      }),
    ];
    for (const p of [
      pod("sr-pod-a", "node-a"),
      pod("sr-pod-b", "node-b"),
      pod("sr-pending"),
      pod("nr-pod-a", "node-a"),
      pod("nr-pod-b", "node-b"),
      pod("wh-pod", "node-a"),
    ])
      made.push(await api(server, "POST", pods(), p));
    made.push(
      await api(server, "POST", `/apis/apps/v1/namespaces/${ns}/deployments`, {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "sr-deploy" },
        spec: {
          replicas: 0,
          selector: { matchLabels: { app: "sr-deploy" } },
          template: {
            metadata: { labels: { app: "sr-deploy" } },
            spec: { containers: [{ name: "c", image: "busybox" }] },
          },
        },
      }),
      await api(server, "POST", "/api/v1/nodes", {
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: "sr-node" },
      }),
      await api(server, "POST", CLUSTERS, {
        apiVersion: "tenancy.edgeplane.dev/v1alpha1",
        kind: "Cluster",
        metadata: { name: "sr-cluster" },
      }),
      await api(server, "POST", CSRS, {
        apiVersion: "certificates.k8s.io/v1",
        kind: "CertificateSigningRequest",
        metadata: { name: "sr-csr" },
        spec: {
          // a PKCS#10 request as a client makes one
          request: Buffer.from(
            execFileSync(
              "openssl",
              ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"].concat([
                "-keyout",
                "/dev/null",
                "-subj",
                "/CN=sr-user",
              ]),
              { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] },
            ),
          ).toString("base64"),
          signerName: "example.com/signer",
          usages: ["client auth"],
        },
      }),
    );
    for (const r of made) expect(r.status, r.text).toBe(201);
  });

  afterAll(async () => {
    await server?.stop();
    removeStateDir(stateDir);
    await new Promise((r) => hook?.server.close(r));
  });

  describe("NodeRestriction with a node credential", () => {
    it("a node cannot evict a pod bound to another node; its own it can", async () => {
      const evict = (name: string) =>
        api(nodeA, "POST", `${pods()}/${name}/eviction`, {
          apiVersion: "policy/v1",
          kind: "Eviction",
          metadata: { name, namespace: ns },
        });
      const theirs = await eventually(
        () => evict("nr-pod-b"),
        (r) => r.status !== 403 || r.json?.message?.includes("can only evict"),
      );
      expect(theirs.status, theirs.text).toBe(403);
      expect(theirs.json).toMatchObject({
        kind: "Status",
        status: "Failure",
        reason: "Forbidden",
        code: 403,
        message:
          'pods "nr-pod-b" is forbidden: node node-a can only evict pods with spec.nodeName set to itself',
        details: { name: "nr-pod-b", kind: "pods" },
      });
      const left = await getPod("nr-pod-b");
      expect(left.metadata.deletionTimestamp).toBeUndefined();
      expect((left.status?.conditions ?? []).map((c: any) => c.type)).not.toContain("DisruptionTarget");
      const mine = await evict("nr-pod-a");
      expect(mine.status, mine.text).toBe(201);
    });

    it("a node's refused delete names the pod", async () => {
      const r = await api(nodeA, "DELETE", `${pods()}/nr-pod-b`);
      expect(r.status, r.text).toBe(403);
      expect(r.json.message).toBe(
        'pods "nr-pod-b" is forbidden: node "node-a" can only delete pods with spec.nodeName set to itself',
      );
      expect(r.json.details.name).toBe("nr-pod-b");
    });

    it("a node cannot get a token bound to a pod on another node", async () => {
      const b = await getPod("sr-pod-b");
      const r = await eventually(
        () =>
          api(nodeA, "POST", `/api/v1/namespaces/${ns}/serviceaccounts/sr-sa/token`, {
            apiVersion: "authentication.k8s.io/v1",
            kind: "TokenRequest",
            spec: {
              boundObjectRef: { apiVersion: "v1", kind: "Pod", name: "sr-pod-b", uid: b.metadata.uid },
            },
          }),
        // the Node authorizer learns of sr-sa through sr-pod-a a moment after it is created
        (r) => r.status !== 403 || r.json?.message?.includes("different node"),
      );
      expect(r.status, r.text).toBe(403);
      expect(r.json.message).toBe(
        'serviceaccounts "sr-sa" is forbidden: node requested token bound to a pod scheduled on a different node',
      );
      expect(r.json.status?.token).toBeUndefined();
    });
  });

  describe("a webhook on pods/eviction", () => {
    it("sees a CREATE of pods/eviction with kind policy/v1 Eviction, and its denial stands", async () => {
      const cfg = await api(server, "POST", `${ADMREG}/validatingwebhookconfigurations`, {
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingWebhookConfiguration",
        metadata: { name: "sr-evictions" },
        webhooks: [
          {
            name: "evictions.edgeplane.test",
            clientConfig: { url: hook.url },
            rules: [
              { operations: ["CREATE"], apiGroups: [""], apiVersions: ["v1"], resources: ["pods/eviction"] },
            ],
            failurePolicy: "Fail",
            sideEffects: "None",
            admissionReviewVersions: ["v1"],
            timeoutSeconds: 5,
          },
        ],
      });
      expect(cfg.status, cfg.text).toBe(201);
      const r = await eventually(
        () =>
          api(server, "POST", `${pods()}/wh-pod/eviction`, {
            apiVersion: "policy/v1",
            kind: "Eviction",
            metadata: { name: "wh-pod" },
          }),
        (r) => r.status !== 201,
      );
      expect(r.status, r.text).toBe(403);
      expect(r.json.message).toBe(
        'admission webhook "evictions.edgeplane.test" denied the request: evictions are reviewed by hand',
      );
      expect(hook.reviews.at(-1)).toMatchObject({
        kind: { group: "policy", version: "v1", kind: "Eviction" },
        resource: { group: "", version: "v1", resource: "pods" },
        subResource: "eviction",
        name: "wh-pod",
        namespace: ns,
        operation: "CREATE",
        object: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name: "wh-pod", namespace: ns } },
      });
      expect((await getPod("wh-pod")).metadata.deletionTimestamp).toBeUndefined();
      await api(server, "DELETE", `${ADMREG}/validatingwebhookconfigurations/sr-evictions`);
    });
  });

  describe("deletecollection", () => {
    it("admits each object as its own DELETE: one refusal refuses the request and deletes nothing", async () => {
      const dc = await freshNamespace(server, "dc");
      const cms = `/api/v1/namespaces/${dc}/configmaps`;
      for (const [name, labels] of [
        ["keep-me", { protect: "yes", set: "dc" }],
        ["a", { set: "dc" }],
        ["b", { set: "dc" }],
      ] as const) {
        const r = await api(server, "POST", cms, {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name, labels },
        });
        expect(r.status, r.text).toBe(201);
      }
      const p = await api(server, "POST", `${ADMREG}/validatingadmissionpolicies`, {
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingAdmissionPolicy",
        metadata: { name: "dc-protect" },
        spec: {
          matchConstraints: {
            resourceRules: [
              { apiGroups: [""], apiVersions: ["v1"], operations: ["DELETE"], resources: ["configmaps"] },
            ],
          },
          validations: [{ expression: "false", message: "this one is protected" }],
        },
      });
      expect(p.status, p.text).toBe(201);
      const b = await api(server, "POST", `${ADMREG}/validatingadmissionpolicybindings`, {
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingAdmissionPolicyBinding",
        metadata: { name: "dc-protect-binding" },
        spec: {
          policyName: "dc-protect",
          validationActions: ["Deny"],
          matchResources: { objectSelector: { matchLabels: { protect: "yes" } } },
        },
      });
      expect(b.status, b.text).toBe(201);
      // the single delete is refused once the policy is read (a cache of about a second)
      const one = await eventually(
        () => api(server, "DELETE", `${cms}/keep-me?dryRun=All`),
        (r) => r.status === 422,
      );
      expect(one.status, one.text).toBe(422);
      const all = await api(server, "DELETE", `${cms}?labelSelector=set%3Ddc`);
      expect(all.status, all.text).toBe(422);
      expect(all.json).toMatchObject({
        kind: "Status",
        reason: "Invalid",
        code: 422,
        message:
          "configmaps \"keep-me\" is forbidden: ValidatingAdmissionPolicy 'dc-protect' with binding 'dc-protect-binding' denied request: this one is protected",
      });
      const left = await api(server, "GET", `${cms}?labelSelector=set%3Ddc`);
      expect(left.json.items.map((i: any) => i.metadata.name).sort()).toEqual(["a", "b", "keep-me"]);
      // a collection the policy does not refuse goes
      const rest = await api(server, "DELETE", `${cms}?labelSelector=set%3Ddc,protect!%3Dyes`);
      expect(rest.status, rest.text).toBe(200);
      expect(rest.json.items.map((i: any) => i.metadata.name).sort()).toEqual(["a", "b"]);
      const now = await api(server, "GET", `${cms}?labelSelector=set%3Ddc`);
      expect(now.json.items.map((i: any) => i.metadata.name)).toEqual(["keep-me"]);
      await api(server, "DELETE", `${ADMREG}/validatingadmissionpolicybindings/dc-protect-binding`);
      await api(server, "DELETE", `${ADMREG}/validatingadmissionpolicies/dc-protect`);
    });
  });

  describe("a ValidatingAdmissionPolicy denying every subresource write", () => {
    interface Row {
      subresource: string;
      method: string;
      path: () => string;
      body?: () => unknown | Promise<unknown>;
      headers?: Record<string, string>;
      /** what the policy's message says of the request */
      want: string;
      /** the state the refused request must have left alone */
      unchanged: () => Promise<void>;
    }
    const rows: Row[] = [
      {
        subresource: "eviction",
        method: "POST",
        path: () => `${pods()}/sr-pod-a/eviction`,
        body: () => ({ apiVersion: "policy/v1", kind: "Eviction", metadata: { name: "sr-pod-a" } }),
        want: "CREATE pods/eviction as policy/v1, Kind=Eviction",
        unchanged: async () => {
          const p = await getPod("sr-pod-a");
          expect(p.metadata.deletionTimestamp).toBeUndefined();
          expect((p.status?.conditions ?? []).map((c: any) => c.type)).not.toContain("DisruptionTarget");
        },
      },
      {
        subresource: "binding",
        method: "POST",
        path: () => `${pods()}/sr-pending/binding`,
        body: () => ({
          apiVersion: "v1",
          kind: "Binding",
          metadata: { name: "sr-pending" },
          target: { apiVersion: "v1", kind: "Node", name: "node-a" },
        }),
        want: "CREATE pods/binding as /v1, Kind=Binding",
        unchanged: async () => expect((await getPod("sr-pending")).spec.nodeName).toBeUndefined(),
      },
      {
        subresource: "binding (core/v1 bindings)",
        method: "POST",
        path: () => `/api/v1/namespaces/${ns}/bindings`,
        body: () => ({
          apiVersion: "v1",
          kind: "Binding",
          metadata: { name: "sr-pending" },
          target: { apiVersion: "v1", kind: "Node", name: "node-a" },
        }),
        want: "CREATE bindings/ as /v1, Kind=Binding",
        unchanged: async () => expect((await getPod("sr-pending")).spec.nodeName).toBeUndefined(),
      },
      {
        subresource: "status",
        method: "PATCH",
        path: () => `${pods()}/sr-pod-a/status`,
        body: () => ({ status: { conditions: [{ type: "sr-mark", status: "True" }] } }),
        headers: STRATEGIC,
        want: "UPDATE pods/status as /v1, Kind=Pod",
        unchanged: async () =>
          expect(((await getPod("sr-pod-a")).status?.conditions ?? []).map((c: any) => c.type)).not.toContain(
            "sr-mark",
          ),
      },
      {
        subresource: "status (apps)",
        method: "PATCH",
        path: () => `/apis/apps/v1/namespaces/${ns}/deployments/sr-deploy/status`,
        body: () => ({ status: { observedGeneration: 99 } }),
        headers: MERGE,
        want: "UPDATE deployments/status as apps/v1, Kind=Deployment",
        unchanged: async () => {
          const d = await api(server, "GET", `/apis/apps/v1/namespaces/${ns}/deployments/sr-deploy`);
          expect(d.json.status?.observedGeneration).not.toBe(99);
        },
      },
      {
        subresource: "status (cluster-scoped)",
        method: "PATCH",
        path: () => "/api/v1/nodes/sr-node/status",
        body: () => ({ status: { capacity: { pods: "7" } } }),
        headers: MERGE,
        want: "UPDATE nodes/status as /v1, Kind=Node",
        unchanged: async () =>
          expect((await api(server, "GET", "/api/v1/nodes/sr-node")).json.status?.capacity?.pods).not.toBe(
            "7",
          ),
      },
      {
        subresource: "ephemeralcontainers",
        method: "PATCH",
        path: () => `${pods()}/sr-pod-a/ephemeralcontainers`,
        body: () => ({
          spec: { ephemeralContainers: [{ name: "debug", image: "busybox", targetContainerName: "c" }] },
        }),
        headers: STRATEGIC,
        want: "UPDATE pods/ephemeralcontainers as /v1, Kind=Pod",
        unchanged: async () => expect((await getPod("sr-pod-a")).spec.ephemeralContainers).toBeUndefined(),
      },
      {
        subresource: "token",
        method: "POST",
        path: () => `/api/v1/namespaces/${ns}/serviceaccounts/sr-sa/token`,
        body: () => ({ apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: {} }),
        want: "CREATE serviceaccounts/token as authentication.k8s.io/v1, Kind=TokenRequest",
        unchanged: async () => {},
      },
      {
        // a client certificate of the cluster: nothing is stored, and none is issued when refused
        subresource: "certificate",
        method: "POST",
        path: () => `${CLUSTERS}/sr-cluster/certificate`,
        body: () => ({
          apiVersion: "certificates.k8s.io/v1",
          kind: "CertificateSigningRequest",
          spec: { request: Buffer.from(certificateRequest("sr-user").csr).toString("base64") },
        }),
        want: "CREATE clusters/certificate as certificates.k8s.io/v1, Kind=CertificateSigningRequest",
        unchanged: async () => {},
      },
      {
        subresource: "scale",
        method: "PATCH",
        path: () => `/apis/apps/v1/namespaces/${ns}/deployments/sr-deploy/scale`,
        body: () => ({ spec: { replicas: 3 } }),
        headers: MERGE,
        want: "UPDATE deployments/scale as autoscaling/v1, Kind=Scale",
        unchanged: async () => {
          const d = await api(server, "GET", `/apis/apps/v1/namespaces/${ns}/deployments/sr-deploy`);
          expect(d.json.spec.replicas).toBe(0);
        },
      },
      {
        subresource: "finalize",
        method: "PUT",
        path: () => `/api/v1/namespaces/${finNs}/finalize`,
        body: async () => {
          const n = (await api(server, "GET", `/api/v1/namespaces/${finNs}`)).json;
          return { ...n, spec: { finalizers: [] } };
        },
        want: "UPDATE namespaces/finalize as /v1, Kind=Namespace",
        unchanged: async () =>
          expect((await api(server, "GET", `/api/v1/namespaces/${finNs}`)).json.spec.finalizers).toEqual([
            "kubernetes",
          ]),
      },
      {
        subresource: "approval",
        method: "PUT",
        path: () => `${CSRS}/sr-csr/approval`,
        body: async () => {
          const c = (await api(server, "GET", `${CSRS}/sr-csr`)).json;
          const approved = { type: "Approved", status: "True", reason: "Test", message: "approved" };
          return { ...c, status: { conditions: [approved] } };
        },
        want: "UPDATE certificatesigningrequests/approval as certificates.k8s.io/v1, Kind=CertificateSigningRequest",
        unchanged: async () =>
          expect((await api(server, "GET", `${CSRS}/sr-csr`)).json.status?.conditions ?? []).toEqual([]),
      },
      {
        subresource: "exec",
        method: "POST",
        path: () => `${pods()}/sr-pod-a/exec?command=true&stdout=true`,
        want: "CONNECT pods/exec as /v1, Kind=PodExecOptions",
        unchanged: async () => {},
      },
      {
        subresource: "attach",
        method: "POST",
        path: () => `${pods()}/sr-pod-a/attach?stdout=true`,
        want: "CONNECT pods/attach as /v1, Kind=PodAttachOptions",
        unchanged: async () => {},
      },
      {
        subresource: "portforward",
        method: "POST",
        path: () => `${pods()}/sr-pod-a/portforward?ports=80`,
        want: "CONNECT pods/portforward as /v1, Kind=PodPortForwardOptions",
        unchanged: async () => {},
      },
    ];

    beforeAll(async () => {
      const p = await api(server, "POST", `${ADMREG}/validatingadmissionpolicies`, {
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingAdmissionPolicy",
        metadata: { name: "sr-deny" },
        spec: {
          failurePolicy: "Fail",
          matchConstraints: {
            resourceRules: [
              { apiGroups: ["*"], apiVersions: ["*"], operations: ["*"], resources: ["*", "*/*"] },
            ],
          },
          validations: [
            {
              expression:
                "!(request.name.startsWith('sr-') && (has(request.subResource) || request.resource.resource == 'bindings'))",
              messageExpression:
                "'denied ' + request.operation + ' ' + request.resource.resource + '/' + (has(request.subResource) ? request.subResource : '') + ' as ' + request.kind.group + '/' + request.kind.version + ', Kind=' + request.kind.kind",
            },
          ],
        },
      });
      expect(p.status, p.text).toBe(201);
      const b = await api(server, "POST", `${ADMREG}/validatingadmissionpolicybindings`, {
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingAdmissionPolicyBinding",
        metadata: { name: "sr-deny-binding" },
        spec: { policyName: "sr-deny", validationActions: ["Deny"] },
      });
      expect(b.status, b.text).toBe(201);
      // policies are read through a cache of about a second: wait until the policy bites
      const first = await eventually(
        () => api(server, "PATCH", `${pods()}/sr-pod-a/status?dryRun=All`, { metadata: {} }, MERGE),
        (r) => r.status === 422,
      );
      expect(first.status, first.text).toBe(422);
    });

    it("covers every writable subresource the API serves", () => {
      const covered = new Set(rows.map((r) => r.subresource.split(" ")[0]));
      // proxy is listed by discovery but not served: the next test shows it writes nothing
      expect([...writableSubresources()].filter((s) => !covered.has(s) && s !== "proxy").sort()).toEqual([]);
    });

    it("proxy, listed but not served, is a 404 that writes nothing", async () => {
      for (const path of [`${pods()}/sr-pod-a/proxy`, "/api/v1/nodes/sr-node/proxy"]) {
        const r = await api(server, "POST", path, "");
        expect(r.status, r.text).toBe(404);
        expect(r.json).toMatchObject({ kind: "Status", reason: "NotFound", code: 404 });
      }
    });

    it.each(rows.map((r) => [r.subresource, r] as const))(
      "%s is admitted, and its refusal writes nothing",
      async (_, row) => {
        const body = row.body ? await row.body() : undefined;
        const r = await api(server, row.method, row.path(), body, row.headers ?? {});
        expect(r.status, r.text).toBe(422);
        const name = row.path().includes("/bindings")
          ? "sr-pending"
          : row.path().split("?")[0].split("/").at(-2);
        const resource = row.want.split(" ")[1].split("/")[0];
        const message = `ValidatingAdmissionPolicy 'sr-deny' with binding 'sr-deny-binding' denied request: denied ${row.want}`;
        expect(r.json).toMatchObject({
          kind: "Status",
          apiVersion: "v1",
          status: "Failure",
          reason: "Invalid",
          code: 422,
          message: `${GROUP_QUALIFIED[resource] ?? resource} "${name}" is forbidden: ${message}`,
        });
        await row.unchanged();
      },
    );
  });
});
