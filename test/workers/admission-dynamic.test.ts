// Dynamic admission through the real apiserver on workerd: admission webhooks served by an
// HTTP server in this test (on 127.0.0.1) and a ValidatingAdmissionPolicy with CEL.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDevServer } from "../../local-engine/devserver";
import { api, freshNamespace, type Target } from "../helpers/cluster";
import { removeStateDir, tempStateDir } from "../helpers/own-server";

const ADMREG = "/apis/admissionregistration.k8s.io/v1";

/** The webhook server: the path picks the behaviour. */
function webhookServer(): Promise<{ server: Server; base: string; calls: string[] }> {
  const calls: string[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => {
      body += d;
    });
    req.on("end", () => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      calls.push(path);
      if (path === "/fail") {
        res.writeHead(500).end("boom");
        return;
      }
      const review = JSON.parse(body);
      const uid = review.request.uid;
      let response: Record<string, unknown> = { uid, allowed: true };
      if (path === "/deny")
        response = {
          uid,
          allowed: false,
          status: { code: 403, message: "configmaps named bad are not welcome" },
        };
      if (path === "/label") {
        const patch = [
          { op: "add", path: "/metadata/labels/mutated", value: review.request.operation.toLowerCase() },
        ];
        response = {
          uid,
          allowed: true,
          patchType: "JSONPatch",
          patch: Buffer.from(JSON.stringify(patch)).toString("base64"),
          warnings: ["labelled by the test webhook"],
        };
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response }));
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls }),
    ),
  );
}

function webhook(name: string, url: string, selector: Record<string, string>, failurePolicy = "Fail") {
  return {
    name,
    clientConfig: { url },
    rules: [
      { operations: ["CREATE", "UPDATE"], apiGroups: [""], apiVersions: ["v1"], resources: ["configmaps"] },
    ],
    objectSelector: { matchLabels: selector },
    failurePolicy,
    sideEffects: "None",
    admissionReviewVersions: ["v1"],
    timeoutSeconds: 5,
  };
}

const configMap = (name: string, labels: Record<string, string>) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, labels },
  data: { a: "b" },
});

