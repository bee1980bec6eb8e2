// Pod flow traces (docs/trace.md) on simulated nodes: the apiserver's, controllers' and
// scheduler's stages of a pod, a Deployment's owner chain, an unschedulable pod's reasons per
// plugin, RBAC on reading (a `view` user in A reads A's traces, gets 403 in B), the 404 of a
// missing pod, the CLI (`edgeplane trace`) over the same API, and a simulated pod's container
// restarts, of which the trace keeps the newest MAX_RESTART_SPANS and says how many it dropped.
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulatedNodes } from "../../agent/simulated/simnodes";
import { MAX_RESTART_SPANS } from "../../api/trace";
import { startDevServer } from "../../local-engine/devserver";
import { api, freshNamespace, hasKubectl, kubectl, type Target, until } from "../helpers/cluster";
import { removeStateDir, tempStateDir } from "../helpers/own-server";

const run = promisify(execFile);
const TRACE = "/apis/trace.edgeplane.dev/v1alpha1";

let t: Target & { stop(): Promise<void> };
let dir: string;
let sim: Awaited<ReturnType<typeof startSimulatedNodes>>;

const pod = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name },
  spec: { containers: [{ name: "c", image: "busybox" }], ...spec },
});

async function trace(target: Target, ns: string, name: string) {
  return api(target, "GET", `${TRACE}/namespaces/${ns}/podtraces/${name}`);
}

const steps = (stages: any[]) => stages.map((s) => s.step);

beforeAll(async () => {
  dir = tempStateDir("trace");
  t = await startDevServer({ stateDir: dir, quiet: true });
  sim = await startSimulatedNodes({ server: t.url, token: t.token, count: 3, namePrefix: "tr-node-" });
}, 120_000);

afterAll(async () => {
  await sim?.stop();
  await t?.stop();
  removeStateDir(dir);
});

