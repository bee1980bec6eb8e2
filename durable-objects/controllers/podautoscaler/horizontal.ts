// The HorizontalPodAutoscaler controller (upstream pkg/controller/podautoscaler), every 15 s
// per HPA: reads the target's scale subresource; brings a target outside [minReplicas,
// maxReplicas] back within them (SuccessfulRescale); with replicas at 0 it leaves scaling off.
// Within range it would scale on metrics, but no metrics API (metrics.k8s.io) is served here,
// so it reports what upstream reports without one: each metric unknown, ScalingActive=False
// with the metric's failure, FailedGetResourceMetric and FailedComputeMetricsReplicas events.
import { lookupGVR } from "../../../api/registry";
import { rfc3339 } from "../../../api/time";
import type { KubeObject } from "../../../api/types";
import { kindDef } from "../crd/custom-kinds";
import { errorMessage, isNotFound } from "../lib/api-errors";
import { type Condition, setCondition } from "../lib/conditions";
import { jsonEqual } from "../lib/json-equal";
import { keyOf, pathFor, splitKey } from "../lib/objects";
import type { Controller, ControllerContext } from "../runtime/controller";

const HPA = lookupGVR("autoscaling", "v2", "horizontalpodautoscalers")!;
const HPAS = "autoscaling/horizontalpodautoscalers";
export const SYNC_PERIOD_MS = 15_000;
const NO_RESOURCE_METRICS =
  "unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)";
const NO_CUSTOM_METRICS =
  "unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered";
const NO_EXTERNAL_METRICS =
  "unable to fetch metrics from external metrics API: the server could not find the requested resource (get external.metrics.k8s.io)";

/** Why a metric cannot be read (there is no metrics API): the event reason and upstream's error text. */
export function metricFailure(m: any): { reason: string; message: string; value: string } {
  switch (m?.type) {
    case "Resource":
    case "ContainerResource": {
      const r = m.type === "Resource" ? m.resource : m.containerResource;
      const how = r?.target?.averageValue != null ? "usage" : "utilization";
      const message = `failed to get ${r?.name} ${how}: unable to get metrics for resource ${r?.name}: ${NO_RESOURCE_METRICS}`;
      const reason = m.type === "Resource" ? "FailedGetResourceMetric" : "FailedGetContainerResourceMetric";
      return { reason, message, value: `failed to get ${r?.name} resource metric value: ${message}` };
    }
    case "Pods": {
      const message = `unable to get metric ${m.pods?.metric?.name}: ${NO_CUSTOM_METRICS}`;
      return { reason: "FailedGetPodsMetric", message, value: `failed to get pods metric value: ${message}` };
    }
    case "Object": {
      const message = `unable to get metric ${m.object?.metric?.name}: ${m.object?.describedObject?.kind}/${m.object?.describedObject?.name}: ${NO_CUSTOM_METRICS}`;
      return {
        reason: "FailedGetObjectMetric",
        message,
        value: `failed to get object metric value: ${message}`,
      };
    }
    default: {
      const message = `unable to get external metric ${m?.external?.metric?.name}: ${NO_EXTERNAL_METRICS}`;
      return {
        reason: "FailedGetExternalMetric",
        message,
        value: `failed to get external metric value: ${message}`,
      };
    }
  }
}

function condition(
  type: string,
  status: "True" | "False",
  reason: string,
  message: string,
  now: number,
): Condition {
  return { type, status, reason, message, lastTransitionTime: rfc3339(now) };
}

