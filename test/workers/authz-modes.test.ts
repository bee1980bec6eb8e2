// The ABAC and Webhook authorization modes through the real apiserver on workerd: an ABAC
// policy from EDGEPLANE_ABAC_POLICY, and a SubjectAccessReview webhook (a local HTTP server
// this test runs) in front of RBAC, where the first allow or deny wins.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, startDevServer } from "../../local-engine/devserver";
import { api, freshNamespace, type Target } from "../helpers/cluster";
import { removeStateDir, tempStateDir } from "../helpers/own-server";

type OwnServer = Target & { stop(): Promise<void> };
const RBAC = "rbac.authorization.k8s.io";
const ABAC_V = "abac.authorization.kubernetes.io/v1beta1";
const TOKENS = ["alice-token,alice,u1,", "bob-token,bob,u2,", "carol-token,carol,u3,"];

const as = (s: OwnServer, token: string): Target => ({ url: s.url, token, kubeconfigPath: "" });

describe("ABAC mode", () => {
  let server: OwnServer;
  let stateDir: string;
  const policy = [
    JSON.stringify({
      apiVersion: ABAC_V,
      kind: "Policy",
      spec: { user: "alice", namespace: "*", resource: "pods", apiGroup: "", readonly: true },
    }),
    JSON.stringify({
      apiVersion: ABAC_V,
      kind: "Policy",
      spec: { user: "*", readonly: true, nonResourcePath: "*" },
    }),
    // readiness probes are anonymous ("*" means authenticated users only)
    JSON.stringify({
      apiVersion: ABAC_V,
      kind: "Policy",
      spec: { group: "system:unauthenticated", readonly: true, nonResourcePath: "/readyz" },
    }),
  ].join("\n");

  beforeAll(async () => {
    stateDir = tempStateDir("edgeplane-abac-");
    server = await startDevServer({
      stateDir,
      quiet: true,
      tokens: TOKENS,
      // the dev.vars writer mangles double quotes: the policy goes base64-encoded
      vars: {
        EDGEPLANE_AUTHORIZATION_MODES: "ABAC",
        EDGEPLANE_ABAC_POLICY: Buffer.from(policy).toString("base64"),
      },
    });
  });

  afterAll(async () => {
    await server?.stop();
    removeStateDir(stateDir);
  });

  it("alice may read pods but not create them", async () => {
    const ns = await freshNamespace(server);
    const alice = as(server, "alice-token");
    expect((await api(alice, "GET", `/api/v1/namespaces/${ns}/pods`)).status).toBe(200);
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p" },
      spec: { containers: [{ name: "c", image: "busybox" }] },
    };
    const create = await api(alice, "POST", `/api/v1/namespaces/${ns}/pods`, pod);
    expect(create.status).toBe(403);
    expect(create.json.message).toContain('User "alice" cannot create resource "pods"');
    expect(create.json.message).toContain("No policy matched.");
    // only pods: services are not in her policy
    expect((await api(alice, "GET", `/api/v1/namespaces/${ns}/services`)).status).toBe(403);
  });

  it("'*' readonly non-resource paths serve every authenticated user", async () => {
    expect((await api(as(server, "bob-token"), "GET", "/version")).status).toBe(200);
    expect((await api(as(server, "bob-token"), "GET", "/api/v1/namespaces/default/pods")).status).toBe(403);
    const anonymous = await fetch(`${server.url}/version`);
    expect(anonymous.status).toBe(403);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  });
});

describe("Webhook,RBAC modes", () => {
  let server: OwnServer;
  let stateDir: string;
  let webhook: Server;
  const reviews: any[] = [];

  beforeAll(async () => {
    webhook = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        const review = JSON.parse(body);
        reviews.push({ review, auth: req.headers.authorization });
        const spec = review.spec;
        let status: Record<string, unknown> = { allowed: false };
        if (spec.user === "alice" && spec.resourceAttributes?.resource === "pods")
          status = { allowed: false, denied: true, reason: "pods are off limits for alice" };
        else if (spec.user === "carol" && spec.resourceAttributes?.resource === "configmaps")
          status = { allowed: true };
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({ apiVersion: "authorization.k8s.io/v1", kind: "SubjectAccessReview", status }),
        );
      });
    });
    const port = await freePort();
    await new Promise<void>((r) => webhook.listen(port, "127.0.0.1", () => r()));
    const url = `http://127.0.0.1:${(webhook.address() as AddressInfo).port}/authorize`;
    stateDir = tempStateDir("edgeplane-webhook-");
    server = await startDevServer({
      stateDir,
      quiet: true,
      tokens: TOKENS,
      vars: {
        EDGEPLANE_AUTHORIZATION_MODES: "Webhook,RBAC",
        EDGEPLANE_AUTHZ_WEBHOOK_URL: url,
        EDGEPLANE_AUTHZ_WEBHOOK_TOKEN: "hook-secret",
      },
    });
  });

  afterAll(async () => {
    await server?.stop();
    removeStateDir(stateDir);
    await new Promise<void>((r) => webhook?.close(() => r()));
  });

  async function bindView(ns: string, user: string) {
    const r = await api(server, "POST", `/apis/${RBAC}/v1/namespaces/${ns}/rolebindings`, {
      apiVersion: `${RBAC}/v1`,
      kind: "RoleBinding",
      metadata: { name: `${user}-view` },
      roleRef: { apiGroup: RBAC, kind: "ClusterRole", name: "view" },
      subjects: [{ apiGroup: RBAC, kind: "User", name: user }],
    });
    expect(r.status).toBe(201);
  }

  /** RBAC is cached per isolate for about a second: retry briefly. */
  async function eventually(fn: () => Promise<number>, want: number, ms = 5000): Promise<number> {
    const end = Date.now() + ms;
    for (;;) {
      const v = await fn();
      if (v === want || Date.now() > end) return v;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  it("the webhook decides a request RBAC would not allow", async () => {
    const ns = await freshNamespace(server);
    const carol = as(server, "carol-token");
    expect((await api(carol, "GET", `/api/v1/namespaces/${ns}/configmaps`)).status).toBe(200);
    expect((await api(carol, "GET", `/api/v1/namespaces/${ns}/secrets`)).status).toBe(403);
    const seen = reviews.find(
      (r) => r.review.spec.user === "carol" && r.review.spec.resourceAttributes?.resource === "configmaps",
    );
    expect(seen.auth).toBe("Bearer hook-secret");
    expect(seen.review).toMatchObject({
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      spec: {
        user: "carol",
        uid: "u3",
        groups: expect.arrayContaining(["system:authenticated"]),
        resourceAttributes: { namespace: ns, verb: "list", version: "v1", resource: "configmaps" },
      },
    });
  });

  it("a webhook deny wins over an RBAC allow; no opinion falls through to RBAC", async () => {
    const ns = await freshNamespace(server);
    await bindView(ns, "alice");
    await bindView(ns, "bob");
    const alice = as(server, "alice-token");
    const bob = as(server, "bob-token");
    // RBAC lets both view; the webhook has no opinion on bob nor on alice's services
    expect(
      await eventually(async () => (await api(bob, "GET", `/api/v1/namespaces/${ns}/pods`)).status, 200),
    ).toBe(200);
    expect(
      await eventually(
        async () => (await api(alice, "GET", `/api/v1/namespaces/${ns}/services`)).status,
        200,
      ),
    ).toBe(200);
    const denied = await api(alice, "GET", `/api/v1/namespaces/${ns}/pods`);
    expect(denied.status).toBe(403);
    expect(denied.json.message).toContain("pods are off limits for alice");
  });
});
