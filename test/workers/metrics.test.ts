// The metrics API (metrics.k8s.io/v1beta1) on real workerd: nodes post their usage reports
// with their own credentials (POST /edgeplane/metrics/<node>), and NodeMetrics/PodMetrics are
// served from them with upstream's shape, errors and RBAC, read by real kubectl top. Reports
// here are hand-made so the figures are exact; the agents' own reports are in
// test/e2e/metrics.test.ts.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, startDevServer } from "../../local-engine/devserver";
import { api, freshNamespace, hasKubectl, kubectl, type Target } from "../helpers/cluster";

const A = "metrics-node-a";
const B = "metrics-node-b";
const TOKEN_A = randomBytes(18).toString("base64url");
const TOKEN_B = randomBytes(18).toString("base64url");
const NOBODY = randomBytes(18).toString("base64url");
const GROUP = "/apis/metrics.k8s.io/v1beta1";

const as = (t: Target, token: string): Target => ({ ...t, token });

function report(
  pods: { namespace: string; name: string; uid: string; containers: [string, number, number][] }[],
) {
  const now = Date.now();
  return {
    intervalSeconds: 15,
    node: { cpu: 1_500_000_000, memory: 2 * 1024 ** 3, timestamp: now, windowMs: 15_000 },
    pods: pods.map((p) => ({
      namespace: p.namespace,
      name: p.name,
      uid: p.uid,
      timestamp: now,
      windowMs: 15_000,
      containers: p.containers.map(([name, cpu, memory]) => ({ name, cpu, memory })),
    })),
  };
}

