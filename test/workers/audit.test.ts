// Audit logging through the real apiserver on workerd: a policy from EDGEPLANE_AUDIT_POLICY,
// events read back from the worker's console (one {"auditEvent": ...} JSON line each), and
// Secret bodies never in the log.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDevServer } from "../../local-engine/devserver";
import { api, freshNamespace, hasKubectl, kubectl, type Target } from "../helpers/cluster";
import { removeStateDir, tempStateDir } from "../helpers/own-server";

const POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    resources: [{group: "", resources: [secrets]}]
  - level: Request
    resources: [{group: "", resources: [configmaps]}]
  - level: Metadata
    users: [bob]
  - level: None
`;

type OwnServer = Target & { stop(): Promise<void>; output(): string };

describe("audit", () => {
  let server: OwnServer;
  let stateDir: string;
  let ns: string;

  beforeAll(async () => {
    stateDir = tempStateDir("edgeplane-audit-");
    server = await startDevServer({
      stateDir,
      quiet: true,
      logLevel: "log", // the worker's console.log lines are the audit log
      tokens: ["bob-token,bob,u2,"],
      vars: { EDGEPLANE_AUDIT_POLICY: Buffer.from(POLICY).toString("base64") },
    });
    ns = await freshNamespace(server);
  });

  afterAll(async () => {
    await server?.stop();
    removeStateDir(stateDir);
  });

  function events(): any[] {
    const out: any[] = [];
    for (const m of server.output().matchAll(/\{"auditEvent":.*\}/g)) {
      try {
        out.push(JSON.parse(m[0]).auditEvent);
      } catch {
        // a line cut by the output buffer
      }
    }
    return out;
  }

  async function eventFor(auditID: string): Promise<any> {
    for (let i = 0; i < 30; i++) {
      const ev = events().find((e) => e.auditID === auditID && e.stage === "ResponseComplete");
      if (ev) return ev;
      await new Promise((r) => setTimeout(r, 100));
    }
    return undefined;
  }

  const id = (p: string) => `${p}-${Math.random().toString(36).slice(2, 10)}`;

  it("logs a ConfigMap create at Request level with upstream's event fields", async () => {
    const auditID = id("cm");
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c1" }, data: { color: "blue" } };
    const r = await api(server, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm, { "Audit-ID": auditID });
    expect(r.status).toBe(201);
    expect(r.headers.get("audit-id")).toBe(auditID);
    const ev = await eventFor(auditID);
    expect(ev).toMatchObject({
      kind: "Event",
      apiVersion: "audit.k8s.io/v1",
      level: "Request",
      stage: "ResponseComplete",
      requestURI: `/api/v1/namespaces/${ns}/configmaps`,
      verb: "create",
      user: { username: "admin", groups: expect.arrayContaining(["system:masters"]) },
      objectRef: { resource: "configmaps", namespace: ns, name: "c1", apiVersion: "v1" },
      responseStatus: { code: 201 },
      requestObject: { kind: "ConfigMap", data: { color: "blue" } },
    });
    expect(ev.requestReceivedTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    // RequestReceived is omitted by the policy
    expect(
      events()
        .filter((e) => e.auditID === auditID)
        .map((e) => e.stage),
    ).toEqual(["ResponseComplete"]);
  });

  it("never logs a Secret's body", async () => {
    const auditID = id("secret");
    const value = `hunter-${Math.random().toString(36).slice(2)}`;
    const s = { apiVersion: "v1", kind: "Secret", metadata: { name: "s1" }, stringData: { password: value } };
    expect(
      (await api(server, "POST", `/api/v1/namespaces/${ns}/secrets`, s, { "Audit-ID": auditID })).status,
    ).toBe(201);
    const ev = await eventFor(auditID);
    expect(ev).toMatchObject({
      level: "Metadata",
      objectRef: { resource: "secrets", namespace: ns, name: "s1" },
    });
    expect(ev.requestObject).toBeUndefined();
    expect(server.output()).not.toContain(value);
    expect(server.output()).not.toContain(server.token);
  });

  it("logs denials with their status, and impersonation with both users", async () => {
    const denied = id("deny");
    const bob: Target = { url: server.url, token: "bob-token", kubeconfigPath: "" };
    expect(
      (await api(bob, "GET", `/api/v1/namespaces/${ns}/pods`, undefined, { "Audit-ID": denied })).status,
    ).toBe(403);
    expect(await eventFor(denied)).toMatchObject({
      level: "Metadata",
      user: { username: "bob" },
      responseStatus: { code: 403, status: "Failure", reason: "Forbidden" },
    });
    const imp = id("imp");
    await api(server, "GET", `/api/v1/namespaces/${ns}/configmaps/c1`, undefined, {
      "Audit-ID": imp,
      "Impersonate-User": "bob",
    });
    expect(await eventFor(imp)).toMatchObject({
      user: { username: "admin" },
      impersonatedUser: { username: "bob" },
    });
  });

  it("watches stream as before and are logged with their verb", async () => {
    const auditID = id("watch");
    const r = await fetch(`${server.url}/api/v1/namespaces/${ns}/configmaps?watch=true&timeoutSeconds=1`, {
      headers: { authorization: `Bearer ${server.token}`, "Audit-ID": auditID },
    });
    expect(r.status).toBe(200);
    expect(r.headers.get("audit-id")).toBe(auditID);
    expect(await r.text()).toContain('"ADDED"');
    expect(await eventFor(auditID)).toMatchObject({
      verb: "watch",
      level: "Request",
      responseStatus: { code: 200 },
    });
  });

  it.skipIf(!hasKubectl)("kubectl works unchanged and is logged with its user agent", async () => {
    const r = await kubectl(server, ["get", "configmaps", "-n", ns, "-o", "name"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("configmap/c1");
    await new Promise((res) => setTimeout(res, 300));
    // the test's own requests say "node"; only kubectl's list says "kubectl/..."
    const list = events().find(
      (e) => e.verb === "list" && e.objectRef?.namespace === ns && /^kubectl/.test(e.userAgent ?? ""),
    );
    expect(list).toMatchObject({ objectRef: { resource: "configmaps" }, responseStatus: { code: 200 } });
  });

  it("requests the policy puts at None are not logged", async () => {
    const none = id("none");
    expect(
      (await api(server, "GET", `/api/v1/namespaces/${ns}/pods`, undefined, { "Audit-ID": none })).status,
    ).toBe(200);
    await new Promise((r) => setTimeout(r, 500));
    expect(events().some((e) => e.auditID === none)).toBe(false);
  });
});
