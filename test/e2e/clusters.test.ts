// Many clusters in one deployment (docs/clusters.md), on the shared control plane: two
// clusters made with `edgeplane cluster create`, used with real kubectl through the
// kubeconfigs it writes; nothing crosses between them or to the root; deleting one tears it
// down (404, its node agent leaves), leaves the other untouched, and a new one of the same
// name starts empty.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { api, causes, hasKubectl, kubectl, shared, type Target, until } from "../helpers/cluster";

const run = promisify(execFile);
const REPO = join(import.meta.dirname, "..", "..");
const CLI = join(REPO, "cli/bin/edgeplane.mjs");
const EDGELET = join(REPO, "agent/bin/edgelet.mjs");
const CLUSTERS = "/apis/tenancy.edgeplane.dev/v1alpha1/clusters";

const root = shared();
const state = mkdtempSync(join(tmpdir(), "edgeplane-clusters-"));
const suffix = Math.random().toString(36).slice(2, 7);
const A = `a-${suffix}`;
const B = `b-${suffix}`;

async function cli(...args: string[]) {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [CLI, ...args, "--kubeconfig", root.kubeconfigPath],
      {
        env: { ...process.env, EDGEPLANE_STATE_DIR: state },
      },
    );
    return { code: 0, stdout, stderr };
  } catch (e: any) {
    return { code: typeof e.code === "number" ? e.code : 1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

/** A cluster made through the CLI, as a Target (its URL, admin token and kubeconfig). */
async function createCluster(name: string): Promise<Target> {
  const r = await cli("cluster", "create", name);
  expect(r.code, r.stderr).toBe(0);
  const kubeconfigPath = r.stdout.trim();
  expect(kubeconfigPath).toBe(join(state, "clusters", name, "kubeconfig"));
  const token = /token: (\S+)/.exec(readFileSync(kubeconfigPath, "utf8"))![1];
  return { url: `${root.url}/clusters/${name}`, token, kubeconfigPath };
}

/** `edgelet join --runtime simulated` against a cluster: one node, "<name>-0". */
class SimulatedAgent {
  child: ChildProcess;
  output = "";
  exit: Promise<number | null>;
  constructor(t: Target, name: string) {
    this.child = spawn(
      process.execPath,
      [EDGELET, "join", "--server", t.url, "--token", t.token, "--name", name, "--runtime", "simulated"],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    this.child.stdout?.on("data", (d) => (this.output += d));
    this.child.stderr?.on("data", (d) => (this.output += d));
    this.exit = new Promise((r) => this.child.once("exit", (code) => r(code)));
  }
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill("SIGTERM");
    await Promise.race([this.exit, new Promise((r) => setTimeout(r, 10_000))]);
    if (this.child.exitCode === null) this.child.kill("SIGKILL");
  }
}

async function nodeReady(t: Target, node: string): Promise<boolean> {
  const r = await api(t, "GET", `/api/v1/nodes/${node}`);
  return (
    r.status === 200 && r.json.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True")
  );
}

describe.skipIf(!hasKubectl)("clusters", () => {
  let a: Target;
  let b: Target;
  const agents: SimulatedAgent[] = [];

  beforeAll(async () => {
    a = await createCluster(A);
    b = await createCluster(B);
  });

  afterAll(async () => {
    await Promise.all(agents.map((g) => g.stop()));
    for (const n of [A, B]) await api(root, "DELETE", `${CLUSTERS}/${n}`);
    rmSync(state, { recursive: true, force: true });
  });

  it("serves each cluster to kubectl with its own default namespaces and kubernetes Service", async () => {
    for (const t of [a, b]) {
      const ns = await kubectl(t, ["get", "ns", "-o", "name"]);
      expect(ns.code, ns.stderr).toBe(0);
      expect(ns.stdout.split("\n")).toEqual(
        expect.arrayContaining(["namespace/default", "namespace/kube-system", "namespace/kube-public"]),
      );
      const svc = await kubectl(t, ["get", "svc", "kubernetes", "-o", "jsonpath={.spec.clusterIP}"]);
      expect(svc.code, svc.stderr).toBe(0);
    }
    const listed = await cli("cluster", "list");
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(A);
    expect(listed.stdout).toContain(`/clusters/${B}/`);
    // the root's kubectl sees the objects; the clusters do not serve them
    const got = await kubectl(root, [
      "get",
      "clusters.tenancy.edgeplane.dev",
      A,
      "-o",
      "jsonpath={.status.phase}",
    ]);
    expect(got.stdout).toBe("Ready");
    expect((await kubectl(a, ["get", "clusters.tenancy.edgeplane.dev"])).code).not.toBe(0);
  });

  it("keeps the same names apart: same namespace and object name, different content", async () => {
    for (const [t, v] of [
      [a, "from-a"],
      [b, "from-b"],
    ] as const) {
      expect((await kubectl(t, ["create", "namespace", "shared-name"])).code).toBe(0);
      const r = await kubectl(t, [
        "-n",
        "shared-name",
        "create",
        "configmap",
        "cm",
        `--from-literal=who=${v}`,
      ]);
      expect(r.code, r.stderr).toBe(0);
    }
    const ra = await kubectl(a, ["-n", "shared-name", "get", "cm", "cm", "-o", "jsonpath={.data.who}"]);
    const rb = await kubectl(b, ["-n", "shared-name", "get", "cm", "cm", "-o", "jsonpath={.data.who}"]);
    expect([ra.stdout, rb.stdout]).toEqual(["from-a", "from-b"]);
    // and the root has none of it
    expect((await api(root, "GET", "/api/v1/namespaces/shared-name/configmaps/cm")).status).toBe(404);
  });

  it("lets a watch in one cluster see nothing of another", async () => {
    const w = spawn("/usr/bin/kubectl", [
      "--kubeconfig",
      a.kubeconfigPath,
      "get",
      "configmaps",
      "-A",
      "-w",
      "-o",
      "name",
    ]);
    let out = "";
    w.stdout.on("data", (d) => (out += d));
    try {
      await until("the watch's first list", async () => out.includes("configmap/cm"));
      expect((await kubectl(b, ["-n", "shared-name", "create", "configmap", "only-b"])).code).toBe(0);
      expect((await kubectl(a, ["-n", "shared-name", "create", "configmap", "only-a"])).code).toBe(0);
      await until("a's own change", async () => out.includes("configmap/only-a"));
      expect(out).not.toContain("only-b");
    } finally {
      w.kill();
    }
  });

  it("refuses every credential of one cluster in another (401)", async () => {
    // admin credentials: a's in b, the root's in a, a's in the root
    expect((await api({ ...b, token: a.token }, "GET", "/api/v1/namespaces")).status).toBe(401);
    expect((await api({ ...a, token: root.token }, "GET", "/api/v1/namespaces")).status).toBe(401);
    expect((await api({ ...root, token: a.token }, "GET", "/api/v1/namespaces")).status).toBe(401);
    // a service account token of a
    const tr = await api(a, "POST", "/api/v1/namespaces/default/serviceaccounts/default/token", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: {},
    });
    expect(tr.status, tr.text).toBe(201);
    const sa = tr.json.status.token;
    expect((await api({ ...a, token: sa }, "GET", "/api/v1/namespaces/default/pods")).status).not.toBe(401);
    expect((await api({ ...b, token: sa }, "GET", "/api/v1/namespaces/default/pods")).status).toBe(401);
    // a node credential of a: not in b, and not b's tunnel
    const nc = await api(a, "POST", "/edgeplane/node-credentials", { nodeName: "n1" });
    expect(nc.status, nc.text).toBe(201);
    const node = nc.json.token;
    expect((await api({ ...a, token: node }, "GET", "/api/v1/nodes/n1")).status).not.toBe(401);
    expect((await api({ ...b, token: node }, "GET", "/api/v1/nodes/n1")).status).toBe(401);
    expect((await api({ ...b, token: node }, "GET", "/edgeplane/tunnel/n1")).status).toBe(401);
    // its tunnel (a WebSocket through the cluster's path) opens in a only
    const open = (t: Target) =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(`${t.url.replace(/^http/, "ws")}/edgeplane/tunnel/n1`, {
          headers: { authorization: `Bearer ${node}` },
        });
        ws.on("open", () => {
          ws.close();
          resolve(101);
        });
        ws.on("unexpected-response", (_req, res) => {
          resolve(res.statusCode ?? 0);
          ws.terminate();
        });
        ws.on("error", () => resolve(-1));
      });
    expect(await open(a)).toBe(101);
    expect(await open(b)).toBe(401);
  });

  it("serves each cluster its own pod traces and its own dashboard", async () => {
    const TRACES = "/apis/trace.edgeplane.dev/v1alpha1/namespaces/default/podtraces";
    const pod = (name: string) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name },
      spec: {
        // no node needed: the trace's apiserver stages are written with the pod
        schedulingGates: [{ name: "edgeplane.dev/trace-test" }],
        containers: [{ name: "main", image: "127.0.0.1:5000/edgeplane/busybox:1" }],
      },
    });
    const uids: string[] = [];
    for (const t of [a, b]) {
      const r = await api(t, "POST", "/api/v1/namespaces/default/pods", pod("traced"));
      expect(r.status, r.text).toBe(201);
      uids.push(r.json.metadata.uid);
    }
    expect(uids[0]).not.toBe(uids[1]);
    // each cluster's trace of "traced" is its own pod's
    for (const [i, t] of [a, b].entries()) {
      const tr = await api(t, "GET", `${TRACES}/traced`);
      expect(tr.status, tr.text).toBe(200);
      expect(tr.json.kind).toBe("PodTrace");
      expect(tr.json.pod.uid).toBe(uids[i]);
      expect(tr.json.stages.map((s: any) => s.step)).toContain("2.4");
    }
    // a pod of a alone has no trace in b or the root: the pod's own 404
    expect((await api(a, "POST", "/api/v1/namespaces/default/pods", pod("only-in-a"))).status).toBe(201);
    expect((await api(a, "GET", `${TRACES}/only-in-a`)).status).toBe(200);
    for (const t of [b, root]) {
      const r = await api(t, "GET", `${TRACES}/only-in-a`);
      expect(r.status, r.text).toBe(404);
      expect(r.json).toMatchObject({
        kind: "Status",
        reason: "NotFound",
        details: { name: "only-in-a", kind: "pods" },
      });
    }
    // a's credential reads no trace in b
    expect((await api({ ...b, token: a.token }, "GET", `${TRACES}/traced`)).status).toBe(401);

    // the dashboard under the cluster's path: the login page without credentials, its script
    // from the same path (the page's API calls keep the prefix: core's BASE)
    const shell = await fetch(`${a.url}/dashboard/`);
    expect(shell.status).toBe(401);
    expect(await shell.text()).toContain('id="login-form"');
    const js = await fetch(`${a.url}/dashboard/app.js`);
    expect(js.status).toBe(200);
    expect(await js.text()).toContain("/dashboard/");
    const signedIn = await fetch(`${a.url}/dashboard/`, { headers: { authorization: `Bearer ${a.token}` } });
    expect(signedIn.status).toBe(200);
    // b's credential is no one in a
    const other = await fetch(`${a.url}/dashboard/`, { headers: { authorization: `Bearer ${b.token}` } });
    expect(other.status).toBe(401);
  });

  it("schedules each cluster's Deployment onto its own nodes only", async () => {
    const ga = new SimulatedAgent(a, `na-${suffix}`);
    const gb = new SimulatedAgent(b, `nb-${suffix}`);
    agents.push(ga, gb);
    await until("a's node Ready", () => nodeReady(a, `na-${suffix}-0`), 30_000, 200).catch((e) => {
      throw new Error(`${e.message}\n${ga.output}`);
    });
    await until("b's node Ready", () => nodeReady(b, `nb-${suffix}-0`), 30_000, 200).catch((e) => {
      throw new Error(`${e.message}\n${gb.output}`);
    });
    expect((await api(a, "GET", `/api/v1/nodes/nb-${suffix}-0`)).status).toBe(404);
    for (const t of [a, b]) {
      const r = await kubectl(t, ["create", "deployment", "web", "--image=busybox", "--replicas=2"]);
      expect(r.code, r.stderr).toBe(0);
    }
    for (const [t, node] of [
      [a, `na-${suffix}-0`],
      [b, `nb-${suffix}-0`],
    ] as const) {
      const nodes = await until(
        "pods bound",
        async () => {
          const r = await api(t, "GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb");
          const items = r.json?.items ?? [];
          return (
            items.length === 2 &&
            items.every((p: any) => p.spec.nodeName) &&
            items.map((p: any) => p.spec.nodeName)
          );
        },
        30_000,
        200,
      );
      expect(new Set(nodes)).toEqual(new Set([node]));
      // the pod's trace is this cluster's: its own scheduler placed it on its own node
      const pods = await api(t, "GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb");
      const pod = pods.json.items[0].metadata;
      const stages = await until(
        "the scheduler's stage in the trace",
        async () => {
          const tr = await api(
            t,
            "GET",
            `/apis/trace.edgeplane.dev/v1alpha1/namespaces/default/podtraces/${pod.name}`,
          );
          const st = tr.status === 200 ? (tr.json.stages as any[]) : [];
          return tr.json?.pod?.uid === pod.uid && st.some((x) => x.step === "5.1") && st;
        },
        15_000,
        200,
      );
      expect(stages.find((x: any) => x.step === "5.1").detail.node).toBe(node);
      expect(stages.find((x: any) => x.step === "5.3")?.detail?.nodeName).toBe(node);
    }
  });

  it("deletes a cluster: 404 for it, its node agent leaves, the other untouched; a new one starts empty", async () => {
    const gb = agents[1];
    // the CLI removes the kubeconfig it wrote: a copy of it tries on
    const kept = join(state, `${B}-kept`);
    copyFileSync(b.kubeconfigPath, kept);
    const del = await cli("cluster", "delete", B);
    expect(del.code, del.stderr).toBe(0);
    expect(existsSync(b.kubeconfigPath)).toBe(false);
    const gone = await kubectl({ ...b, kubeconfigPath: kept }, ["get", "ns"]);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toContain(`"${B}" not found`);
    const r = await api(b, "GET", "/api/v1/namespaces");
    expect(r.status).toBe(404);
    expect(r.json).toMatchObject({ kind: "Status", reason: "NotFound", details: { kind: "clusters" } });
    // its agent is told (every answer is that 404) and exits saying why
    const code = await Promise.race([
      gb.exit,
      new Promise((res) => setTimeout(() => res("running"), 20_000)),
    ]);
    expect(code, gb.output).toBe(3);
    expect(gb.output).toContain("the cluster this node joined was deleted");
    // a is as it was
    const ra = await kubectl(a, ["-n", "shared-name", "get", "cm", "cm", "-o", "jsonpath={.data.who}"]);
    expect(ra.stdout).toBe("from-a");
    // b again: empty, its old credential refused
    const again = await createCluster(B);
    expect((await kubectl(again, ["get", "ns", "shared-name"])).code).not.toBe(0);
    expect((await api(again, "GET", "/api/v1/nodes")).json.items).toEqual([]);
    expect((await api({ ...again, token: b.token }, "GET", "/api/v1/namespaces")).status).toBe(401);
  });

  it("holds a cluster to its request rate limit with 429 and Retry-After", async () => {
    const name = `lim-${suffix}`;
    const made = await api(root, "POST", CLUSTERS, {
      apiVersion: "tenancy.edgeplane.dev/v1alpha1",
      kind: "Cluster",
      metadata: { name },
      spec: { limits: { requestsPerSecond: 2 } },
    });
    expect(made.status, made.text).toBe(201);
    try {
      const tr = await api(root, "POST", `${CLUSTERS}/${name}/token`, {});
      const t: Target = { ...root, url: `${root.url}/clusters/${name}`, token: tr.json.status.token };
      const answers = await Promise.all(Array.from({ length: 8 }, () => api(t, "GET", "/version")));
      const limited = answers.filter((r) => r.status === 429);
      expect(limited.length).toBeGreaterThan(0);
      expect(limited[0].json).toMatchObject({ kind: "Status", reason: "TooManyRequests" });
      expect(limited[0].headers.get("retry-after")).toBe("1");
      // other clusters are not held to it
      const others = await Promise.all(Array.from({ length: 8 }, () => api(a, "GET", "/version")));
      expect(others.every((r) => r.status === 200)).toBe(true);
    } finally {
      await api(root, "DELETE", `${CLUSTERS}/${name}`);
    }
  });

  it("answers bad names, duplicates, the root and unknown clusters with a clear Status", async () => {
    const post = (name: string) =>
      api(root, "POST", CLUSTERS, {
        apiVersion: "tenancy.edgeplane.dev/v1alpha1",
        kind: "Cluster",
        metadata: { name },
      });
    for (const bad of ["Upper", "dot.ted", "-dash", "x".repeat(64), "root"]) {
      const r = await post(bad);
      expect(r.status, bad).toBe(422);
      expect(r.json.reason).toBe("Invalid");
    }
    const badLimit = await api(root, "POST", CLUSTERS, {
      apiVersion: "tenancy.edgeplane.dev/v1alpha1",
      kind: "Cluster",
      metadata: { name: `lim-${suffix}` },
      spec: { limits: { requestsPerSecond: 0 } },
    });
    expect(badLimit.status).toBe(422);
    expect(causes(badLimit)).toEqual([expect.stringContaining("spec.limits.requestsPerSecond")]);
    const dup = await post(A);
    expect(dup.status).toBe(409);
    expect(dup.json.reason).toBe("AlreadyExists");
    const rootDelete = await api(root, "DELETE", `${CLUSTERS}/root`);
    expect(rootDelete.status).toBe(403);
    expect((await cli("cluster", "create", "Bad_Name")).code).not.toBe(0);
    for (const path of [
      `/clusters/nope-${suffix}/api/v1/namespaces`,
      "/clusters/UPPER/api",
      `/clusters/${A}%2F..%2F${B}/api/v1/namespaces`,
      "/clusters//api/v1/namespaces",
    ]) {
      const r = await api(root, "GET", path);
      expect(r.status, path).toBe(404);
      expect(r.json?.kind, path).toBe("Status");
    }
    // a's credential, walked into b's path by dot segments, is b's business: 401
    const walked = await fetch(`${root.url}/clusters/${A}/../${B}/api/v1/namespaces`, {
      headers: { authorization: `Bearer ${a.token}` },
    });
    expect(walked.status).toBe(401);
    // an encoded slash after the cluster's name stays inside it
    const inside = await api(a, "GET", `/api%2F..%2F..%2F${B}/api/v1/namespaces`);
    expect(inside.status).toBe(404);
  });
});
