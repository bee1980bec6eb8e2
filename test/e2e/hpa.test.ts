// A HorizontalPodAutoscaler scaling on cpu usage through the whole control plane: a control
// plane of its own with a short HPA sync period and downscale stabilization (the Worker
// variables), simulated nodes reporting their pods' usage to the resource metrics API
// (metrics.k8s.io) from the sim.edgeplane.dev/cpu-usage annotation, `kubectl autoscale`; the
// pods get "load" (their annotation raised), the Deployment scales up with upstream's event;
// the load goes, the HPA holds the count for the stabilization window, then scales down.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SimulatedNodesOptions, startSimulatedNodes } from "../../agent/simulated/simnodes";
import { startDevServer } from "../../local-engine/devserver";
import { api, freshNamespace, hasKubectl, kubectl, type Target, until } from "../helpers/cluster";
import { removeStateDir, tempStateDir } from "../helpers/own-server";

/**
 * How the simulated nodes are told to report their pods' usage every ~2 s: the metrics
 * branch's knob on agent/simulated (the one place to adapt when the branches merge).
 */
const SIM_METRICS_REPORTING: Record<string, unknown> = { metricsSeconds: 2 };

/** the pod annotation the simulated nodes report as the pod's cpu usage */
const CPU_USAGE = "sim.edgeplane.dev/cpu-usage";
const SYNC_SECONDS = 2;
const STABILIZATION_SECONDS = 20;

let t: Target & { stop(): Promise<void> };
let dir: string;
let sim: Awaited<ReturnType<typeof startSimulatedNodes>>;

beforeAll(async () => {
  dir = tempStateDir("hpa");
  t = await startDevServer({
    stateDir: dir,
    quiet: true,
    vars: {
      EDGEPLANE_HPA_SYNC_PERIOD_SECONDS: String(SYNC_SECONDS),
      EDGEPLANE_HPA_DOWNSCALE_STABILIZATION_SECONDS: String(STABILIZATION_SECONDS),
    },
  });
  const options = {
    server: t.url,
    token: t.token,
    count: 2,
    namePrefix: "hpa-node-",
    ...SIM_METRICS_REPORTING,
  } as SimulatedNodesOptions;
  sim = await startSimulatedNodes(options);
}, 120_000);

afterAll(async () => {
  await sim?.stop();
  await t?.stop();
  removeStateDir(dir);
});

const hpaOf = async (ns: string) =>
  (await api(t, "GET", `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers/web`)).json;
