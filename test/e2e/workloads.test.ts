// Deployment -> ReplicaSet -> Pods -> Binding (FLOW.md 4, 5) end to end: real kubectl,
// the controllers and the scheduler in workerd, KWOK-style simulated nodes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulatedNodes } from "../../agent/simulated/simnodes";
import { api, freshNamespace, hasKubectl, kubectl, shared, until } from "../helpers/cluster";

const t = shared();
const k = (args: string[]) => kubectl(t, args);

async function pods(ns: string, selector = ""): Promise<any[]> {
  const r = await api(
    t,
    "GET",
    `/api/v1/namespaces/${ns}/pods${selector ? `?labelSelector=${encodeURIComponent(selector)}` : ""}`,
  );
  return r.json.items;
}

let sim: Awaited<ReturnType<typeof startSimulatedNodes>>;

beforeAll(async () => {
  sim = await startSimulatedNodes({ server: t.url, token: t.token, count: 3, namePrefix: "wl-node-" });
});

afterAll(async () => {
  await sim?.stop();
  for (const n of sim?.nodes ?? []) await api(t, "DELETE", `/api/v1/nodes/${n}`);
});

describe.skipIf(!hasKubectl)("workloads", () => {
  it("create deployment -> one ReplicaSet, three pods bound to simulated nodes; describe shows Scheduled", async () => {
    const ns = await freshNamespace(t);
    const started = Date.now();
    const r = await k(["create", "deployment", "web", "-n", ns, "--image=busybox", "--replicas=3"]);
    expect(r.code, r.stderr).toBe(0);
    const bound = await until("3 bound pods", async () => {
      const ps = await pods(ns, "app=web");
      return ps.length === 3 && ps.every((p) => p.spec.nodeName) && ps;
    });
    const elapsed = Date.now() - started;
    console.log(`deployment of 3 -> all pods bound in ${elapsed} ms`);
    expect(bound.every((p) => sim.nodes.includes(p.spec.nodeName))).toBe(true);
    const rs = (await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/replicasets`)).json.items;
    expect(rs).toHaveLength(1);
    expect(rs[0].metadata.ownerReferences[0]).toMatchObject({
      kind: "Deployment",
      name: "web",
      controller: true,
    });
    expect(bound[0].metadata.ownerReferences[0]).toMatchObject({
      kind: "ReplicaSet",
      name: rs[0].metadata.name,
    });
    const wide = await k(["get", "pods", "-n", ns, "-o", "wide"]);
    for (const p of bound) expect(wide.stdout).toContain(p.spec.nodeName);
    const d = await k(["describe", "pod", "-n", ns, bound[0].metadata.name]);
    expect(d.stdout).toMatch(/Normal\s+Scheduled\s+.*Successfully assigned .* to wl-node-/);
    await until("rollout status", async () => {
      const s = await k(["rollout", "status", `deployment/web`, "-n", ns, "--timeout=10s"]);
      return s.code === 0 && s.stdout.includes("successfully rolled out");
    });
  });

  it("set image rolls with maxUnavailable respected; rollout undo goes back; scale 5 and 1", async () => {
    const ns = await freshNamespace(t);
    // written by hand, as most manifests are: no creationTimestamp in the template
    const manifest = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "roll", namespace: ns, labels: { app: "roll" } },
      spec: {
        replicas: 4,
        selector: { matchLabels: { app: "roll" } },
        template: {
          metadata: { labels: { app: "roll" } },
          spec: { containers: [{ name: "busybox", image: "busybox:1" }] },
        },
      },
    };
    const made = await kubectl(t, ["apply", "-f", "-"], { input: JSON.stringify(manifest) });
    expect(made.code, made.stderr).toBe(0);
    await until(
      "initial rollout",
      async () => (await k(["rollout", "status", "deployment/roll", "-n", ns, "--timeout=10s"])).code === 0,
    );
    // watch pods while rolling: available (Ready, not terminating) never below replicas - maxUnavailable (4 - 1)
    const list = await api(t, "GET", `/api/v1/namespaces/${ns}/pods`);
    const state = new Map<string, any>(list.json.items.map((p: any) => [p.metadata.name, p]));
    let minAvailable = Number.POSITIVE_INFINITY;
    const ctrl = new AbortController();
    const watching = (async () => {
      const res = await fetch(
        `${t.url}/api/v1/namespaces/${ns}/pods?watch=1&resourceVersion=${list.json.metadata.resourceVersion}`,
        {
          headers: { authorization: `Bearer ${t.token}` },
          signal: ctrl.signal,
        },
      );
      const reader = res.body!.getReader();
      let buf = "";
      const dec = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        buf += dec.decode(value, { stream: true });
        let i: number;
        while ((i = buf.indexOf("\n")) >= 0) {
          const ev = JSON.parse(buf.slice(0, i));
          buf = buf.slice(i + 1);
          if (ev.type === "DELETED") state.delete(ev.object.metadata.name);
          else state.set(ev.object.metadata.name, ev.object);
          const available = [...state.values()].filter(
            (p) =>
              !p.metadata.deletionTimestamp &&
              p.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True"),
          ).length;
          minAvailable = Math.min(minAvailable, available);
        }
      }
    })().catch(() => {});
    const set = await k(["set", "image", "deployment/roll", "-n", ns, "busybox=busybox:2"]);
    expect(set.code, set.stderr).toBe(0);
    const rs = await k(["rollout", "status", "deployment/roll", "-n", ns, "--timeout=30s"]);
    expect(rs.code, rs.stderr).toBe(0);
    ctrl.abort();
    await watching;
    expect(minAvailable).toBeGreaterThanOrEqual(3);
    const images = (await pods(ns, "app=roll"))
      .filter((p) => !p.metadata.deletionTimestamp)
      .map((p) => p.spec.containers[0].image);
    expect(new Set(images)).toEqual(new Set(["busybox:2"]));
    const hist = await k(["rollout", "history", "deployment/roll", "-n", ns]);
    expect(hist.stdout).toMatch(/^1\s/m);
    expect(hist.stdout).toMatch(/^2\s/m);
    expect((await k(["rollout", "undo", "deployment/roll", "-n", ns])).code).toBe(0);
    await until("undo rolled out", async () => {
      const d = (await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/deployments/roll`)).json;
      return (
        d.spec.template.spec.containers[0].image === "busybox:1" &&
        (await k(["rollout", "status", "deployment/roll", "-n", ns, "--timeout=10s"])).code === 0
      );
    });
    // undo went back to revision 1's ReplicaSet (kubectl sends its template as Go writes it,
    // `creationTimestamp: null` included): no third one; its revision is now 3
    const sets = (await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/replicasets`)).json.items;
    expect(sets).toHaveLength(2);
    const first = sets.find((r: any) => r.spec.template.spec.containers[0].image === "busybox:1");
    expect(first.metadata.annotations).toMatchObject({
      "deployment.kubernetes.io/revision": "3",
      "deployment.kubernetes.io/revision-history": "1",
    });
    const history = (await k(["rollout", "history", "deployment/roll", "-n", ns])).stdout;
    expect(history).not.toMatch(/^1\s/m);
    expect(history).toMatch(/^3\s/m);
    // a typed client's round trip (a label added, the template's zero timestamp written out)
    // changes no spec: same generation, no new ReplicaSet
    const cur = (await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/deployments/roll`)).json;
    cur.metadata.labels = { ...cur.metadata.labels, touched: "yes" };
    cur.spec.template.metadata.creationTimestamp = null;
    const put = await api(t, "PUT", `/apis/apps/v1/namespaces/${ns}/deployments/roll`, cur);
    expect(put.status, put.text).toBe(200);
    expect(put.json.metadata.generation).toBe(cur.metadata.generation);
    expect(put.json.spec.template.metadata).not.toHaveProperty("creationTimestamp");
    expect((await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/replicasets`)).json.items).toHaveLength(2);
    expect((await k(["scale", "deployment/roll", "-n", ns, "--replicas=5"])).code).toBe(0);
    await until(
      "5 pods",
      async () =>
        (await pods(ns, "app=roll")).filter((p) => !p.metadata.deletionTimestamp && p.spec.nodeName)
          .length === 5,
    );
    expect((await k(["scale", "deployment/roll", "-n", ns, "--replicas=1"])).code).toBe(0);
    await until("1 pod", async () => (await pods(ns, "app=roll")).length === 1, 20000);
  });

  it("a deleted pod is replaced; deleting the deployment removes everything; --cascade=orphan keeps pods", async () => {
    const ns = await freshNamespace(t);
    await k(["create", "deployment", "gc", "-n", ns, "--image=busybox", "--replicas=2"]);
    const first = await until("2 pods", async () => {
      const ps = await pods(ns, "app=gc");
      return ps.length === 2 && ps;
    });
    const victim = first[0].metadata.name;
    await k(["delete", "pod", victim, "-n", ns]);
    await until("replacement", async () => {
      const ps = (await pods(ns, "app=gc")).filter((p) => !p.metadata.deletionTimestamp);
      return ps.length === 2 && !ps.some((p) => p.metadata.name === victim);
    });
    expect((await k(["delete", "deployment", "gc", "-n", ns])).code).toBe(0);
    await until("all gone", async () => {
      const rs = (await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/replicasets`)).json.items;
      return rs.length === 0 && (await pods(ns)).length === 0;
    });
    await k(["create", "deployment", "keep", "-n", ns, "--image=busybox", "--replicas=2"]);
    await until("2 pods", async () => (await pods(ns, "app=keep")).length === 2);
    expect((await k(["delete", "deployment", "keep", "-n", ns, "--cascade=orphan"])).code).toBe(0);
    await until(
      "deployment gone",
      async () => (await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/deployments/keep`)).status === 404,
    );
    await new Promise((r) => setTimeout(r, 1500));
    expect((await pods(ns, "app=keep")).length).toBe(2);
    expect((await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/replicasets`)).json.items).toHaveLength(1);
  });

  it("kubectl drain evicts a node's pods through pods/eviction and they are replaced elsewhere", async () => {
    const ns = await freshNamespace(t);
    await k(["create", "deployment", "dr", "-n", ns, "--image=busybox", "--replicas=2"]);
    const first = await until("2 bound pods", async () => {
      const ps = (await pods(ns, "app=dr")).filter((p) => p.spec.nodeName);
      return ps.length === 2 && ps;
    });
    const node = first[0].spec.nodeName;
    try {
      // other suites share this server and may have bare pods on the node: drain only ours
      const d = await k(["drain", node, "--ignore-daemonsets", "--pod-selector=app=dr", "--timeout=60s"]);
      expect(d.code, d.stderr).toBe(0);
      expect(d.stdout).toContain(`pod/${first[0].metadata.name} evicted`);
      await until("replicas off the drained node", async () => {
        const ps = (await pods(ns, "app=dr")).filter((p) => !p.metadata.deletionTimestamp);
        return ps.length === 2 && ps.every((p) => p.spec.nodeName && p.spec.nodeName !== node);
      });
      const n = (await api(t, "GET", `/api/v1/nodes/${node}`)).json;
      expect(n.spec.unschedulable).toBe(true);
    } finally {
      await k(["uncordon", node]);
    }
  });

  it("a pod whose nodeSelector matches nothing stays Pending with FailedScheduling, then schedules when a node appears", async () => {
    const ns = await freshNamespace(t);
    await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, {
      metadata: { name: "picky" },
      spec: { nodeSelector: { disk: "ssd" }, containers: [{ name: "c", image: "busybox" }] },
    });
    const cond = await until("PodScheduled=False", async () => {
      const p = (await api(t, "GET", `/api/v1/namespaces/${ns}/pods/picky`)).json;
      return p.status?.conditions?.find((c: any) => c.type === "PodScheduled" && c.status === "False");
    });
    expect(cond.reason).toBe("Unschedulable");
    expect(cond.message).toMatch(
      /^0\/\d+ nodes are available: .*\d+ node\(s\) didn't match Node's node affinity\/selector/,
    );
    const d = await k(["describe", "pod", "picky", "-n", ns]);
    expect(d.stdout).toMatch(/Warning\s+FailedScheduling/);
    const extra = await startSimulatedNodes({
      server: t.url,
      token: t.token,
      count: 1,
      namePrefix: "ssd-node-",
      labels: { disk: "ssd" },
    });
    try {
      const p = await until("bound to the ssd node", async () => {
        const p = (await api(t, "GET", `/api/v1/namespaces/${ns}/pods/picky`)).json;
        return p.spec.nodeName && p;
      });
      expect(p.spec.nodeName).toBe(extra.nodes[0]);
    } finally {
      await extra.stop();
      for (const n of extra.nodes) await api(t, "DELETE", `/api/v1/nodes/${n}`);
    }
  });
});
