// The HorizontalPodAutoscaler controller (upstream pkg/controller/podautoscaler), every sync
// period (15 s) per HPA: reads the target's scale subresource (Deployment, ReplicaSet,
// StatefulSet, a custom kind with one); a target outside [minReplicas, maxReplicas] is brought
// back within them; within them each metric proposes a count (Resource and ContainerResource
// metrics from the resource metrics API, metrics.k8s.io: replica-calculator.ts), the highest
// wins, and normalization.ts stabilizes and limits it (behavior, or upstream's defaults). The
// status (current and desired replicas, current metrics, last scale time, the AbleToScale,
// ScalingActive and ScalingLimited conditions) and the events are upstream's, in its words.
// Pods and Object metrics (custom.metrics.k8s.io) and External ones (external.metrics.k8s.io)
// have no API here: they fail as upstream's do without one.
import { lookupGVR } from "../../../api/registry";
import { matches, parseLabelSelector, type Selector } from "../../../api/selectors";
import { rfc3339 } from "../../../api/time";
import type { KubeObject } from "../../../api/types";
import { kindDef } from "../crd/custom-kinds";
import { errorMessage, isNotFound } from "../lib/api-errors";
import { type Condition, setCondition } from "../lib/conditions";
import { jsonEqual } from "../lib/json-equal";
import { keyOf, pathFor, splitKey } from "../lib/objects";
import type { Controller, ControllerContext } from "../runtime/controller";
import { metricsApiLister, type PodMetricsLister, resourceMetrics } from "./metrics-client";
import { ScalingHistory } from "./normalization";
import {
  type CalculatorOptions,
  DEFAULT_CALCULATOR,
  milliOf,
  milliQuantity,
  replicasForAverageValue,
  replicasForUtilization,
} from "./replica-calculator";

const HPA = lookupGVR("autoscaling", "v2", "horizontalpodautoscalers")!;
const HPAS = "autoscaling/horizontalpodautoscalers";
/** --horizontal-pod-autoscaler-sync-period */
export const SYNC_PERIOD_MS = 15_000;
/** --horizontal-pod-autoscaler-downscale-stabilization */
export const DOWNSCALE_STABILIZATION_MS = 300_000;
const NO_CUSTOM_METRICS =
  "unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered";
const NO_EXTERNAL_METRICS =
  "unable to fetch metrics from external metrics API: the server could not find the requested resource (get external.metrics.k8s.io)";

export interface HorizontalOptions {
  /** how often each HPA is looked at (EDGEPLANE_HPA_SYNC_PERIOD_SECONDS) */
  syncPeriodMs?: number;
  /** the scale-down stabilization window without behavior, and behavior's default (EDGEPLANE_HPA_DOWNSCALE_STABILIZATION_SECONDS) */
  downscaleStabilizationMs?: number;
  calculator?: Partial<CalculatorOptions>;
  /** where PodMetrics are listed; the resource metrics API through the controller's client by default */
  metrics?: (ctx: ControllerContext) => PodMetricsLister;
}

/** Why a metric with no API here cannot be read (Pods, Object, External). */
function unservedMetric(m: any): { reason: string; message: string; value: string } {
  switch (m?.type) {
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
    case "External": {
      const message = `unable to get external metric ${m.external?.metric?.name}: ${NO_EXTERNAL_METRICS}`;
      return {
        reason: "FailedGetExternalMetric",
        message,
        value: `failed to get ${m.external?.metric?.name} external metric value: ${message}`,
      };
    }
    default: {
      const message = `unknown metric source type "${m?.type ?? ""}"`;
      return { reason: "InvalidMetricSourceType", message, value: message };
    }
  }
}

/** One metric's proposal, or why it has none. */
type Proposal =
  | { ok: true; replicas: number; metric: string; status: any }
  | { ok: false; reason: string; message: string; error: string };

/** One look at one HPA: its status and conditions as they are being rebuilt. */
interface Pass {
  hpa: KubeObject;
  key: string;
  namespace: string;
  now: number;
  conditions: Condition[];
  event(type: "Normal" | "Warning", reason: string, message: string): void;
  condition(type: string, status: "True" | "False", reason: string, message: string): void;
}