describe.skipIf(!hasKubectl)("metrics.k8s.io served from the nodes' reports", () => {
  const stateDir = mkdtempSync(join(tmpdir(), "edgeplane-metrics-"));
  let t: DevServer;
  let ns: string;
  const uids: Record<string, string> = {};

  async function pod(name: string, node: string, app: string, containers = ["main"]) {
    const r = await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, labels: { app } },
      spec: { nodeName: node, containers: containers.map((c) => ({ name: c, image: "busybox" })) },
    });
    expect(r.status, r.text).toBe(201);
    uids[name] = r.json.metadata.uid;
  }

  beforeAll(async () => {
    t = await startDevServer({
      stateDir,
      quiet: true,
      tokens: [
        `${TOKEN_A},system:node:${A},${A},system:nodes`,
        `${TOKEN_B},system:node:${B},${B},system:nodes`,
        `${NOBODY},metrics-nobody,metrics-nobody`,
      ],
    });
    for (const name of [A, B]) {
      const r = await api(t, "POST", "/api/v1/nodes", {
        apiVersion: "v1",
        kind: "Node",
        metadata: { name, labels: { pool: name === A ? "a" : "b" } },
      });
      expect(r.status, r.text).toBe(201);
    }
    ns = await freshNamespace(t, "metrics");
    await pod("web", A, "web", ["main", "sidecar"]);
    await pod("db", A, "db");
    await pod("other", B, "web");
  }, 120_000);
  afterAll(async () => {
    await t?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it("takes a node's report of its own pods, and refuses another node's pods and path (403)", async () => {
    const mine = report([
      {
        namespace: ns,
        name: "web",
        uid: uids.web,
        containers: [
          ["main", 250_000_000, 64 * 1024 ** 2],
          ["sidecar", 5_000_000, 10 * 1024 ** 2],
        ],
      },
      { namespace: ns, name: "db", uid: uids.db, containers: [["main", 1_234_567, 123_456_789]] },
    ]);
    const ok = await api(as(t, TOKEN_A), "POST", `/edgeplane/metrics/${A}`, mine);
    expect(ok.status, ok.text).toBe(200);

    // node A posting B's pod, and A posting under B's name: both 403
    const theirs = report([{ namespace: ns, name: "other", uid: uids.other, containers: [["main", 1, 1]] }]);
    const r1 = await api(as(t, TOKEN_A), "POST", `/edgeplane/metrics/${A}`, theirs);
    expect(r1.status, r1.text).toBe(403);
    expect(r1.json).toMatchObject({ kind: "Status", reason: "Forbidden", code: 403 });
    expect(r1.json.message).toContain(`${ns}/other`);
    const r2 = await api(as(t, TOKEN_A), "POST", `/edgeplane/metrics/${B}`, report([]));
    expect(r2.status, r2.text).toBe(403);
    const r3 = await api(as(t, NOBODY), "POST", `/edgeplane/metrics/${A}`, report([]));
    expect(r3.status, r3.text).toBe(403);
    // the refused report changed nothing: A's pods still show
    const list = await api(t, "GET", `${GROUP}/namespaces/${ns}/pods`);
    expect(list.json.items.map((i: any) => i.metadata.name)).toEqual(["db", "web"]);

    // a malformed report is 400, not 500
    const bad = await api(as(t, TOKEN_A), "POST", `/edgeplane/metrics/${A}`, {
      intervalSeconds: 15,
      node: {},
    });
    expect(bad.status, bad.text).toBe(400);
    expect(bad.json).toMatchObject({ kind: "Status", reason: "BadRequest" });
  });

  it("serves PodMetrics and NodeMetrics in metrics-server's shape, with selectors", async () => {
    const one = await api(t, "GET", `${GROUP}/namespaces/${ns}/pods/web`);
    expect(one.status, one.text).toBe(200);
    expect(one.json).toMatchObject({
      kind: "PodMetrics",
      apiVersion: "metrics.k8s.io/v1beta1",
      metadata: { name: "web", namespace: ns, labels: { app: "web" } },
      window: "15s",
      containers: [
        { name: "main", usage: { cpu: "250m", memory: "64Mi" } },
        { name: "sidecar", usage: { cpu: "5m", memory: "10Mi" } },
      ],
    });
    expect(one.json.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const db = await api(t, "GET", `${GROUP}/namespaces/${ns}/pods/db`);
    expect(db.json.containers[0].usage).toEqual({ cpu: "1234567n", memory: "123456789" });

    const web = await api(t, "GET", `${GROUP}/namespaces/${ns}/pods?labelSelector=app%3Dweb`);
    expect(web.json).toMatchObject({ kind: "PodMetricsList", apiVersion: "metrics.k8s.io/v1beta1" });
    expect(web.json.items.map((i: any) => i.metadata.name)).toEqual(["web"]);
    const byName = await api(t, "GET", `${GROUP}/namespaces/${ns}/pods?fieldSelector=metadata.name%3Ddb`);
    expect(byName.json.items.map((i: any) => i.metadata.name)).toEqual(["db"]);
    const all = await api(t, "GET", `${GROUP}/pods`);
    expect(
      all.json.items.filter((i: any) => i.metadata.namespace === ns).map((i: any) => i.metadata.name),
    ).toEqual(["db", "web"]);

    const node = await api(t, "GET", `${GROUP}/nodes/${A}`);
    expect(node.status, node.text).toBe(200);
    expect(node.json).toMatchObject({
      kind: "NodeMetrics",
      metadata: { name: A, labels: { pool: "a" } },
      window: "15s",
      usage: { cpu: "1500m", memory: "2Gi" },
    });
    const nodes = await api(t, "GET", `${GROUP}/nodes?labelSelector=pool%3Da`);
    expect(nodes.json.items.map((i: any) => i.metadata.name)).toEqual([A]);
  });

  it("answers a missing pod or node, or one without metrics, 404 as metrics-server does", async () => {
    const none = await api(t, "GET", `${GROUP}/namespaces/${ns}/pods/nope`);
    expect(none.status).toBe(404);
    expect(none.json).toMatchObject({ reason: "NotFound", message: 'pods "nope" not found' });
    const noMetrics = await api(t, "GET", `${GROUP}/namespaces/${ns}/pods/other`);
    expect(noMetrics.status).toBe(404);
    expect(noMetrics.json.message).toBe(`podmetrics.metrics.k8s.io "${ns}/other" not found`);
    const noNode = await api(t, "GET", `${GROUP}/nodes/nope`);
    expect(noNode.status).toBe(404);
    expect(noNode.json.message).toBe('node "nope" not found');
    const quiet = await api(t, "GET", `${GROUP}/nodes/${B}`);
    expect(quiet.status).toBe(404);
    expect(quiet.json.message).toBe(`nodemetrics.metrics.k8s.io "${B}" not found`);
    // only get and list are served
    const post = await api(t, "POST", `${GROUP}/namespaces/${ns}/pods`, { kind: "PodMetrics" });
    expect(post.status).toBe(405);
  });

  it("is in discovery, and RBAC decides who reads it (view aggregates the metrics reader)", async () => {
    const groups = await api(t, "GET", "/apis");
    expect(groups.json.groups.map((g: any) => g.name)).toContain("metrics.k8s.io");
    const agg = await api(t, "GET", "/apis", undefined, {
      accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    });
    const group = agg.json.items.find((g: any) => g.metadata.name === "metrics.k8s.io");
    const resources = group.versions[0].resources.map((r: any) => [
      r.resource,
      r.responseKind.kind,
      r.scope,
      r.verbs,
    ]);
    expect(resources).toEqual(
      expect.arrayContaining([
        ["nodes", "NodeMetrics", "Cluster", ["get", "list"]],
        ["pods", "PodMetrics", "Namespaced", ["get", "list"]],
      ]),
    );
    const role = await api(
      t,
      "GET",
      "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:aggregated-metrics-reader",
    );
    expect(role.status).toBe(200);
    expect(role.json.metadata.labels).toMatchObject({
      "rbac.authorization.k8s.io/aggregate-to-view": "true",
    });

    const denied = await api(as(t, NOBODY), "GET", `${GROUP}/namespaces/${ns}/pods`);
    expect(denied.status).toBe(403);
    expect(denied.json.message).toContain('cannot list resource "pods" in API group "metrics.k8s.io"');
    const top = await kubectl(t, ["top", "pod", "-n", ns, "--token", NOBODY]);
    expect(top.code).not.toBe(0);
    expect(top.stderr).toContain("forbidden");
    const bind = await api(t, "POST", `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "nobody-view" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "view" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "metrics-nobody" }],
    });
    expect(bind.status, bind.text).toBe(201);
    let allowed: Awaited<ReturnType<typeof api>> | undefined;
    for (let i = 0; i < 50; i++) {
      allowed = await api(as(t, NOBODY), "GET", `${GROUP}/namespaces/${ns}/pods`);
      if (allowed.status === 200) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(allowed?.status, allowed?.text).toBe(200);
    // still no nodes: view is namespaced
    expect((await api(as(t, NOBODY), "GET", `${GROUP}/nodes`)).status).toBe(403);
  });

  it("kubectl top pods and nodes show the figures", async () => {
    const pods = await kubectl(t, ["top", "pods", "-n", ns]);
    expect(pods.code, pods.stderr).toBe(0);
    expect(pods.stdout).toMatch(/^NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)/);
    expect(pods.stdout).toMatch(/^web\s+255m\s+74Mi\s*$/m);
    expect(pods.stdout).toMatch(/^db\s+2m\s+117Mi\s*$/m);
    const containers = await kubectl(t, ["top", "pods", "-n", ns, "-l", "app=web", "--containers"]);
    expect(containers.code, containers.stderr).toBe(0);
    expect(containers.stdout).toMatch(/^web\s+main\s+250m\s+64Mi\s*$/m);
    expect(containers.stdout).toMatch(/^web\s+sidecar\s+5m\s+10Mi\s*$/m);
    expect(containers.stdout).not.toContain("db");
    const everywhere = await kubectl(t, ["top", "pods", "-A"]);
    expect(everywhere.code, everywhere.stderr).toBe(0);
    expect(everywhere.stdout).toMatch(new RegExp(`^${ns}\\s+web\\s+255m\\s+74Mi`, "m"));
    const nodes = await kubectl(t, ["top", "nodes"]);
    expect(nodes.code, nodes.stderr).toBe(0);
    expect(nodes.stdout).toMatch(new RegExp(`^${A}\\s+1500m\\s+`, "m"));
    // a node without a report is listed as unknown
    expect(nodes.stdout).toMatch(new RegExp(`^${B}\\s+<unknown>`, "m"));
  });
});
