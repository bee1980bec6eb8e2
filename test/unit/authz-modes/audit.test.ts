import { Hono } from "hono";
import { beforeEach, describe, expect, it } from "vitest";
import type { UserInfo } from "../../../api/user";
import type { AppEnv } from "../../../workers/app-env";
import {
  addAuditAnnotation,
  audit,
  buildEvent,
  evaluatePolicy,
  parseAuditPolicy,
  policyFromEnv,
  RingSink,
  setAuditRequestObject,
} from "../../../workers/audit/index";
import type { AuditAttributes } from "../../../workers/audit/types";
import { requestInfo } from "../../../workers/request-info";

const POLICY_YAML = `
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    users: ["system:kube-proxy"]
    verbs: ["watch"]
  - level: None
    nonResourceURLs: ["/healthz*", "/version"]
  - level: Metadata
    resources:
      - group: ""
        resources: ["pods/log", "pods/status"]
  - level: Request
    resources:
      - group: ""
        resources: ["configmaps"]
        resourceNames: ["controller-leader"]
  - level: None
    userGroups: ["system:nodes"]
    verbs: ["get"]
  - level: Request
    namespaces: ["kube-system"]
  - level: Request
    resources:
      - group: ""
      - group: "apps"
        resources: ["*/scale"]
  - level: Metadata
    omitStages: ["ResponseComplete"]
    verbs: ["delete"]
  - level: Metadata
`;

const u = (name: string, ...groups: string[]) => ({ name, groups });
function at(
  user: { name: string; groups: string[] } | undefined,
  method: string,
  path: string,
): AuditAttributes {
  const info = requestInfo(method, new URL(`https://x${path}`));
  return { ...info, user };
}

describe("audit policy", () => {
  const p = parseAuditPolicy(POLICY_YAML);

  it("parses YAML, JSON and base64", () => {
    expect(p.rules).toHaveLength(9);
    expect(p.omitStages).toEqual(["RequestReceived"]);
    const json = JSON.stringify({ kind: "Policy", rules: [{ level: "Metadata" }] });
    expect(parseAuditPolicy(json).rules).toEqual([expect.objectContaining({ level: "Metadata" })]);
    expect(parseAuditPolicy(btoa(POLICY_YAML)).rules).toHaveLength(9);
  });

  it("rejects bad levels, stages and mixed rules", () => {
    expect(() => parseAuditPolicy("rules: [{level: Everything}]")).toThrow(/unknown level/);
    expect(() => parseAuditPolicy("rules: [{level: None, omitStages: [Soon]}]")).toThrow(/unknown stage/);
    expect(() => parseAuditPolicy("rules: [{level: None, nonResourceURLs: [/x], namespaces: [a]}]")).toThrow(
      /both/,
    );
  });

  it("first matching rule wins", () => {
    const lvl = (a: AuditAttributes) => evaluatePolicy(p, a).level;
    expect(lvl(at(u("system:kube-proxy"), "GET", "/api/v1/endpoints?watch=true"))).toBe("None");
    expect(lvl(at(u("system:kube-proxy"), "GET", "/api/v1/endpoints"))).toBe("Request");
    expect(lvl(at(u("alice"), "GET", "/healthz/etcd"))).toBe("None");
    expect(lvl(at(u("alice"), "GET", "/version"))).toBe("None");
    expect(lvl(at(u("alice"), "GET", "/versions"))).toBe("Metadata");
    expect(lvl(at(u("alice"), "GET", "/api/v1/namespaces/a/pods/p/log"))).toBe("Metadata");
    expect(lvl(at(u("alice"), "PUT", "/api/v1/namespaces/a/configmaps/controller-leader"))).toBe("Request");
    expect(lvl(at(u("kubelet", "system:nodes"), "GET", "/api/v1/namespaces/a/pods/p"))).toBe("None");
    expect(lvl(at(u("alice"), "GET", "/apis/apps/v1/namespaces/kube-system/deployments/d"))).toBe("Request");
    expect(lvl(at(u("alice"), "PUT", "/apis/apps/v1/namespaces/a/deployments/d/scale"))).toBe("Request");
    expect(lvl(at(u("alice"), "PUT", "/apis/apps/v1/namespaces/a/deployments/d"))).toBe("Metadata");
    expect(lvl(at(u("alice"), "GET", "/api/v1/namespaces/a/services"))).toBe("Request");
    expect(lvl(at(undefined, "GET", "/apis/batch/v1/jobs"))).toBe("Metadata");
  });

  it("merges the policy's and the rule's omitted stages", () => {
    const d = evaluatePolicy(p, at(u("alice"), "DELETE", "/apis/apps/v1/namespaces/a/deployments/d"));
    expect(d).toEqual({ level: "Metadata", omitStages: ["RequestReceived", "ResponseComplete"] });
  });

  it("no policy text means no auditing", () => {
    expect(policyFromEnv({})).toBeUndefined();
    expect(policyFromEnv({ EDGEPLANE_AUDIT_POLICY: "  " })).toBeUndefined();
  });
});

