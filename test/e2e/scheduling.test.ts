// The scheduler's plugins through the whole control plane: taints and tolerations, node
// affinity, resource fit, host ports and topology spread over 3 zones, on simulated
// nodes; then node lifecycle (lease stops -> NotReady, unreachable taint, eviction and
// replacement) and a control-plane restart in the middle of a rollout.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulatedNodes } from "../../agent/simulated/simnodes";
import { startDevServer } from "../../local-engine/devserver";
import { api, freshNamespace, hasKubectl, kubectl, type Target, until } from "../helpers/cluster";
import { removeStateDir, tempStateDir } from "../helpers/own-server";

/** this file waits longer: scheduling retries back off */
const until20 = <T>(what: string, fn: () => Promise<T | undefined | false>, ms = 20000) =>
  until(what, fn, ms, 150);

const pod = (name: string, spec: Record<string, unknown> = {}, labels: Record<string, string> = {}) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, labels },
  spec: { containers: [{ name: "c", image: "busybox" }], ...spec },
});

let t: Target & { stop(): Promise<void>; kill(): Promise<void> };
let dir: string;
let sim: Awaited<ReturnType<typeof startSimulatedNodes>>;

async function nodeOf(ns: string, name: string): Promise<string | undefined> {
  return (await api(t, "GET", `/api/v1/namespaces/${ns}/pods/${name}`)).json?.spec?.nodeName;
}

async function pending(ns: string, name: string): Promise<string> {
  return until20(`${name} unschedulable`, async () => {
    const p = (await api(t, "GET", `/api/v1/namespaces/${ns}/pods/${name}`)).json;
    const c = p.status?.conditions?.find((x: any) => x.type === "PodScheduled" && x.status === "False");
    return c?.message as string;
  });
}

beforeAll(async () => {
  dir = tempStateDir("sched");
  t = await startDevServer({
    stateDir: dir,
    quiet: true,
    vars: { EDGEPLANE_NODE_MONITOR_GRACE_SECONDS: "6", EDGEPLANE_DEFAULT_TOLERATION_SECONDS: "2" },
  });
  // three zones, one node each; node 0 is small, node 2 is tainted
  sim = await startSimulatedNodes({
    server: t.url,
    token: t.token,
    count: 3,
    namePrefix: "z-node-",
    leaseSeconds: 2,
    // reported with every status update, as a kubelet reports its own (a patch from here
    // would be overwritten by the node's next report)
    nodeCapacity: { "z-node-0": { cpu: "1", memory: "1Gi", pods: "110" } },
  });
  await api(
    t,
    "PATCH",
    `/api/v1/nodes/z-node-2`,
    JSON.stringify({ spec: { taints: [{ key: "dedicated", value: "gpu", effect: "NoSchedule" }] } }),
    {
      "content-type": "application/merge-patch+json",
    },
  );
}, 120_000);

afterAll(async () => {
  await sim?.stop();
  await t?.stop();
  removeStateDir(dir);
});

describe("scheduling plugins", () => {
  it("taints keep pods away unless tolerated", async () => {
    const ns = await freshNamespace(t);
    await api(
      t,
      "POST",
      `/api/v1/namespaces/${ns}/pods`,
      pod("pin", { nodeSelector: { "kubernetes.io/hostname": "z-node-2" } }),
    );
    expect(await pending(ns, "pin")).toMatch(/1 node\(s\) had untolerated taint \{dedicated: gpu\}/);
    await api(
      t,
      "POST",
      `/api/v1/namespaces/${ns}/pods`,
      pod("tolerant", {
        nodeSelector: { "kubernetes.io/hostname": "z-node-2" },
        tolerations: [{ key: "dedicated", operator: "Equal", value: "gpu", effect: "NoSchedule" }],
      }),
    );
    expect(await until20("tolerant bound", () => nodeOf(ns, "tolerant"))).toBe("z-node-2");
  });

  it("node affinity selects by zone label", async () => {
    const ns = await freshNamespace(t);
    const zone = (await api(t, "GET", "/api/v1/nodes/z-node-1")).json.metadata.labels[
      "topology.kubernetes.io/zone"
    ];
    await api(
      t,
      "POST",
      `/api/v1/namespaces/${ns}/pods`,
      pod("aff", {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                {
                  matchExpressions: [{ key: "topology.kubernetes.io/zone", operator: "In", values: [zone] }],
                },
              ],
            },
          },
        },
      }),
    );
    expect(await until20("aff bound", () => nodeOf(ns, "aff"))).toBe("z-node-1");
  });

  it("a pod requesting more than any node has stays Pending with Insufficient cpu", async () => {
    const ns = await freshNamespace(t);
    const big = pod("big");
    (big.spec as any).containers[0].resources = { requests: { cpu: "64" } };
    await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, big);
    const msg = await pending(ns, "big");
    expect(msg).toMatch(/^0\/3 nodes are available: .*Insufficient cpu/);
    const fits = pod("fits");
    (fits.spec as any).containers[0].resources = { requests: { cpu: "2" } };
    await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, fits);
    // z-node-0 has 1 cpu allocatable, z-node-2 is tainted: only z-node-1 fits
    expect(await until20("fits bound", () => nodeOf(ns, "fits"))).toBe("z-node-1");
  });

  it("host ports conflict", async () => {
    const ns = await freshNamespace(t);
    const withPort = (name: string) => {
      const p = pod(name, { nodeSelector: { "kubernetes.io/hostname": "z-node-1" } });
      (p.spec as any).containers[0].ports = [{ containerPort: 80, hostPort: 8080 }];
      return p;
    };
    await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, withPort("first"));
    expect(await until20("first bound", () => nodeOf(ns, "first"))).toBe("z-node-1");
    await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, withPort("second"));
    expect(await pending(ns, "second")).toMatch(
      /node\(s\) didn't have free ports for the requested pod ports/,
    );
  });

  it("topology spread puts one pod per zone", async () => {
    const ns = await freshNamespace(t);
    const tolerateAll = [{ operator: "Exists" }];
    for (const i of [1, 2, 3]) {
      await api(
        t,
        "POST",
        `/api/v1/namespaces/${ns}/pods`,
        pod(
          `s${i}`,
          {
            tolerations: tolerateAll,
            topologySpreadConstraints: [
              {
                maxSkew: 1,
                topologyKey: "topology.kubernetes.io/zone",
                whenUnsatisfiable: "DoNotSchedule",
                labelSelector: { matchLabels: { app: "spread" } },
              },
            ],
          },
          { app: "spread" },
        ),
      );
      await until20(`s${i} bound`, () => nodeOf(ns, `s${i}`));
    }
    const nodes = await Promise.all([1, 2, 3].map((i) => nodeOf(ns, `s${i}`)));
    expect(new Set(nodes).size).toBe(3);
  });
});

