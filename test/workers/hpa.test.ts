// HorizontalPodAutoscalers through real workerd and kubectl: autoscaling/v2 stored, v1 (what
// `kubectl autoscale` creates) as a view of it; upstream's defaults, validation and table; the
// controller bringing the target's replicas within [minReplicas, maxReplicas] with upstream's
// events and conditions, and reporting, as upstream does without metrics (no metrics API, or
// no samples for the pods), that it cannot compute a replica count from metrics, leaving the
// replicas as they are. Scaling on metrics: test/e2e/hpa.test.ts.
import { describe, expect, it } from "vitest";
import { api, causes, freshNamespace, hasKubectl, kubectl, shared, until } from "../helpers/cluster";

const t = shared();
const hpas = (ns: string, name = "", version = "v2") =>
  `/apis/autoscaling/${version}/namespaces/${ns}/horizontalpodautoscalers${name ? `/${name}` : ""}`;

async function events(ns: string, name: string): Promise<string[]> {
  const r = await api(
    t,
    "GET",
    `/api/v1/namespaces/${ns}/events?fieldSelector=involvedObject.name%3D${name}`,
  );
  return (r.json.items as any[])
    .filter((e) => e.involvedObject.kind === "HorizontalPodAutoscaler")
    .map((e) => `${e.type} ${e.reason} ${e.message}`);
}

const condition = (hpa: any, type: string) =>
  (hpa.status?.conditions ?? []).find((c: any) => c.type === type);