describe("pod traces", () => {
  it("a created pod's trace holds the apiserver's and the scheduler's stages in flow order", async () => {
    const ns = await freshNamespace(t);
    expect((await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, pod("p1"))).status).toBe(201);
    const r = await until("p1 bound in its trace", async () => {
      const x = await trace(t, ns, "p1");
      return (
        x.json?.stages?.some((s: any) => s.step === "5.3") &&
        x.json.stages.some((s: any) => s.step === "5.1") &&
        x
      );
    });
    expect(r.status).toBe(200);
    expect(r.json.pod).toMatchObject({ name: "p1", namespace: ns });
    expect(r.json.pod.uid).toMatch(/-/);
    const stages = r.json.stages;
    const got = steps(stages);
    for (const s of ["1.3", "2.1", "2.2", "2.3", "2.4", "3.1", "5.1", "5.2", "5.3"]) expect(got).toContain(s);
    expect(got.indexOf("2.1")).toBeLessThan(got.indexOf("2.2"));
    expect(got.indexOf("2.3")).toBeLessThan(got.indexOf("2.4"));
    expect(got.indexOf("2.4")).toBeLessThan(got.indexOf("5.1"));
    expect(got.indexOf("5.1")).toBeLessThan(got.indexOf("5.3"));
    const by = (step: string) => stages.find((s: any) => s.step === step);
    expect(by("2.1").detail).toMatchObject({ method: "bearer token", user: expect.any(String) });
    expect(by("2.1").detail.groups).toContain("system:masters");
    expect(by("2.2").detail).toMatchObject({ decision: "allow" });
    expect(by("2.3").detail.mutating).toContain("ServiceAccount");
    expect(by("2.3").detail.validating).toContain("ResourceQuota");
    expect(by("2.3").detail.mutatedBy).toContain("ServiceAccount");
    expect(by("2.4").detail.resourceVersion).toMatch(/^\d+$/);
    expect(by("5.1").detail).toMatchObject({ node: expect.stringMatching(/^tr-node-/), attempts: 1 });
    expect(by("5.3").detail.nodeName).toBe(by("5.1").detail.node);
    // RFC 3339 with nanoseconds, monotonic and not overlapping
    let last = 0;
    for (const s of stages) {
      expect(s.start).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
      expect(s.state).toBe("done");
      const start = Date.parse(s.start);
      expect(start).toBeGreaterThanOrEqual(last);
      last = Date.parse(s.end);
      expect(last).toBeGreaterThanOrEqual(start);
    }
  });

  it("a Deployment's pods show the owner chain, the controller's reaction and the scheduler's decision", async () => {
    const ns = await freshNamespace(t);
    const d = await api(t, "POST", `/apis/apps/v1/namespaces/${ns}/deployments`, {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web" },
      spec: {
        replicas: 3,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { labels: { app: "web" } },
          spec: { containers: [{ name: "c", image: "busybox" }] },
        },
      },
    });
    expect(d.status).toBe(201);
    const pods = await until("3 pods", async () => {
      const l = (await api(t, "GET", `/api/v1/namespaces/${ns}/pods`)).json.items;
      return l.length === 3 && l.every((p: any) => p.spec.nodeName) && l;
    });
    for (const p of pods) {
      const r = await until(`${p.metadata.name} traced to its node`, async () => {
        const x = await trace(t, ns, p.metadata.name);
        return x.json?.stages?.some((s: any) => s.step === "5.1") && x;
      });
      const stages = r.json.stages;
      const chain = stages.find((s: any) => s.step === "4.2");
      const rs = p.metadata.ownerReferences[0].name;
      expect(chain.detail.chain).toEqual(["Deployment/web", `ReplicaSet/${rs}`, `Pod/${p.metadata.name}`]);
      const controller = stages.find((s: any) => s.step === "4.1");
      expect(controller.component).toBe("replicaset-controller");
      expect(controller.detail.owner).toMatchObject({ kind: "ReplicaSet", name: rs });
      expect(controller.detail.reactionMs).toBeGreaterThanOrEqual(0);
      const sched = stages.find((s: any) => s.step === "5.1");
      expect(sched.detail.node).toBe(p.spec.nodeName);
      expect(typeof sched.detail.score === "number" || sched.detail.feasibleNodes === 1).toBe(true);
      expect(stages.find((s: any) => s.step === "2.1").detail.user).toMatch(/replicaset-controller|system:/);
    }
  });

  it("an unschedulable pod shows the scheduler's reasons per plugin, waiting", async () => {
    const ns = await freshNamespace(t);
    await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, pod("nowhere", { nodeSelector: { disk: "ssd" } }));
    const stage = await until("5.1 waiting", async () => {
      const x = await trace(t, ns, "nowhere");
      return x.json?.stages?.find((s: any) => s.step === "5.1" && s.detail?.filtered);
    });
    expect(stage.state).toBe("waiting");
    expect(stage.reason).toMatch(
      /^Unschedulable: 0\/3 nodes are available: 3 node\(s\) didn't match Node's node affinity\/selector/,
    );
    expect(stage.detail.filtered.NodeAffinity.nodes.sort()).toEqual(["tr-node-0", "tr-node-1", "tr-node-2"]);
    expect(stage.detail.filtered.NodeAffinity.reasons).toEqual([
      "node(s) didn't match Node's node affinity/selector",
    ]);
    expect(steps((await trace(t, ns, "nowhere")).json.stages)).not.toContain("5.2");
  });

  it("a Binding from outside the control plane cannot bring a scheduling span with it", async () => {
    const ns = await freshNamespace(t);
    // no node matches: the scheduler leaves it to the Binding posted here
    await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, pod("by-hand", { nodeSelector: { disk: "ssd" } }));
    const forged = [{ step: "5.1", name: "scheduling", component: "scheduler", start: 1, end: 2 }];
    const r = await api(
      t,
      "POST",
      `/api/v1/namespaces/${ns}/pods/by-hand/binding`,
      {
        apiVersion: "v1",
        kind: "Binding",
        metadata: { name: "by-hand" },
        target: { kind: "Node", name: "tr-node-0" },
      },
      { "x-edgeplane-trace-spans": JSON.stringify(forged) },
    );
    expect(r.status).toBe(201);
    const stages = (await until("5.3", async () => {
      const x = await trace(t, ns, "by-hand");
      return x.json?.stages?.some((s: any) => s.step === "5.3") && x.json.stages;
    })) as any[];
    expect(stages.find((s) => s.step === "5.3").detail.nodeName).toBe("tr-node-0");
    expect(stages.some((s) => s.step === "5.1" && s.start === 1)).toBe(false);
  });

  it("a missing pod is 404 NotFound as upstream words it; bad requests are Status", async () => {
    const ns = await freshNamespace(t);
    const r = await trace(t, ns, "absent");
    expect(r.status).toBe(404);
    expect(r.json).toMatchObject({
      kind: "Status",
      status: "Failure",
      reason: "NotFound",
      code: 404,
      message: 'pods "absent" not found',
      details: { name: "absent", kind: "pods" },
    });
    const anon = await fetch(`${t.url}${TRACE}/namespaces/${ns}/podtraces/absent`);
    expect(anon.status).toBe(401);
  });

  it.skipIf(!hasKubectl)("a user with view in A reads traces in A and gets 403 in B", async () => {
    const a = await freshNamespace(t, "a");
    const b = await freshNamespace(t, "b");
    await api(t, "POST", `/api/v1/namespaces/${a}/pods`, pod("pa"));
    await api(t, "POST", `/api/v1/namespaces/${b}/pods`, pod("pb"));
    await api(t, "POST", `/api/v1/namespaces/${a}/serviceaccounts`, {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "reader" },
    });
    await api(t, "POST", `/apis/rbac.authorization.k8s.io/v1/namespaces/${a}/rolebindings`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "reader-view" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "view" },
      subjects: [{ kind: "ServiceAccount", name: "reader", namespace: a }],
    });
    const tok = await kubectl(t, ["create", "token", "reader", "-n", a]);
    expect(tok.code).toBe(0);
    const reader: Target = { ...t, token: tok.stdout.trim() };
    const ok = await until("reader reads A", async () => {
      const x = await trace(reader, a, "pa");
      return x.status === 200 && x;
    });
    expect(ok.json.pod.name).toBe("pa");
    const denied = await trace(reader, b, "pb");
    expect(denied.status).toBe(403);
    expect(denied.json).toMatchObject({ kind: "Status", reason: "Forbidden", code: 403 });
    expect(denied.json.message).toContain(
      `cannot get resource "pods" in API group "" in the namespace "${b}"`,
    );
  });

  it("the CLI prints the waterfall and, with -o json, the API's answer", async () => {
    const ns = await freshNamespace(t);
    await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, pod("cli"));
    await until("cli bound", async () => {
      const x = await trace(t, ns, "cli");
      return x.json?.stages?.some((s: any) => s.step === "5.3");
    });
    const cli = (args: string[]) =>
      run(process.execPath, ["cli/bin/edgeplane.mjs", ...args], {
        env: { ...process.env, KUBECONFIG: t.kubeconfigPath, NO_COLOR: "1" },
      });
    const out = (await cli(["trace", "pod/cli", "-n", ns])).stdout;
    expect(out).toContain(`pod ${ns}/cli`);
    for (const line of [
      "2.1 authentication",
      "2.2 authorization",
      "2.3 admission",
      "2.4 stored",
      "5.1 scheduling",
    ])
      expect(out).toContain(line);
    expect(out).toMatch(/slowest/);
    expect(out).toMatch(/█/);
    const js = JSON.parse((await cli(["trace", "pod/cli", "-n", ns, "-o", "json"])).stdout);
    expect(js.pod.name).toBe("cli");
    expect(steps(js.stages)).toContain("2.4");
    const missing = await cli(["trace", "pod/ghost", "-n", ns]).catch((e) => e);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('pods "ghost" not found');
    // another kubeconfig by flag
    const kc = join(dir, "other-kubeconfig");
    writeFileSync(kc, (await import("node:fs")).readFileSync(t.kubeconfigPath, "utf8"));
    expect((await cli(["trace", "pod/cli", "-n", ns, "--kubeconfig", kc])).stdout).toContain("2.4 stored");
  });

  it("a simulated pod's restarts: a span each, the newest kept, the dropped ones counted", async () => {
    const ns = await freshNamespace(t);
    const crashy = pod("crashy", { restartPolicy: "Always" });
    (crashy.metadata as Record<string, unknown>).annotations = {
      "sim.edgeplane.dev/run-seconds": "100ms",
      "sim.edgeplane.dev/exit-code": "2",
    };
    expect((await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, crashy)).status).toBe(201);
    const past = MAX_RESTART_SPANS + 3;
    const x = await until(
      `restart ${past} in the trace`,
      async () => {
        const r = await trace(t, ns, "crashy");
        const restarts = (r.json?.stages ?? []).filter((s: any) => s.step === "9.3" && s.detail?.restart);
        return restarts.some((s: any) => s.detail.restart >= past) && r;
      },
      40_000,
      250,
    );
    const restarts = x.json.stages.filter((s: any) => s.step === "9.3" && s.detail?.restart);
    // the window: exactly the newest restarts, in order, none missing between
    expect(restarts).toHaveLength(MAX_RESTART_SPANS);
    const numbers = restarts.map((s: any) => s.detail.restart);
    const newest = numbers[numbers.length - 1];
    expect(numbers).toEqual(
      Array.from({ length: MAX_RESTART_SPANS }, (_, i) => newest - MAX_RESTART_SPANS + 1 + i),
    );
    expect(restarts[0].name).toBe(`start c (restart ${numbers[0]})`);
    expect(restarts[0].detail.earlierRestartsDropped).toBe(numbers[0] - 1);
    expect(restarts.slice(1).every((s: any) => s.detail.earlierRestartsDropped === undefined)).toBe(true);
    for (const r of restarts)
      expect(r.detail).toMatchObject({ container: "c", exitCode: 2, reason: "Error" });
    // the rest of the trace is untouched by the restarts
    for (const step of ["2.1", "2.4", "5.1", "5.3"]) expect(steps(x.json.stages)).toContain(step);
    const status = (await api(t, "GET", `/api/v1/namespaces/${ns}/pods/crashy`)).json.status;
    expect(status.containerStatuses[0].restartCount).toBeGreaterThanOrEqual(newest);
    const out = (
      await run(process.execPath, ["cli/bin/edgeplane.mjs", "trace", "pod/crashy", "-n", ns], {
        env: { ...process.env, KUBECONFIG: t.kubeconfigPath, NO_COLOR: "1" },
      })
    ).stdout;
    expect(out).toContain(`9.3 start c (restart ${numbers[0]})`);
    expect(out).toContain(`restarts: ${MAX_RESTART_SPANS} in the trace, ${numbers[0] - 1} earlier not kept`);
  }, 60_000);
});