describe.skipIf(!hasKubectl)("node lifecycle and restarts", () => {
  it("a node whose lease stops goes NotReady, is tainted unreachable, and its pods are replaced elsewhere", async () => {
    const ns = await freshNamespace(t);
    await kubectl(t, ["create", "deployment", "ha", "-n", ns, "--image=busybox", "--replicas=2"]);
    const podsOn = async (node: string) =>
      (await api(t, "GET", `/api/v1/namespaces/${ns}/pods`)).json.items.filter(
        (p: any) => p.spec.nodeName === node && !p.metadata.deletionTimestamp,
      );
    // both replicas land on schedulable nodes 0 or 1; stop the node that has one
    // (pods without requests score alike on both, so where they land is the scheduler's tie-break)
    const victim = await until20("a replica on z-node-0 or z-node-1", async () => {
      for (const n of ["z-node-1", "z-node-0"]) if ((await podsOn(n)).length) return n;
      return undefined;
    });
    sim.stopLeases(victim);
    const node = await until20(
      "NotReady + unreachable taint",
      async () => {
        const n = (await api(t, "GET", `/api/v1/nodes/${victim}`)).json;
        const ready = n.status.conditions.find((c: any) => c.type === "Ready");
        const tainted = (n.spec.taints ?? []).some(
          (x: any) => x.key === "node.kubernetes.io/unreachable" && x.effect === "NoExecute",
        );
        return ready.status === "Unknown" && tainted && n;
      },
      30_000,
    );
    expect(node.status.conditions.find((c: any) => c.type === "Ready").reason).toBe("NodeStatusUnknown");
    await until20(
      "replicas running elsewhere",
      async () => {
        const all = (await api(t, "GET", `/api/v1/namespaces/${ns}/pods`)).json.items.filter(
          (p: any) => !p.metadata.deletionTimestamp,
        );
        return all.length === 2 && all.every((p: any) => p.spec.nodeName && p.spec.nodeName !== victim);
      },
      30_000,
    );
    sim.resumeLeases(victim);
    await until20(
      "taint removed after recovery",
      async () => {
        const n = (await api(t, "GET", `/api/v1/nodes/${victim}`)).json;
        return !(n.spec.taints ?? []).some((x: any) => x.key === "node.kubernetes.io/unreachable");
      },
      30_000,
    );
  });

  it("a control-plane restart in the middle of a rollout completes correctly", async () => {
    const ns = await freshNamespace(t);
    await kubectl(t, ["create", "deployment", "rr", "-n", ns, "--image=busybox:1", "--replicas=4"]);
    await until20(
      "first rollout",
      async () =>
        (await kubectl(t, ["rollout", "status", "deployment/rr", "-n", ns, "--timeout=5s"])).code === 0,
    );
    await kubectl(t, ["set", "image", "deployment/rr", "-n", ns, "busybox=busybox:2"]);
    await t.kill();
    const again = await startDevServer({
      stateDir: dir,
      port: (t as any).port,
      quiet: true,
      vars: { EDGEPLANE_NODE_MONITOR_GRACE_SECONDS: "6", EDGEPLANE_DEFAULT_TOLERATION_SECONDS: "2" },
    });
    t = again;
    const r = await kubectl(t, ["rollout", "status", "deployment/rr", "-n", ns, "--timeout=40s"]);
    expect(r.code, r.stderr).toBe(0);
    const pods = (
      await api(t, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Drr`)
    ).json.items.filter((p: any) => !p.metadata.deletionTimestamp);
    expect(pods).toHaveLength(4);
    expect(new Set(pods.map((p: any) => p.spec.containers[0].image))).toEqual(new Set(["busybox:2"]));
    const rs = (await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/replicasets`)).json.items;
    expect(rs.map((x: any) => x.spec.replicas).sort()).toEqual([0, 4]);
  });
});
