// kubectl top against the agents' own usage reports: simulated nodes report figures from
// their pods' requests or the sim.edgeplane.dev/*-usage annotations (changed annotations show
// in the next report), and a real edgelet over containerd reports a pod burning CPU, read from
// CRI's container stats. One private control plane; reports every 1-2 s instead of 15.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CriClient } from "../../agent/cri/client";
import { CPU_USAGE_ANNOTATION, MEMORY_USAGE_ANNOTATION } from "../../agent/simulated/metrics";
import { type SimulatedNodes, startSimulatedNodes } from "../../agent/simulated/simnodes";
import { api, freshNamespace, hasKubectl, kubectl, until } from "../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer } from "../helpers/own-server";
import { available, BUSYBOX, EdgeletProcess, removeNodeSandboxes, SOCKET, waitPod } from "./edgelet/harness";

const MERGE = { "content-type": "application/merge-patch+json" };

describe.skipIf(!hasKubectl)("kubectl top from the node agents' reports", () => {
  let t: OwnServer;
  let sim: SimulatedNodes;
  let ns: string;

  beforeAll(async () => {
    t = await startOwnServer();
    ns = await freshNamespace(t, "top");
    sim = await startSimulatedNodes({
      server: t.url,
      token: t.token,
      count: 2,
      namePrefix: "top-sim-",
      metricsSeconds: 1,
    });
  }, 120_000);
  afterAll(async () => {
    await sim?.stop({ removeNodes: true });
    await t?.stop();
    removeStateDir(t?.stateDir);
  });

  const top = async (args: string[]) => {
    const r = await kubectl(t, ["top", ...args]);
    return r.code === 0 ? r.stdout : `${r.stdout}${r.stderr}`;
  };

  it("simulated pods show their requests' figures, or their annotations' (and changes of them)", async () => {
    const container = (name: string, cpu: string, memory: string) => ({
      name,
      image: "edgeplane/busybox:1",
      resources: { requests: { cpu, memory } },
    });
    for (const [name, annotations] of [
      ["plain", {}],
      ["driven", { [CPU_USAGE_ANNOTATION]: "300m", [MEMORY_USAGE_ANNOTATION]: "96Mi" }],
    ] as const) {
      const r = await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name, annotations, labels: { app: name } },
        spec: {
          nodeName: "top-sim-0",
          containers: [container("a", "100m", "32Mi"), container("b", "200m", "64Mi")],
        },
      });
      expect(r.status, r.text).toBe(201);
    }
    // plain: half the CPU request and 60% of the memory request; driven: the annotation split
    // by the containers' requests (1:2)
    const out = await until(
      "both pods in kubectl top",
      async () => {
        const o = await top(["pods", "-n", ns, "--containers"]);
        return /^driven\s+b/m.test(o) && /^plain\s+b/m.test(o) ? o : undefined;
      },
      30_000,
      500,
    );
    expect(out).toMatch(/^plain\s+a\s+50m\s+19Mi\s*$/m);
    expect(out).toMatch(/^plain\s+b\s+100m\s+38Mi\s*$/m);
    expect(out).toMatch(/^driven\s+a\s+100m\s+32Mi\s*$/m);
    expect(out).toMatch(/^driven\s+b\s+200m\s+64Mi\s*$/m);

    const p = await api(
      t,
      "PATCH",
      `/api/v1/namespaces/${ns}/pods/driven`,
      { metadata: { annotations: { [CPU_USAGE_ANNOTATION]: "1200m" } } },
      MERGE,
    );
    expect(p.status, p.text).toBe(200);
    await until(
      "the new annotation in kubectl top",
      async () => /^driven\s+1200m\s+96Mi\s*$/m.test(await top(["pods", "-n", ns, "-l", "app=driven"])),
      15_000,
      500,
    );
    // the HPA's read: the namespace's pods by label selector, as a PodMetricsList
    const list = await api(
      t,
      "GET",
      `/apis/metrics.k8s.io/v1beta1/namespaces/${ns}/pods?labelSelector=app%3Ddriven`,
    );
    expect(list.json.kind).toBe("PodMetricsList");
    expect(list.json.items[0].containers.map((c: any) => c.usage.cpu)).toEqual(["400m", "800m"]);
  });

  it("kubectl top nodes shows the simulated nodes: a base plus their pods", async () => {
    const out = await until(
      "both simulated nodes in kubectl top nodes",
      async () => {
        const o = await top(["nodes"]);
        return /^top-sim-0\s+\d/m.test(o) && /^top-sim-1\s+\d/m.test(o) ? o : undefined;
      },
      30_000,
      500,
    );
    // top-sim-1 runs nothing: 100m and 256Mi; percentages of its 32 cores and 256Gi
    expect(out).toMatch(/^top-sim-1\s+100m\s+0%\s+256Mi\s+0%\s*$/m);
    // top-sim-0: 100m + plain's 150m + driven's 1200m
    expect(out).toMatch(/^top-sim-0\s+1450m\s+\d+%\s+\d+Mi\s+\d+%\s*$/m);
  });

  describe.skipIf(!available)("a real node over containerd", () => {
    const node = `top-ctr-${Math.random().toString(36).slice(2, 7)}`;
    const root = mkdtempSync(join(tmpdir(), "edgelet-top-"));
    const cri = new CriClient({ endpoint: `unix://${SOCKET}` });
    let edgelet: EdgeletProcess;

    beforeAll(async () => {
      edgelet = new EdgeletProcess(t, node, root, ["--metrics-seconds", "2"]);
      edgelet.start();
      await edgelet.waitReady();
    }, 120_000);
    afterAll(async () => {
      await api(t, "DELETE", `/api/v1/namespaces/${ns}/pods/burn?gracePeriodSeconds=0`);
      await edgelet?.stop();
      await removeNodeSandboxes(cri, node);
      cri.close();
      rmSync(root, { recursive: true, force: true });
    }, 60_000);

    it("a pod burning CPU shows in kubectl top pods within 30 s, and the node in top nodes", async () => {
      const r = await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "burn" },
        spec: {
          nodeName: node,
          terminationGracePeriodSeconds: 0,
          containers: [
            {
              name: "burn",
              image: BUSYBOX,
              command: ["sh", "-c", "while :; do :; done"],
              // at most a third of a core: the machine is shared
              resources: { limits: { cpu: "300m", memory: "32Mi" } },
            },
          ],
        },
      });
      expect(r.status, r.text).toBe(201);
      await waitPod(t, ns, "burn", "burn running", (p) => p.status?.phase === "Running", 60_000);
      const started = Date.now();
      const line = await until(
        "burn's CPU in kubectl top pods",
        async () => {
          const m = /^burn\s+(\d+)m\s+(\d+)Mi\s*$/m.exec(await top(["pods", "-n", ns]));
          return m && Number(m[1]) >= 100 ? m : undefined;
        },
        30_000,
        500,
      );
      console.log(`kubectl top: burn at ${line[1]}m after ${Date.now() - started} ms`);
      expect(Number(line[1])).toBeLessThanOrEqual(400);
      const nodes = await top(["nodes"]);
      expect(nodes).toMatch(new RegExp(`^${node}\\s+\\d+m\\s+\\d+%\\s+\\d+Mi\\s+\\d+%\\s*$`, "m"));
    });
  });
});
