// The HPA controller with the fake cluster and a fake metrics source: scale up on usage with
// upstream's status, conditions and events; scale down after the stabilization window; the
// scale subresource of Deployments, ReplicaSets and StatefulSets; no metrics API (404) as
// upstream reports it; AmbiguousSelector; behavior's policies across syncs.
import { describe, expect, it } from "vitest";
import { StatusError } from "../../../api/errors";
import { lookupKey } from "../../../api/registry";
import { matches, parseLabelSelector } from "../../../api/selectors";
import type { KubeObject } from "../../../api/types";
import { createHorizontalPodAutoscalerController } from "../../../durable-objects/controllers/podautoscaler/horizontal";
import {
  metricsApiLister,
  type PodMetricsList,
} from "../../../durable-objects/controllers/podautoscaler/metrics-client";
import { FakeCluster } from "./fake";

const HPAS = "autoscaling/horizontalpodautoscalers";

function workload(kind: string, name: string, replicas: number, labels = { app: name }): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind,
    metadata: { name, namespace: "default" },
    spec: { replicas, selector: { matchLabels: labels }, template: { metadata: { labels } } },
    status: { replicas },
  };
}

function hpa(
  name: string,
  target: { kind: string; name: string },
  spec: Record<string, unknown> = {},
): KubeObject {
  return {
    metadata: { name, namespace: "default" },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", ...target },
      minReplicas: 1,
      maxReplicas: 10,
      metrics: [
        {
          type: "Resource",
          resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 50 } },
        },
      ],
      ...spec,
    },
  };
}

/** Pods of the app, running and ready for 10 minutes, each requesting 100m cpu. */
function addPods(c: FakeCluster, app: string, n: number, labels: Record<string, string> = { app }) {
  const long = c.iso(c.now - 600_000);
  for (let i = 0; i < n; i++)
    c.add("/pods", {
      metadata: { name: `${app}-${i}`, namespace: "default", labels },
      spec: { containers: [{ name: "c", image: "busybox", resources: { requests: { cpu: "100m" } } }] },
      status: {
        phase: "Running",
        startTime: long,
        conditions: [{ type: "Ready", status: "True", lastTransitionTime: long }],
      },
    });
}

/** A metrics source whose pods use what `usage` says (millicores), sampled just now; like the API, it lists the pods the selector picks. */
function fakeMetrics(c: FakeCluster, usage: Map<string, number>) {
  const calls: string[] = [];
  const lister = {
    async list(namespace: string, selector: string): Promise<PodMetricsList> {
      calls.push(`${namespace}?${selector}`);
      const sel = parseLabelSelector(selector);
      const picked = new Set(
        c
          .list("/pods", namespace)
          .filter((p) => matches(sel, p.metadata.labels))
          .map((p) => p.metadata.name),
      );
      return {
        items: [...usage]
          .filter(([name]) => picked.has(name))
          .map(([name, m]) => ({
            metadata: { name, namespace },
            timestamp: c.iso(),
            window: "10s",
            containers: [{ name: "c", usage: { cpu: `${m}m` } }],
          })),
      };
    },
  };
  return { lister, calls };
}

function setup(opts: { usage?: Map<string, number>; stabilizationS?: number; noMetricsApi?: boolean } = {}) {
  const c = new FakeCluster();
  const usage = opts.usage ?? new Map<string, number>();
  const m = fakeMetrics(c, usage);
  const ctl = createHorizontalPodAutoscalerController({
    downscaleStabilizationMs: (opts.stabilizationS ?? 300) * 1000,
    // no metrics API: the API client's 404 for the path, as a server without the group answers
    metrics: opts.noMetricsApi
      ? () =>
          metricsApiLister({
            request: async () => {
              throw new StatusError(404, "NotFound", "the server could not find the requested resource");
            },
          })
      : () => m.lister,
  });
  const ctx = c.ctx("horizontal-pod-autoscaler");
  return { c, usage, ctl, ctx, calls: m.calls, sync: (key = "default/web") => ctl.sync(key, ctx) };
}