async function eventually<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 4000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe("dynamic admission", () => {
  let server: Target & { stop(): Promise<void> };
  let stateDir: string;
  let hooks: Awaited<ReturnType<typeof webhookServer>>;
  let ns: string;

  beforeAll(async () => {
    hooks = await webhookServer();
    stateDir = tempStateDir("edgeplane-dynadm-");
    server = await startDevServer({ stateDir, quiet: true });
    ns = await freshNamespace(server, "dynadm");
  });

  afterAll(async () => {
    await server?.stop();
    removeStateDir(stateDir);
    await new Promise((r) => hooks?.server.close(r));
  });

  it("serves the configuration kinds with table columns", async () => {
    const r = await api(server, "POST", `${ADMREG}/validatingwebhookconfigurations`, {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name: "table-check" },
      webhooks: [webhook("never.edgeplane.test", `${hooks.base}/allow`, { never: "x" })],
    });
    expect(r.status, r.text).toBe(201);
    expect(r.json.webhooks[0]).toMatchObject({
      failurePolicy: "Fail",
      matchPolicy: "Equivalent",
      namespaceSelector: {},
    });
    const t = await api(server, "GET", `${ADMREG}/validatingwebhookconfigurations/table-check`, undefined, {
      accept: "application/json;as=Table;v=v1;g=meta.k8s.io",
    });
    expect(t.json.columnDefinitions.map((c: any) => c.name)).toEqual(["Name", "Webhooks", "Age"]);
    expect(t.json.rows[0].cells.slice(0, 2)).toEqual(["table-check", 1]);
    const bad = await api(server, "POST", `${ADMREG}/validatingwebhookconfigurations`, {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name: "bad" },
      webhooks: [{ ...webhook("bad.edgeplane.test", `${hooks.base}/allow`, {}), sideEffects: undefined }],
    });
    expect(bad.status).toBe(422);
  });

  it("a failing webhook rejects with failurePolicy Fail and admits with Ignore", async () => {
    const path = `${ADMREG}/validatingwebhookconfigurations`;
    const cfg = {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name: "failing" },
      webhooks: [webhook("fail.edgeplane.test", `${hooks.base}/fail`, { hook: "fail" })],
    };
    expect((await api(server, "POST", path, cfg)).status).toBe(201);
    const r = await eventually(
      () => api(server, "POST", `/api/v1/namespaces/${ns}/configmaps`, configMap("f1", { hook: "fail" })),
      (x) => x.status === 500,
    );
    expect(r.status).toBe(500);
    expect(r.json.reason).toBe("InternalError");
    expect(r.json.message).toContain('Internal error occurred: failed calling webhook "fail.edgeplane.test"');
    const patched = await api(
      server,
      "PATCH",
      `${path}/failing`,
      [{ op: "replace", path: "/webhooks/0/failurePolicy", value: "Ignore" }],
      { "content-type": "application/json-patch+json" },
    );
    expect(patched.status, patched.text).toBe(200);
    const ok = await eventually(
      () => api(server, "POST", `/api/v1/namespaces/${ns}/configmaps`, configMap("f2", { hook: "fail" })),
      (x) => x.status === 201,
    );
    expect(ok.status, ok.text).toBe(201);
  });

  it("a mutating webhook adds a label and its warning", async () => {
    const r0 = await api(server, "POST", `${ADMREG}/mutatingwebhookconfigurations`, {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "MutatingWebhookConfiguration",
      metadata: { name: "labeller" },
      webhooks: [webhook("label.edgeplane.test", `${hooks.base}/label`, { hook: "label" })],
    });
    expect(r0.status, r0.text).toBe(201);
    const r = await eventually(
      () =>
        api(
          server,
          "POST",
          `/api/v1/namespaces/${ns}/configmaps`,
          configMap(`m${Date.now()}`, { hook: "label" }),
        ),
      (x) => x.json?.metadata?.labels?.mutated === "create",
    );
    expect(r.status).toBe(201);
    expect(r.json.metadata.labels).toEqual({ hook: "label", mutated: "create" });
    expect(r.headers.get("warning")).toContain("labelled by the test webhook");
    const got = await api(server, "GET", `/api/v1/namespaces/${ns}/configmaps/${r.json.metadata.name}`);
    expect(got.json.metadata.labels.mutated).toBe("create");
  });

  it("a validating webhook denies with its message", async () => {
    const r0 = await api(server, "POST", `${ADMREG}/validatingwebhookconfigurations`, {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name: "denier" },
      webhooks: [webhook("deny.edgeplane.test", `${hooks.base}/deny`, { hook: "deny" })],
    });
    expect(r0.status, r0.text).toBe(201);
    const r = await eventually(
      () => api(server, "POST", `/api/v1/namespaces/${ns}/configmaps`, configMap("bad", { hook: "deny" })),
      (x) => x.status === 403,
    );
    expect(r.status).toBe(403);
    expect(r.json.message).toBe(
      'admission webhook "deny.edgeplane.test" denied the request: configmaps named bad are not welcome',
    );
    expect(hooks.calls).toContain("/deny");
  });

  it("a ValidatingAdmissionPolicy rejects a deployment with too many replicas", async () => {
    const p = await api(server, "POST", `${ADMREG}/validatingadmissionpolicies`, {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicy",
      metadata: { name: "max-replicas" },
      spec: {
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: ["apps"],
              apiVersions: ["v1"],
              operations: ["CREATE", "UPDATE"],
              resources: ["deployments"],
            },
          ],
        },
        validations: [{ expression: "object.spec.replicas <= 5" }],
      },
    });
    expect(p.status, p.text).toBe(201);
    const b = await api(server, "POST", `${ADMREG}/validatingadmissionpolicybindings`, {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicyBinding",
      metadata: { name: "max-replicas-binding" },
      spec: {
        policyName: "max-replicas",
        validationActions: ["Deny"],
        matchResources: { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": ns } } },
      },
    });
    expect(b.status, b.text).toBe(201);
    const deployment = (name: string, replicas: number) => ({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name },
      spec: {
        replicas,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: { containers: [{ name: "c", image: "busybox" }] },
        },
      },
    });
    const r = await eventually(
      () => api(server, "POST", `/apis/apps/v1/namespaces/${ns}/deployments`, deployment("big", 6)),
      (x) => x.status === 422,
    );
    expect(r.status, r.text).toBe(422);
    expect(r.json.reason).toBe("Invalid");
    expect(r.json.message).toBe(
      `deployments.apps "big" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5`,
    );
    const ok = await api(
      server,
      "POST",
      `/apis/apps/v1/namespaces/${ns}/deployments`,
      deployment("small", 5),
    );
    expect(ok.status, ok.text).toBe(201);
  });
});