describe("secret redaction", () => {
  const base = {
    stage: "ResponseComplete" as const,
    auditID: "id",
    requestURI: "/x",
    apiVersion: "v1",
    headers: new Headers({ authorization: "Bearer top-secret", "user-agent": "kubectl" }),
    received: 0,
    now: 1,
  };
  const secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "s" },
    data: { password: "aHVudGVyMg==" },
  };

  it("never records Secret, TokenRequest or TokenReview bodies, whatever the level", () => {
    for (const [method, path, obj] of [
      ["POST", "/api/v1/namespaces/a/secrets", secret],
      ["POST", "/api/v1/namespaces/a/serviceaccounts/default/token", { kind: "TokenRequest", spec: {} }],
      [
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        { kind: "TokenReview", spec: { token: "t0k" } },
      ],
      // a Secret sent somewhere unexpected is still a Secret
      ["POST", "/api/v1/namespaces/a/configmaps", secret],
    ] as const) {
      const ev = buildEvent({
        ...base,
        level: "RequestResponse",
        attrs: at(u("a"), method, path),
        requestObject: obj,
      });
      expect(ev.level).toBe("Metadata");
      expect(ev.requestObject).toBeUndefined();
      const line = JSON.stringify(ev);
      expect(line).not.toContain("aHVudGVyMg");
      expect(line).not.toContain("t0k");
      expect(line).not.toContain("top-secret");
    }
  });

  it("records other bodies at Request level, not at Metadata", () => {
    const cm = { kind: "ConfigMap", data: { a: "b" } };
    const attrs = at(u("a"), "POST", "/api/v1/namespaces/a/configmaps");
    expect(buildEvent({ ...base, level: "Request", attrs, requestObject: cm }).requestObject).toEqual(cm);
    expect(
      buildEvent({ ...base, level: "Metadata", attrs, requestObject: cm }).requestObject,
    ).toBeUndefined();
  });
});