export function createHorizontalPodAutoscalerController(opts: HorizontalOptions = {}): Controller {
  const syncPeriodMs = opts.syncPeriodMs ?? SYNC_PERIOD_MS;
  const downscaleStabilizationMs = opts.downscaleStabilizationMs ?? DOWNSCALE_STABILIZATION_MS;
  const calculator: CalculatorOptions = { ...DEFAULT_CALCULATOR, ...(opts.calculator ?? {}) };
  const history = new ScalingHistory();
  /** each HPA's pod selector as last read from its target's scale (null: not yet read) */
  const selectors = new Map<string, Selector | null>();

  /** The scale's selector, parsed, if it selects pods no other HPA's selector does. */
  function validateSelector(pass: Pass, selector: string, ctx: ControllerContext): Selector | string {
    if (!selector) {
      pass.event("Warning", "SelectorRequired", "selector is required");
      pass.condition(
        "ScalingActive",
        "False",
        "InvalidSelector",
        "the HPA target's scale is missing a selector",
      );
      return "selector is required";
    }
    let parsed: Selector;
    try {
      parsed = parseLabelSelector(selector);
    } catch (e) {
      const msg = `couldn't convert selector into a corresponding internal selector object: ${errorMessage(e)}`;
      pass.event("Warning", "InvalidSelector", msg);
      pass.condition("ScalingActive", "False", "InvalidSelector", msg);
      return msg;
    }
    if (selectors.has(pass.key)) selectors.set(pass.key, parsed);
    const pods = ctx.informers
      .list("/pods", pass.namespace)
      .filter((p) => matches(parsed, p.metadata.labels ?? {}));
    const owners: string[] = [];
    for (const [key, sel] of selectors) {
      // an HPA deleted since its last look selects nothing any more
      if (!ctx.informers.get(HPAS, key)) {
        selectors.delete(key);
        continue;
      }
      if (!sel || splitKey(key).namespace !== pass.namespace) continue;
      if (pods.some((p) => matches(sel, p.metadata.labels ?? {}))) owners.push(key);
    }
    if (owners.length > 1) {
      const msg = `pods by selector ${selector} are controlled by multiple HPAs: [${owners.sort().join(" ")}]`;
      pass.event("Warning", "AmbiguousSelector", msg);
      pass.condition("ScalingActive", "False", "AmbiguousSelector", msg);
      return msg;
    }
    return parsed;
  }

  /** A Resource or ContainerResource metric's proposal from the resource metrics API. */
  async function resourceProposal(
    pass: Pass,
    m: any,
    scale: KubeObject,
    selector: Selector,
    ctx: ControllerContext,
  ): Promise<Proposal> {
    const isContainer = m.type === "ContainerResource";
    const source = (isContainer ? m.containerResource : m.resource) ?? {};
    const name: string = source.name ?? "";
    const container: string = isContainer ? (source.container ?? "") : "";
    const target = source.target ?? {};
    const current: number = scale.spec?.replicas ?? 0;
    const fail = (message: string): Proposal => {
      const reason = isContainer ? "FailedGetContainerResourceMetric" : "FailedGetResourceMetric";
      pass.event("Warning", reason, message);
      const error = isContainer
        ? `failed to get ${container} container metric value: ${message}`
        : `failed to get ${name} resource metric value: ${message}`;
      return {
        ok: false,
        reason,
        message: `the HPA was unable to compute the replica count: ${message}`,
        error,
      };
    };
    const byValue = target.averageValue != null;
    if (!byValue && target.averageUtilization == null)
      return fail(
        "invalid resource metric source: neither an average utilization target nor an average value (usage) target was set",
      );
    const what = byValue ? "usage" : "utilization";
    let read: Awaited<ReturnType<typeof resourceMetrics>>;
    try {
      const lister = opts.metrics ? opts.metrics(ctx) : metricsApiLister(ctx.api);
      read = await resourceMetrics(lister, pass.namespace, scale.status?.selector ?? "", name, container);
    } catch (e) {
      return fail(
        `failed to get ${name} ${what}: unable to get metrics for resource ${name}: ${errorMessage(e)}`,
      );
    }
    const pods = ctx.informers
      .list("/pods", pass.namespace)
      .filter((p) => matches(selector, p.metadata.labels ?? {}));
    const input = {
      currentReplicas: current,
      resource: name,
      container,
      pods,
      metrics: read.metrics,
      now: pass.now,
    };
    try {
      let value: any;
      let replicas: number;
      let metric: string;
      if (byValue) {
        const r = replicasForAverageValue(
          { ...input, targetUsage: milliOf(target.averageValue) ?? 0 },
          calculator,
        );
        replicas = r.replicas;
        value = { averageValue: milliQuantity(r.usage) };
        metric = `${name} resource`;
      } else {
        const r = replicasForUtilization(
          { ...input, targetUtilization: target.averageUtilization },
          calculator,
        );
        replicas = r.replicas;
        value = { averageUtilization: r.utilization, averageValue: milliQuantity(r.rawAverage) };
        metric = `${name} ${isContainer ? "container " : ""}resource utilization (percentage of request)`;
      }
      const status = isContainer
        ? { type: "ContainerResource", containerResource: { name, container, current: value } }
        : { type: "Resource", resource: { name, current: value } };
      return { ok: true, replicas, metric, status };
    } catch (e) {
      return fail(`failed to get ${name} ${what}: ${errorMessage(e)}`);
    }
  }

  /**
   * The highest count the metrics propose (upstream computeReplicasForMetrics); replicas -1
   * when none can be used (all failed, or some failed and the rest would scale down).
   */
  async function proposeFromMetrics(
    pass: Pass,
    scale: KubeObject,
    ctx: ControllerContext,
  ): Promise<{ replicas: number; metric: string; statuses?: any[]; error?: string }> {
    const selector = validateSelector(pass, scale.status?.selector ?? "", ctx);
    if (typeof selector === "string") return { replicas: -1, metric: "", error: selector };
    const specs: any[] = pass.hpa.spec?.metrics ?? [];
    const current: number = scale.spec?.replicas ?? 0;
    const statuses: any[] = specs.map(() => ({ type: "" }));
    let replicas = 0;
    let metric = "";
    let invalid = 0;
    let first: Extract<Proposal, { ok: false }> | undefined;
    for (const [i, m] of specs.entries()) {
      let p: Proposal;
      if (m?.type === "Resource" || m?.type === "ContainerResource")
        p = await resourceProposal(pass, m, scale, selector, ctx);
      else {
        const f = unservedMetric(m);
        pass.event("Warning", f.reason, f.message);
        p = {
          ok: false,
          reason: f.reason,
          message: `the HPA was unable to compute the replica count: ${f.message}`,
          error: f.value,
        };
      }
      if (!p.ok) {
        if (!first) first = p;
        invalid++;
        continue;
      }
      statuses[i] = p.status;
      if (replicas === 0 || p.replicas > replicas) {
        replicas = p.replicas;
        metric = p.metric;
      }
    }
    const error = first
      ? `invalid metrics (${invalid} invalid out of ${specs.length}), first error is: ${first.error}`
      : undefined;
    if (specs.length === 0) return { replicas: current, metric: "", statuses: [] };
    if (first && (invalid >= specs.length || replicas < current)) {
      pass.condition("ScalingActive", "False", first.reason, first.message);
      return { replicas: -1, metric: "", statuses, error };
    }
    pass.condition(
      "ScalingActive",
      "True",
      "ValidMetricFound",
      `the HPA was able to successfully calculate a replica count from ${metric}`,
    );
    return { replicas, metric, statuses, error };
  }

  async function writeStatus(pass: Pass, status: any, ctx: ControllerContext): Promise<void> {
    if (jsonEqual(status, pass.hpa.status ?? {})) return;
    try {
      await ctx.api.update(HPA, { ...pass.hpa, status }, "status");
    } catch (e) {
      if (isNotFound(e)) return;
      pass.event("Warning", "FailedUpdateStatus", errorMessage(e));
      throw e;
    }
  }

  /** The status upstream's setStatus makes (empty lists and zero current replicas left out). */
  function statusOf(
    pass: Pass,
    current: number,
    desired: number,
    metrics: any[] | undefined,
    rescaled: boolean,
  ) {
    const s: any = { desiredReplicas: desired };
    if (current) s.currentReplicas = current;
    if (metrics?.length) s.currentMetrics = metrics;
    const last = rescaled ? rfc3339(pass.now) : pass.hpa.status?.lastScaleTime;
    if (last) s.lastScaleTime = last;
    s.conditions = pass.conditions;
    return s;
  }

  async function sync(key: string, ctx: ControllerContext): Promise<void> {
    const hpa = ctx.informers.get(HPAS, key);
    if (!hpa) {
      history.forget(key);
      selectors.delete(key);
      return;
    }
    if (hpa.metadata.deletionTimestamp) return;
    ctx.enqueue(key, syncPeriodMs);
    if (!selectors.has(key)) selectors.set(key, null);
    const now = ctx.now();
    const { namespace = "" } = splitKey(key);
    const spec = hpa.spec ?? {};
    const pass: Pass = {
      hpa,
      key,
      namespace,
      now,
      conditions: [...(hpa.status?.conditions ?? [])],
      event: (type, reason, message) => void ctx.recorder.event(hpa, type, reason, message),
      condition: (type, status, reason, message) => {
        pass.conditions = setCondition(pass.conditions, {
          type,
          status,
          reason,
          message,
          lastTransitionTime: rfc3339(now),
        });
      },
    };
    const prevDesired: number = hpa.status?.desiredReplicas ?? 0;
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
      pass.event("Warning", "FailedGetScale", why);
      pass.condition(
        "AbleToScale",
        "False",
        "FailedGetScale",
        `the HPA controller was unable to get the target's current scale: ${why}`,
      );
      const s: any = { ...(hpa.status ?? {}), conditions: pass.conditions };
      delete s.observedGeneration;
      return writeStatus(pass, s, ctx);
    }
    pass.condition(
      "AbleToScale",
      "True",
      "SucceededGetScale",
      "the HPA controller was able to get the target's current scale",
    );
    const current: number = scale.spec?.replicas ?? 0;
    history.recordInitial(key, current, now);
    const min: number = spec.minReplicas ?? 1;
    const max: number = spec.maxReplicas;
    let desired = 0;
    let reason = "";
    let rescale = true;
    let metricStatuses: any[] | undefined;
    if (current === 0 && min !== 0) {
      rescale = false;
      pass.condition(
        "ScalingActive",
        "False",
        "ScalingDisabled",
        "scaling is disabled since the replica count of the target is zero",
      );
    } else if (current > max) {
      desired = max;
      reason = "Current number of replicas above Spec.MaxReplicas";
    } else if (current < min) {
      desired = min;
      reason = "Current number of replicas below Spec.MinReplicas";
    } else {
      const proposed = await proposeFromMetrics(pass, scale, ctx);
      metricStatuses = proposed.statuses;
      if (proposed.replicas === -1) {
        await writeStatus(pass, statusOf(pass, current, prevDesired, metricStatuses, false), ctx);
        pass.event("Warning", "FailedComputeMetricsReplicas", proposed.error ?? "");
        return;
      }
      let metric = "";
      if (proposed.replicas > desired) {
        desired = proposed.replicas;
        metric = proposed.metric;
      }
      if (desired > current) reason = `${metric} above target`;
      if (desired < current) reason = "All metrics below target";
      const normalized = history.normalize(
        key,
        { behavior: spec.behavior, current, desired, min, max, downscaleStabilizationMs },
        now,
      );
      pass.condition("AbleToScale", "True", normalized.ableToScale.reason, normalized.ableToScale.message);
      pass.condition(
        "ScalingLimited",
        normalized.limited.status,
        normalized.limited.reason,
        normalized.limited.message,
      );
      desired = normalized.replicas;
      rescale = desired !== current;
    }
    if (rescale) {
      try {
        await ctx.api.request(
          "PATCH",
          pathFor(target!, namespace, ref.name, "scale"),
          { spec: { replicas: desired } },
          "application/merge-patch+json",
        );
      } catch (e) {
        const why = errorMessage(e);
        pass.event("Warning", "FailedRescale", `New size: ${desired}; reason: ${reason}; error: ${why}`);
        pass.condition(
          "AbleToScale",
          "False",
          "FailedUpdateScale",
          `the HPA controller was unable to update the target scale: ${why}`,
        );
        await writeStatus(pass, statusOf(pass, current, prevDesired, metricStatuses, false), ctx);
        return;
      }
      pass.condition(
        "AbleToScale",
        "True",
        "SucceededRescale",
        `the HPA controller was able to update the target scale to ${desired}`,
      );
      pass.event("Normal", "SuccessfulRescale", `New size: ${desired}; reason: ${reason}`);
      history.storeScaleEvent(key, spec.behavior, current, desired, now);
    } else {
      desired = current;
    }
    await writeStatus(pass, statusOf(pass, current, desired, metricStatuses, rescale), ctx);
  }

  return {
    name: "horizontal-pod-autoscaler",
    // a new HPA, or a changed spec, is looked at now; every HPA again each sync period
    watches: { [HPAS]: (hpa, old) => (!old || !jsonEqual(hpa.spec, old.spec) ? [keyOf(hpa)] : []) },
    resync: (ctx) => ctx.informers.keys(HPAS),
    sync,
  };
}