async function sync(key: string, ctx: ControllerContext): Promise<void> {
  const hpa = ctx.informers.get(HPAS, key);
  if (!hpa || hpa.metadata.deletionTimestamp) return;
  ctx.enqueue(key, SYNC_PERIOD_MS);
  const now = ctx.now();
  const { namespace } = splitKey(key);
  const spec = hpa.spec ?? {};
  const status: any = { ...(hpa.status ?? {}) };
  let conditions: Condition[] = status.conditions ?? [];
  const event = (type: "Normal" | "Warning", reason: string, message: string) =>
    void ctx.recorder.event(hpa, type, reason, message);
  const ref = spec.scaleTargetRef ?? {};
  const target = kindDef(ctx, ref.apiVersion ?? "", ref.kind ?? "");
  let scale: KubeObject;
  try {
    if (!target) {
      const group = String(ref.apiVersion ?? "")
        .split("/")
        .slice(0, -1)
        .join("/");
      throw new Error(`no matches for kind "${ref.kind}" in group "${group}"`);
    }
    scale = await ctx.api.request("GET", pathFor(target, namespace, ref.name, "scale"));
  } catch (e) {
    const why = errorMessage(e);
    event("Warning", "FailedGetScale", why);
    conditions = setCondition(
      conditions,
      condition(
        "AbleToScale",
        "False",
        "FailedGetScale",
        `the HPA controller was unable to get the target's current scale: ${why}`,
        now,
      ),
    );
    return writeStatus(ctx, hpa, { ...status, conditions });
  }
  conditions = setCondition(
    conditions,
    condition(
      "AbleToScale",
      "True",
      "SucceededGetScale",
      "the HPA controller was able to get the target's current scale",
      now,
    ),
  );
  const current: number = scale.spec?.replicas ?? 0;
  const min: number = spec.minReplicas ?? 1;
  const max: number = spec.maxReplicas;
  let desired = current;
  let reason = "";
  let currentMetrics: unknown = null;
  if (current === 0 && min !== 0) {
    conditions = setCondition(
      conditions,
      condition(
        "ScalingActive",
        "False",
        "ScalingDisabled",
        "scaling is disabled since the replica count of the target is zero",
        now,
      ),
    );
  } else if (current > max) {
    desired = max;
    reason = "Current number of replicas above Spec.MaxReplicas";
  } else if (current < min) {
    desired = min;
    reason = "Current number of replicas below Spec.MinReplicas";
  } else {
    // scaling on metrics: none can be read here
    const metrics: any[] = spec.metrics ?? [];
    const failures = metrics.map(metricFailure);
    if (failures.length) {
      const first = failures[0]!;
      event("Warning", first.reason, first.message);
      conditions = setCondition(
        conditions,
        condition(
          "ScalingActive",
          "False",
          first.reason,
          `the HPA was unable to compute the replica count: ${first.message}`,
          now,
        ),
      );
      desired = status.desiredReplicas ?? 0;
      currentMetrics = metrics.map(() => ({ type: "" }));
      await writeStatus(ctx, hpa, {
        ...status,
        currentReplicas: current,
        desiredReplicas: desired,
        currentMetrics,
        conditions,
      });
      event(
        "Warning",
        "FailedComputeMetricsReplicas",
        `invalid metrics (${failures.length} invalid out of ${failures.length}), first error is: ${first.value}`,
      );
      return;
    }
  }
  let lastScaleTime = status.lastScaleTime;
  if (reason) {
    try {
      await ctx.api.request(
        "PATCH",
        pathFor(target!, namespace, ref.name, "scale"),
        { spec: { replicas: desired } },
        "application/merge-patch+json",
      );
      event("Normal", "SuccessfulRescale", `New size: ${desired}; reason: ${reason}`);
      conditions = setCondition(
        conditions,
        condition(
          "AbleToScale",
          "True",
          "SucceededRescale",
          `the HPA controller was able to update the target scale to ${desired}`,
          now,
        ),
      );
      lastScaleTime = rfc3339(now);
    } catch (e) {
      const why = errorMessage(e);
      event("Warning", "FailedRescale", `New size: ${desired}; reason: ${reason}; error: ${why}`);
      conditions = setCondition(
        conditions,
        condition(
          "AbleToScale",
          "False",
          "FailedUpdateScale",
          `the HPA controller was unable to update the target scale: ${why}`,
          now,
        ),
      );
      desired = current;
    }
  }
  const next: any = {
    ...status,
    currentReplicas: current,
    desiredReplicas: desired,
    currentMetrics,
    conditions,
  };
  if (lastScaleTime) next.lastScaleTime = lastScaleTime;
  await writeStatus(ctx, hpa, next);
}

async function writeStatus(ctx: ControllerContext, hpa: KubeObject, status: any): Promise<void> {
  delete status.observedGeneration;
  if (jsonEqual(status, hpa.status ?? {})) return;
  try {
    await ctx.api.update(HPA, { ...hpa, status }, "status");
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}

export const horizontalPodAutoscalerController: Controller = {
  name: "horizontal-pod-autoscaler",
  // a new HPA, or a changed spec, is looked at now; every HPA again each SYNC_PERIOD_MS
  watches: { [HPAS]: (hpa, old) => (!old || !jsonEqual(hpa.spec, old.spec) ? [keyOf(hpa)] : []) },
  resync: (ctx) => ctx.informers.keys(HPAS),
  sync,
};