describe("audit middleware", () => {
  let ring: RingSink;
  const alice: UserInfo = { name: "alice", uid: "u1", groups: ["dev", "system:authenticated"] };

  function app(policy: string) {
    const a = new Hono<AppEnv>();
    a.onError(
      (err) =>
        new Response(
          JSON.stringify({
            kind: "Status",
            apiVersion: "v1",
            status: "Failure",
            message: err.message,
            reason: "Forbidden",
            code: 403,
          }),
          { status: 403, headers: { "content-type": "application/json" } },
        ),
    );
    a.use("*", async (c, next) => {
      c.set("info", requestInfo(c.req.method, new URL(c.req.url)));
      await next();
    });
    a.use("*", audit({ sinks: [ring], policy, now: () => Date.parse("2026-01-02T03:04:05.678Z") }));
    a.use("*", async (c, next) => {
      if (c.req.header("authorization") === "Bearer bad") return new Response("{}", { status: 401 });
      c.set("user", alice);
      await next();
    });
    a.post("/api/v1/namespaces/:ns/:res", async (c) => {
      const body = await c.req.json();
      setAuditRequestObject(c, body);
      addAuditAnnotation(c, "authorization.k8s.io/decision", "allow");
      return c.json(body, 201);
    });
    a.get("/api/v1/namespaces/:ns/forbidden", () => {
      throw new Error("nope");
    });
    return a;
  }

  beforeEach(() => {
    ring = new RingSink(10);
  });

  it("records ResponseComplete with upstream's event fields and answers with Audit-Id", async () => {
    const a = app("rules: [{level: Request}]");
    const cm = { kind: "ConfigMap", metadata: { name: "c" }, data: { k: "v" } };
    const r = await a.request("/api/v1/namespaces/ns1/configmaps?fieldManager=kubectl", {
      method: "POST",
      body: JSON.stringify(cm),
      headers: {
        "content-type": "application/json",
        "user-agent": "kubectl/v1.32",
        "x-forwarded-for": "10.0.0.1, 10.0.0.2",
      },
    });
    expect(r.status).toBe(201);
    const events = ring.events();
    expect(events.map((e) => e.stage)).toEqual(["RequestReceived", "ResponseComplete"]);
    const ev = events[1];
    expect(r.headers.get("audit-id")).toBe(ev.auditID);
    expect(ev).toEqual({
      kind: "Event",
      apiVersion: "audit.k8s.io/v1",
      level: "Request",
      auditID: expect.stringMatching(/^[0-9a-f-]{36}$/),
      stage: "ResponseComplete",
      requestURI: "/api/v1/namespaces/ns1/configmaps?fieldManager=kubectl",
      verb: "create",
      user: { username: "alice", uid: "u1", groups: ["dev", "system:authenticated"] },
      sourceIPs: ["10.0.0.1", "10.0.0.2"],
      userAgent: "kubectl/v1.32",
      objectRef: { resource: "configmaps", namespace: "ns1", name: "c", apiVersion: "v1" },
      responseStatus: { metadata: {}, code: 201 },
      requestObject: cm,
      requestReceivedTimestamp: "2026-01-02T03:04:05.678000Z",
      stageTimestamp: "2026-01-02T03:04:05.678000Z",
      annotations: { "authorization.k8s.io/decision": "allow" },
    });
  });

  it("keeps a client's Audit-ID, records failures' status and skips None and omitted stages", async () => {
    const a = app(
      "omitStages: [RequestReceived]\nrules: [{level: None, resources: [{group: '', resources: [pods]}]}, {level: Metadata}]",
    );
    const r = await a.request("/api/v1/namespaces/ns1/forbidden", { headers: { "audit-id": "abc-123" } });
    expect(r.status).toBe(403);
    expect(r.headers.get("audit-id")).toBe("abc-123");
    expect(ring.events()).toHaveLength(1);
    expect(ring.events()[0]).toMatchObject({
      auditID: "abc-123",
      stage: "ResponseComplete",
      level: "Metadata",
      responseStatus: { code: 403, status: "Failure", reason: "Forbidden", message: "nope" },
    });
    await a.request("/api/v1/namespaces/ns1/pods", { method: "POST", body: "{}" });
    expect(ring.events()).toHaveLength(1);
    // a request that failed authentication is audited with no user
    const bad = await a.request("/api/v1/namespaces/ns1/configmaps", {
      method: "POST",
      body: "{}",
      headers: { authorization: "Bearer bad" },
    });
    expect(bad.status).toBe(401);
    expect(ring.events()[1]).toMatchObject({ user: {}, responseStatus: { code: 401 } });
  });

  it("never records a Secret body even with a Request policy", async () => {
    const a = app("rules: [{level: RequestResponse}]");
    await a.request("/api/v1/namespaces/ns1/secrets", {
      method: "POST",
      body: JSON.stringify({ kind: "Secret", stringData: { password: "hunter2" } }),
      headers: { authorization: "Bearer abc" },
    });
    const line = JSON.stringify(ring.events());
    expect(ring.events()).toHaveLength(2);
    expect(ring.events()[1].level).toBe("Metadata");
    expect(line).not.toContain("hunter2");
    expect(line).not.toContain("Bearer abc");
  });
});