const cond = (o: KubeObject | undefined, type: string) =>
  (o?.status?.conditions as any[] | undefined)?.find((x) => x.type === type);
const events = (c: FakeCluster) => c.events.map((e) => `${e.type} ${e.reason} ${e.message}`);

describe("HPA controller", () => {
  it("scales a Deployment up on cpu usage, with upstream's status, conditions and events", async () => {
    const { c, usage, sync, calls } = setup();
    c.add("apps/deployments", workload("Deployment", "web", 2));
    addPods(c, "web", 2);
    usage.set("web-0", 150).set("web-1", 150); // 150% of requests against 50%
    c.add(HPAS, hpa("web", { kind: "Deployment", name: "web" }));
    await sync();
    expect(calls).toEqual(["default?app=web"]);
    // 150/50 = 3 -> ceil(3 * 2) = 6, within the 2x/4 limit of 2 (4)
    expect(c.get("apps/deployments", "default/web")!.spec.replicas).toBe(4);
    expect(c.writes.find((w) => w.sub === "scale")).toMatchObject({
      verb: "patch",
      body: { spec: { replicas: 4 } },
    });
    expect(events(c)).toEqual([
      "Normal SuccessfulRescale New size: 4; reason: cpu resource utilization (percentage of request) above target",
    ]);
    const h = c.get(HPAS, "default/web")!;
    expect(h.status).toMatchObject({
      currentReplicas: 2,
      desiredReplicas: 4,
      lastScaleTime: c.iso(),
      currentMetrics: [
        {
          type: "Resource",
          resource: { name: "cpu", current: { averageUtilization: 150, averageValue: "150m" } },
        },
      ],
    });
    expect(h.status.conditions.map((x: any) => [x.type, x.status, x.reason, x.message])).toEqual([
      [
        "AbleToScale",
        "True",
        "SucceededRescale",
        "the HPA controller was able to update the target scale to 4",
      ],
      [
        "ScalingActive",
        "True",
        "ValidMetricFound",
        "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)",
      ],
      [
        "ScalingLimited",
        "True",
        "ScaleUpLimit",
        "the desired replica count is increasing faster than the maximum scale rate",
      ],
    ]);
    // it looks again after the sync period
    expect(c.enqueued).toContainEqual({
      controller: "horizontal-pod-autoscaler",
      key: "default/web",
      afterMs: 15_000,
    });
  });

  it("holds a scale-down for the stabilization window, then scales down", async () => {
    const { c, usage, sync } = setup({ stabilizationS: 60 });
    c.add("apps/deployments", workload("Deployment", "web", 4));
    addPods(c, "web", 4);
    for (let i = 0; i < 4; i++) usage.set(`web-${i}`, 50);
    c.add(HPAS, hpa("web", { kind: "Deployment", name: "web" }));
    await sync(); // at the target: nothing to do
    expect(c.get("apps/deployments", "default/web")!.spec.replicas).toBe(4);
    expect(c.events).toEqual([]);
    // the load goes: 10% -> ceil(0.2 * 4) = 1, held while 4 is in the window
    for (let i = 0; i < 4; i++) usage.set(`web-${i}`, 10);
    c.now += 15_000;
    await sync();
    expect(c.get("apps/deployments", "default/web")!.spec.replicas).toBe(4);
    expect(cond(c.get(HPAS, "default/web"), "AbleToScale")).toMatchObject({
      status: "True",
      reason: "ScaleDownStabilized",
    });
    expect(c.get(HPAS, "default/web")!.status.desiredReplicas).toBe(4);
    c.now += 50_000; // 65 s after the last 4
    await sync();
    expect(c.get("apps/deployments", "default/web")!.spec.replicas).toBe(1);
    expect(events(c)).toEqual(["Normal SuccessfulRescale New size: 1; reason: All metrics below target"]);
  });

  it("scales ReplicaSets and StatefulSets through their scale subresource, by average value too", async () => {
    const { c, usage, sync } = setup();
    c.add("apps/replicasets", workload("ReplicaSet", "rs", 1));
    c.add("apps/statefulsets", workload("StatefulSet", "db", 3));
    addPods(c, "rs", 1);
    addPods(c, "db", 3);
    usage.set("rs-0", 100);
    for (let i = 0; i < 3; i++) usage.set(`db-${i}`, 20);
    c.add(HPAS, hpa("rs", { kind: "ReplicaSet", name: "rs" }));
    c.add(
      HPAS,
      hpa(
        "db",
        { kind: "StatefulSet", name: "db" },
        {
          metrics: [
            {
              type: "Resource",
              resource: { name: "cpu", target: { type: "AverageValue", averageValue: "40m" } },
            },
          ],
        },
      ),
    );
    await sync("default/rs");
    await sync("default/db");
    // 100% against 50%: 2; 20m against 40m: ceil(0.5 * 3) = 2, nothing recorded above it before
    expect(c.get("apps/replicasets", "default/rs")!.spec.replicas).toBe(2);
    expect(c.get("apps/statefulsets", "default/db")!.spec.replicas).toBe(3);
    expect(cond(c.get(HPAS, "default/db"), "AbleToScale")?.reason).toBe("ScaleDownStabilized");
    expect(c.get(HPAS, "default/db")!.status.currentMetrics).toEqual([
      { type: "Resource", resource: { name: "cpu", current: { averageValue: "20m" } } },
    ]);
  });

  it("without a metrics API (404) reports upstream's failure and leaves the replicas", async () => {
    const { c, sync } = setup({ noMetricsApi: true });
    c.add("apps/deployments", workload("Deployment", "web", 2));
    addPods(c, "web", 2);
    c.add(HPAS, hpa("web", { kind: "Deployment", name: "web" }));
    await sync();
    expect(c.get("apps/deployments", "default/web")!.spec.replicas).toBe(2);
    const why =
      "failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)";
    expect(events(c)).toEqual([
      `Warning FailedGetResourceMetric ${why}`,
      `Warning FailedComputeMetricsReplicas invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: ${why}`,
    ]);
    const h = c.get(HPAS, "default/web")!;
    expect(cond(h, "ScalingActive")).toMatchObject({
      status: "False",
      reason: "FailedGetResourceMetric",
      message: `the HPA was unable to compute the replica count: ${why}`,
    });
    expect(h.status).toMatchObject({
      currentReplicas: 2,
      desiredReplicas: 0,
      currentMetrics: [{ type: "" }],
    });
  });

  it("a metric that cannot be read does not stop a scale-up the others ask for, but stops a scale-down", async () => {
    const { c, usage, sync } = setup({ stabilizationS: 0 });
    c.add("apps/deployments", workload("Deployment", "web", 2));
    addPods(c, "web", 2);
    usage.set("web-0", 100).set("web-1", 100);
    const metrics = [
      {
        type: "Resource",
        resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 50 } },
      },
      {
        type: "Pods",
        pods: { metric: { name: "qps" }, target: { type: "AverageValue", averageValue: "1" } },
      },
    ];
    c.add(HPAS, hpa("web", { kind: "Deployment", name: "web" }, { metrics }));
    await sync();
    expect(c.get("apps/deployments", "default/web")!.spec.replicas).toBe(4);
    expect(cond(c.get(HPAS, "default/web"), "ScalingActive")?.reason).toBe("ValidMetricFound");
    usage.set("web-0", 1).set("web-1", 1);
    c.now += 20_000;
    await sync();
    expect(c.get("apps/deployments", "default/web")!.spec.replicas).toBe(4);
    expect(cond(c.get(HPAS, "default/web"), "ScalingActive")).toMatchObject({
      status: "False",
      reason: "FailedGetPodsMetric",
    });
    expect(events(c).at(-1)).toMatch(
      /^Warning FailedComputeMetricsReplicas invalid metrics \(1 invalid out of 2\), first error is: failed to get pods metric value: /,
    );
  });

  it("AmbiguousSelector when two HPAs select the same pods", async () => {
    const { c, usage, sync } = setup();
    c.add("apps/deployments", workload("Deployment", "web", 2));
    addPods(c, "web", 2);
    usage.set("web-0", 150).set("web-1", 150);
    c.add(HPAS, hpa("web", { kind: "Deployment", name: "web" }));
    c.add(HPAS, hpa("web2", { kind: "Deployment", name: "web" }));
    await sync("default/web");
    expect(c.get("apps/deployments", "default/web")!.spec.replicas).toBe(4);
    await sync("default/web2");
    await sync("default/web");
    const msg = "pods by selector app=web are controlled by multiple HPAs: [default/web default/web2]";
    expect(cond(c.get(HPAS, "default/web2"), "ScalingActive")).toMatchObject({
      status: "False",
      reason: "AmbiguousSelector",
      message: msg,
    });
    expect(cond(c.get(HPAS, "default/web"), "ScalingActive")?.reason).toBe("AmbiguousSelector");
    expect(events(c).filter((e) => e.includes("AmbiguousSelector"))).toEqual([
      `Warning AmbiguousSelector ${msg}`,
      `Warning AmbiguousSelector ${msg}`,
    ]);
    expect(events(c)).toContain(`Warning FailedComputeMetricsReplicas ${msg}`);
    expect(c.get("apps/deployments", "default/web")!.spec.replicas).toBe(4);
    // once web2 is gone (before its own next look), web scales again
    await c.api.remove(lookupKey(HPAS), "default", "web2");
    c.now += 15_000;
    await sync("default/web");
    expect(cond(c.get(HPAS, "default/web"), "ScalingActive")?.reason).toBe("ValidMetricFound");
  });

  it("behavior's policies limit each step across syncs", async () => {
    const { c, usage, sync } = setup();
    c.add("apps/deployments", workload("Deployment", "web", 1));
    addPods(c, "web", 1);
    usage.set("web-0", 500); // 500% against 50%: 10
    const behavior = {
      scaleUp: {
        stabilizationWindowSeconds: 0,
        selectPolicy: "Max",
        policies: [{ type: "Pods", value: 1, periodSeconds: 60 }],
      },
      scaleDown: { selectPolicy: "Max", policies: [{ type: "Percent", value: 100, periodSeconds: 15 }] },
    };
    c.add(HPAS, hpa("web", { kind: "Deployment", name: "web" }, { behavior }));
    await sync();
    expect(c.get("apps/deployments", "default/web")!.spec.replicas).toBe(2);
    // within the period no more is added, even though the metric still asks for more
    c.now += 15_000;
    addPods(c, "web", 2);
    usage.set("web-1", 500);
    await sync();
    expect(c.get("apps/deployments", "default/web")!.spec.replicas).toBe(2);
    expect(cond(c.get(HPAS, "default/web"), "ScalingLimited")).toMatchObject({
      status: "True",
      reason: "ScaleUpLimit",
    });
    c.now += 50_000;
    await sync();
    expect(c.get("apps/deployments", "default/web")!.spec.replicas).toBe(3);
  });

  it("a target without a selector in its scale: SelectorRequired", async () => {
    const { c, sync } = setup();
    const d = workload("Deployment", "web", 2);
    d.spec.selector = {};
    c.add("apps/deployments", d);
    c.add(HPAS, hpa("web", { kind: "Deployment", name: "web" }));
    await sync();
    expect(events(c)).toEqual([
      "Warning SelectorRequired selector is required",
      "Warning FailedComputeMetricsReplicas selector is required",
    ]);
    expect(cond(c.get(HPAS, "default/web"), "ScalingActive")).toMatchObject({
      reason: "InvalidSelector",
      message: "the HPA target's scale is missing a selector",
    });
  });
});