describe("autoscaling horizontalpodautoscalers", () => {
  it("validates and defaults as upstream", async () => {
    const ns = await freshNamespace(t);
    const hpa = (name: string, spec: Record<string, unknown>) => ({
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name },
      spec,
    });
    expect(await causes(await api(t, "POST", hpas(ns), hpa("a", {})))).toEqual([
      "spec.maxReplicas: Invalid value: 0: must be greater than 0",
      "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`",
      "spec.scaleTargetRef.kind: Required value",
      "spec.scaleTargetRef.name: Required value",
    ]);
    const ref = { apiVersion: "apps/v1", kind: "Deployment", name: "web" };
    const bad = hpa("b", {
      scaleTargetRef: ref,
      minReplicas: 3,
      maxReplicas: 2,
      metrics: [
        { type: "Resource", resource: { name: "memory", target: { type: "Utilization" } } },
        { type: "Pods", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 50 } } },
      ],
      behavior: { scaleDown: { stabilizationWindowSeconds: 4000, policies: [] } },
    });
    expect(await causes(await api(t, "POST", hpas(ns), bad))).toEqual([
      "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
      "spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value or a target utilization",
      "spec.metrics[1].pods: Required value: must populate information for the given metric source",
      "spec.metrics[1].resource: Forbidden: must populate the given metric source only",
      "spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
      "spec.behavior.scaleDown.policies: Required value: must specify at least one Policy",
    ]);
    const ok = await api(
      t,
      "POST",
      hpas(ns),
      hpa("c", { scaleTargetRef: ref, maxReplicas: 3, behavior: {} }),
    );
    expect(ok.status, ok.text).toBe(201);
    expect(ok.json.spec).toMatchObject({
      minReplicas: 1,
      metrics: [
        {
          type: "Resource",
          resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 80 } },
        },
      ],
      behavior: {
        scaleUp: { stabilizationWindowSeconds: 0, selectPolicy: "Max" },
        scaleDown: { selectPolicy: "Max", policies: [{ type: "Percent", value: 100, periodSeconds: 15 }] },
      },
    });
    // the same object in v1: the cpu target as targetCPUUtilizationPercentage, behavior in an annotation
    const v1 = await api(t, "GET", hpas(ns, "c", "v1"));
    expect(v1.json.spec).toEqual({
      scaleTargetRef: ref,
      minReplicas: 1,
      maxReplicas: 3,
      targetCPUUtilizationPercentage: 80,
    });
    expect(
      JSON.parse(v1.json.metadata.annotations["autoscaling.alpha.kubernetes.io/behavior"]).scaleUp
        .selectPolicy,
    ).toBe("Max");
  });

  it.skipIf(!hasKubectl)(
    "kubectl autoscale: brings the Deployment within bounds, then reports it cannot read metrics",
    async () => {
      const ns = await freshNamespace(t);
      const k = (args: string[]) => kubectl(t, ["-n", ns, ...args]);
      expect((await k(["create", "deployment", "web", "--image=busybox", "--replicas=1"])).code).toBe(0);
      const made = await k(["autoscale", "deployment", "web", "--min=2", "--max=4"]);
      expect(made.stdout, made.stderr).toBe("horizontalpodautoscaler.autoscaling/web autoscaled\n");
      // below minReplicas: scaled up at once
      await until("the Deployment scaled to 2", async () => {
        const d = await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/deployments/web`);
        return d.json.spec.replicas === 2;
      });
      expect(
        await until(
          "SuccessfulRescale",
          async () => (await events(ns, "web")).length > 0 && events(ns, "web"),
        ),
      ).toEqual([
        "Normal SuccessfulRescale New size: 2; reason: Current number of replicas below Spec.MinReplicas",
      ]);
      const table = await k(["get", "hpa", "web"]);
      expect(table.stdout).toMatch(
        /^NAME\s+REFERENCE\s+TARGETS\s+MINPODS\s+MAXPODS\s+REPLICAS\s+AGE\nweb\s+Deployment\/web\s+cpu: <unknown>\/80%\s+2\s+4\s+\d\s+\S+\n$/,
      );
      // within bounds: scaling would follow metrics, and there is no metrics API
      const failing = await until(
        "ScalingActive False",
        async () => {
          const h = (await api(t, "GET", hpas(ns, "web"))).json;
          return condition(h, "ScalingActive")?.status === "False" && h;
        },
        30_000,
      );
      // why there is no sample, in upstream's words: without a metrics API (metrics.k8s.io) its
      // 404; with one, none for these pods (busybox, no cpu request, maybe on no node)
      const reasons = [
        "unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)",
        "unable to get metrics for resource cpu: no metrics returned from resource metrics API",
        "did not receive metrics for targeted pods (pods might be unready)",
        "missing request for cpu in container busybox of Pod web-[a-z0-9]+-[a-z0-9]+",
      ];
      const whyPattern = `failed to get cpu utilization: (?:${reasons.map((r) => r.replace(/[().]/g, "\\$&")).join("|")})`;
      const sc = condition(failing, "ScalingActive");
      expect(sc.reason).toBe("FailedGetResourceMetric");
      expect(sc.message).toMatch(
        new RegExp(`^the HPA was unable to compute the replica count: ${whyPattern}$`),
      );
      const why = sc.message.slice("the HPA was unable to compute the replica count: ".length);
      expect(condition(failing, "AbleToScale")).toMatchObject({
        status: "True",
        reason: "SucceededGetScale",
      });
      expect(failing.status).toMatchObject({
        currentReplicas: 2,
        desiredReplicas: 2,
        currentMetrics: [{ type: "" }],
      });
      // and the replicas stay as they were
      expect((await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/deployments/web`)).json.spec.replicas).toBe(
        2,
      );
      await until("FailedComputeMetricsReplicas", async () => (await events(ns, "web")).length >= 3, 10_000);
      expect(await events(ns, "web")).toEqual(
        expect.arrayContaining([
          `Warning FailedGetResourceMetric ${why}`,
          `Warning FailedComputeMetricsReplicas invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: ${why}`,
        ]),
      );
      // a lower maxReplicas brings the Deployment down to it
      const patched = await k([
        "patch",
        "hpa",
        "web",
        "--type=merge",
        "-p",
        '{"spec":{"minReplicas":1,"maxReplicas":1}}',
      ]);
      expect(patched.code, patched.stderr).toBe(0);
      await until("the Deployment scaled to 1", async () => {
        const d = await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/deployments/web`);
        return d.json.spec.replicas === 1;
      });
      expect(await events(ns, "web")).toContain(
        "Normal SuccessfulRescale New size: 1; reason: Current number of replicas above Spec.MaxReplicas",
      );
    },
    60_000,
  );

  it("says when it cannot get the target's scale", async () => {
    const ns = await freshNamespace(t);
    const r = await api(t, "POST", hpas(ns, "", "v1"), {
      apiVersion: "autoscaling/v1",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "lost" },
      spec: { scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "nope" }, maxReplicas: 2 },
    });
    expect(r.status, r.text).toBe(201);
    const h = await until("AbleToScale False", async () => {
      const x = (await api(t, "GET", hpas(ns, "lost"))).json;
      return condition(x, "AbleToScale")?.status === "False" && x;
    });
    expect(condition(h, "AbleToScale")).toMatchObject({
      reason: "FailedGetScale",
      message: `the HPA controller was unable to get the target's current scale: deployments.apps "nope" not found`,
    });
  });
});