const replicasOf = async (ns: string): Promise<number> =>
  (await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/deployments/web`)).json.spec.replicas;
const condition = (hpa: any, type: string) =>
  (hpa.status?.conditions ?? []).find((c: any) => c.type === type);

async function events(ns: string): Promise<string[]> {
  const r = await api(t, "GET", `/api/v1/namespaces/${ns}/events?fieldSelector=involvedObject.name%3Dweb`);
  return (r.json.items as any[])
    .filter((e) => e.involvedObject.kind === "HorizontalPodAutoscaler")
    .map((e) => `${e.type} ${e.reason} ${e.message}`);
}

describe("HorizontalPodAutoscaler on simulated nodes", () => {
  it.skipIf(!hasKubectl)(
    "scales a Deployment up under load and down after the stabilization window",
    async () => {
      const served = await api(t, "GET", "/apis/metrics.k8s.io/v1beta1");
      expect(served.status, "the resource metrics API (metrics.k8s.io) must be served for this test").toBe(
        200,
      );
      const ns = await freshNamespace(t, "hpa");
      const k = (args: string[]) => kubectl(t, ["-n", ns, ...args]);
      const made = await api(t, "POST", `/apis/apps/v1/namespaces/${ns}/deployments`, {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "web" },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: "web" } },
          template: {
            metadata: { labels: { app: "web" }, annotations: { [CPU_USAGE]: "10m" } },
            spec: {
              containers: [
                { name: "app", image: "edgeplane/busybox:1", resources: { requests: { cpu: "100m" } } },
              ],
            },
          },
        },
      });
      expect(made.status, made.text).toBe(201);
      const auto = await k(["autoscale", "deployment", "web", "--cpu-percent=50", "--min=1", "--max=4"]);
      expect(auto.stdout, auto.stderr).toBe("horizontalpodautoscaler.autoscaling/web autoscaled\n");

      // idle: 10% of requests against 50%, read from the metrics API
      await until(
        "the HPA reading 10%",
        async () => {
          const h = await hpaOf(ns);
          return h.status?.currentMetrics?.[0]?.resource?.current?.averageUtilization === 10 && h;
        },
        60_000,
        250,
      );
      const idle = await hpaOf(ns);
      expect(condition(idle, "ScalingActive")).toMatchObject({
        status: "True",
        reason: "ValidMetricFound",
        message:
          "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)",
      });
      expect(idle.status.currentMetrics).toEqual([
        {
          type: "Resource",
          resource: { name: "cpu", current: { averageUtilization: 10, averageValue: "10m" } },
        },
      ]);
      expect(await replicasOf(ns)).toBe(1);
      const table = await k(["get", "hpa", "web"]);
      expect(table.stdout).toMatch(
        /^NAME\s+REFERENCE\s+TARGETS\s+MINPODS\s+MAXPODS\s+REPLICAS\s+AGE\nweb\s+Deployment\/web\s+cpu: 10%\/50%\s+1\s+4\s+1\s+\S+\n$/,
      );

      // load: the pod at 200% -> 4 replicas (the most maxReplicas and the scale-up limit allow)
      const loaded = await k(["annotate", "pods", "-l", "app=web", `${CPU_USAGE}=200m`, "--overwrite"]);
      expect(loaded.code, loaded.stderr).toBe(0);
      await until("scaled up to 4", async () => (await replicasOf(ns)) === 4, 60_000, 250);
      expect(await events(ns)).toContain(
        "Normal SuccessfulRescale New size: 4; reason: cpu resource utilization (percentage of request) above target",
      );
      const up = await hpaOf(ns);
      expect(up.status.lastScaleTime).toBeTruthy();
      expect(up.status.desiredReplicas).toBe(4);

      // the load goes: the HPA holds 4 for the stabilization window, then scales down to 1
      const rollout = await until(
        "4 pods running",
        async () => {
          const pods = (await api(t, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Dweb`)).json
            .items as any[];
          return pods.filter((p) => p.status?.phase === "Running").length === 4 && pods;
        },
        60_000,
        250,
      );
      expect(rollout).toHaveLength(4);
      const idled = await k(["annotate", "pods", "-l", "app=web", `${CPU_USAGE}=10m`, "--overwrite"]);
      expect(idled.code, idled.stderr).toBe(0);
      const loadEnded = Date.now();
      let sawHeld = false;
      await until(
        "scaled down to 1",
        async () => {
          const h = await hpaOf(ns);
          if (condition(h, "AbleToScale")?.reason === "ScaleDownStabilized") sawHeld = true;
          return (await replicasOf(ns)) === 1;
        },
        (STABILIZATION_SECONDS + 40) * 1000,
        250,
      );
      const heldFor = (Date.now() - loadEnded) / 1000;
      expect(sawHeld, "AbleToScale=ScaleDownStabilized while the window held the count").toBe(true);
      // the last high recommendation is at most a sync period before the load ended
      expect(heldFor).toBeGreaterThanOrEqual(STABILIZATION_SECONDS - SYNC_SECONDS - 1);
      expect(await events(ns)).toContain(
        "Normal SuccessfulRescale New size: 1; reason: All metrics below target",
      );
      // the next look sees the 1 replica as current (the rescaling one reported the 4 it found)
      const down = await until(
        "the HPA seeing 1 current replica",
        async () => {
          const h = await hpaOf(ns);
          return h.status?.currentReplicas === 1 && h;
        },
        20_000,
        250,
      );
      expect(down.status.desiredReplicas).toBe(1);
      expect(condition(down, "ScalingActive")?.reason).toBe("ValidMetricFound");
      // what kubectl describe makes of it
      const described = await k(["describe", "hpa", "web"]);
      expect(described.code, described.stderr).toBe(0);
      expect(described.stdout).toMatch(
        /resource cpu on pods\s+\(as a percentage of request\):\s+10% \(10m\) \/ 50%/,
      );
      expect(described.stdout).toMatch(/Deployment pods:\s+1 current \/ 1 desired/);
      expect(described.stdout).toMatch(/ScalingActive\s+True\s+ValidMetricFound/);
      expect(described.stdout).toMatch(/SuccessfulRescale\s+.*New size: 1; reason: All metrics below target/);
    },
    240_000,
  );
});
