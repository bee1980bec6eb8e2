// How many replicas a resource metric asks for (upstream's replica calculator, pure): the
// pods the target's selector picks are grouped into ready, unready (pending, or for cpu still
// starting up), missing (no sample) and ignored (failed or being deleted); the usage ratio of
// the ready pods decides, within the tolerance; then missing pods count in the conservative
// direction (full request or the target on a scale-down, nothing on a scale-up) and unready
// pods as idle on a scale-up, and a result that would reverse the direction keeps the count.
// Values are milli-units (millicores, millibytes) as upstream's MilliValue.
import { podCondition } from "../../../api/pod-state";
import { parseQuantity } from "../../../api/quantity";
import { timeOf } from "../../../api/time";
import type { KubeObject } from "../../../api/types";

/** One pod's sample: its value (milli-units), when it was taken and over what window (ms). */
export interface PodMetric {
  value: number;
  timestamp: number;
  windowMs: number;
}

/** Samples by pod name. */
export type PodMetrics = Map<string, PodMetric>;

export interface CalculatorOptions {
  /** the change below which nothing is done (--horizontal-pod-autoscaler-tolerance) */
  tolerance: number;
  /** cpu samples of a pod this young are used only once ready for a whole window (--horizontal-pod-autoscaler-cpu-initialization-period) */
  cpuInitializationPeriodMs: number;
  /** a pod not ready this long after its start counts as never ready (--horizontal-pod-autoscaler-initial-readiness-delay) */
  initialReadinessDelayMs: number;
}

export const DEFAULT_CALCULATOR: CalculatorOptions = {
  tolerance: 0.1,
  cpuInitializationPeriodMs: 5 * 60_000,
  initialReadinessDelayMs: 30_000,
};

export interface PodGroups {
  readyPodCount: number;
  unready: Set<string>;
  missing: Set<string>;
  ignored: Set<string>;
}

/** Sorts the selected pods by what their samples may say (upstream groupPods). */
export function groupPods(
  pods: KubeObject[],
  metrics: PodMetrics,
  resource: string,
  opts: CalculatorOptions,
  now: number,
): PodGroups {
  const out: PodGroups = { readyPodCount: 0, unready: new Set(), missing: new Set(), ignored: new Set() };
  for (const pod of pods) {
    const name = pod.metadata.name!;
    const phase = pod.status?.phase;
    if (pod.metadata.deletionTimestamp || phase === "Failed") {
      out.ignored.add(name);
      continue;
    }
    if (phase === "Pending") {
      out.unready.add(name);
      continue;
    }
    const metric = metrics.get(name);
    if (!metric) {
      out.missing.add(name);
      continue;
    }
    if (resource === "cpu") {
      const ready = podCondition(pod, "Ready");
      const started = timeOf(pod.status?.startTime);
      let unready: boolean;
      if (!ready || started === undefined) unready = true;
      else {
        const transition = timeOf(ready.lastTransitionTime) ?? 0;
        if (started + opts.cpuInitializationPeriodMs > now) {
          // still starting: a sample counts once the pod is ready and a whole window has passed since
          unready = ready.status === "False" || metric.timestamp < transition + metric.windowMs;
        } else {
          // past start-up: only a pod that has never been ready is left out
          unready = ready.status === "False" && started + opts.initialReadinessDelayMs > transition;
        }
      }
      if (unready) {
        out.unready.add(name);
        continue;
      }
    }
    out.readyPodCount++;
  }
  return out;
}

/** A request in milli-units, rounded up as Quantity.MilliValue; undefined when absent or malformed. */
export function milliOf(q: unknown): number | undefined {
  const v = parseQuantity(q);
  if (v === undefined) return undefined;
  const m = v * 1000;
  const r = Math.round(m);
  return Math.abs(m - r) < 1e-9 * Math.max(1, Math.abs(m)) ? r : Math.ceil(m);
}

/** Milli-units as a decimal quantity in its canonical form ("250m", "2", "3k"), as upstream prints them. */
export function milliQuantity(milli: number): string {
  if (milli === 0) return "0";
  if (milli % 1000 !== 0) return `${milli}m`;
  let v = milli / 1000;
  let i = 0;
  const suffixes = ["", "k", "M", "G", "T", "P", "E"];
  while (v % 1000 === 0 && i < suffixes.length - 1) {
    v /= 1000;
    i++;
  }
  return `${v}${suffixes[i]}`;
}

/**
 * Each pod's request of the resource (milli-units): its containers and sidecars (restartable init
 * containers), or only `container`. A container without the request is an error, as upstream's.
 */
export function podRequests(pods: KubeObject[], container: string, resource: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const pod of pods) {
    const spec = pod.spec ?? {};
    const all = [
      ...((spec.containers as any[]) ?? []),
      ...((spec.initContainers as any[]) ?? []).filter((c) => c?.restartPolicy === "Always"),
    ];
    let sum = 0;
    for (const c of all) {
      if (container && c.name !== container) continue;
      const req = milliOf(c.resources?.requests?.[resource]);
      if (req === undefined)
        throw new Error(`missing request for ${resource} in container ${c.name} of Pod ${pod.metadata.name}`);
      sum += req;
    }
    out.set(pod.metadata.name!, sum);
  }
  return out;
}

/** Usage against requests over the pods with both (upstream GetResourceUtilizationRatio). */
export function utilizationRatio(
  metrics: PodMetrics,
  requests: Map<string, number>,
  targetUtilization: number,
): { ratio: number; utilization: number; rawAverage: number } {
  let used = 0;
  let requested = 0;
  let n = 0;
  for (const [name, m] of metrics) {
    const req = requests.get(name);
    if (req === undefined) continue;
    used += m.value;
    requested += req;
    n++;
  }
  if (requested === 0) throw new Error("no metrics returned matched known pods");
  const utilization = Math.trunc((used * 100) / requested);
  return { ratio: utilization / targetUtilization, utilization, rawAverage: Math.trunc(used / n) };
}

/** The average sample against a target average (upstream GetMetricUsageRatio). */
export function usageRatio(metrics: PodMetrics, targetUsage: number): { ratio: number; usage: number } {
  let used = 0;
  for (const m of metrics.values()) used += m.value;
  const usage = Math.trunc(used / metrics.size);
  return { ratio: usage / targetUsage, usage };
}

export interface ResourceInput {
  currentReplicas: number;
  resource: string;
  /** "" for the whole pod (a Resource metric), a container's name for a ContainerResource metric */
  container: string;
  /** the pods the target's selector picks */
  pods: KubeObject[];
  /** the samples read (not kept: this works on a copy) */
  metrics: PodMetrics;
  now: number;
}

const NO_PODS = "no pods returned by selector while calculating replica count";
const NO_SAMPLES = "did not receive metrics for targeted pods (pods might be unready)";

function withoutPods(metrics: PodMetrics, ...sets: Set<string>[]): PodMetrics {
  const out = new Map(metrics);
  for (const s of sets) for (const name of s) out.delete(name);
  return out;
}

/** The count a target utilization (percent of requests) asks for (upstream GetResourceReplicas). */
export function replicasForUtilization(
  input: ResourceInput & { targetUtilization: number },
  opts: CalculatorOptions = DEFAULT_CALCULATOR,
): { replicas: number; utilization: number; rawAverage: number } {
  const { currentReplicas: current, pods, targetUtilization: target } = input;
  if (pods.length === 0) throw new Error(NO_PODS);
  const groups = groupPods(pods, input.metrics, input.resource, opts, input.now);
  const metrics = withoutPods(input.metrics, groups.ignored, groups.unready);
  if (metrics.size === 0) throw new Error(NO_SAMPLES);
  const requests = podRequests(pods, input.container, input.resource);
  const first = utilizationRatio(metrics, requests, target);
  const keep = { replicas: current, utilization: first.utilization, rawAverage: first.rawAverage };
  const ratio = first.ratio;
  const upWithUnready = groups.unready.size > 0 && ratio > 1;
  if (!upWithUnready && groups.missing.size === 0) {
    if (Math.abs(1 - ratio) <= opts.tolerance) return keep;
    return { ...keep, replicas: Math.ceil(ratio * groups.readyPodCount) };
  }
  if (groups.missing.size > 0) {
    if (ratio < 1) {
      // scaling down: a pod without a sample is taken to use all it requested (or the target, above 100%)
      const fallback = Math.max(100, target);
      for (const name of groups.missing)
        metrics.set(name, {
          value: Math.trunc(((requests.get(name) ?? 0) * fallback) / 100),
          timestamp: 0,
          windowMs: 0,
        });
    } else if (ratio > 1) {
      for (const name of groups.missing) metrics.set(name, { value: 0, timestamp: 0, windowMs: 0 });
    }
  }
  if (upWithUnready)
    for (const name of groups.unready) metrics.set(name, { value: 0, timestamp: 0, windowMs: 0 });
  const next = utilizationRatio(metrics, requests, target).ratio;
  if (Math.abs(1 - next) <= opts.tolerance || (ratio < 1 && next > 1) || (ratio > 1 && next < 1)) return keep;
  const replicas = Math.ceil(next * metrics.size);
  if ((next < 1 && replicas > current) || (next > 1 && replicas < current)) return keep;
  return { ...keep, replicas };
}

/** The count a target average value (milli-units per pod) asks for (upstream GetRawResourceReplicas). */
export function replicasForAverageValue(
  input: ResourceInput & { targetUsage: number },
  opts: CalculatorOptions = DEFAULT_CALCULATOR,
): { replicas: number; usage: number } {
  const { currentReplicas: current, pods, targetUsage: target } = input;
  if (pods.length === 0) throw new Error(NO_PODS);
  const groups = groupPods(pods, input.metrics, input.resource, opts, input.now);
  const metrics = withoutPods(input.metrics, groups.ignored, groups.unready);
  if (metrics.size === 0) throw new Error(NO_SAMPLES);
  const first = usageRatio(metrics, target);
  const keep = { replicas: current, usage: first.usage };
  const ratio = first.ratio;
  const upWithUnready = groups.unready.size > 0 && ratio > 1;
  if (!upWithUnready && groups.missing.size === 0) {
    if (Math.abs(1 - ratio) <= opts.tolerance) return keep;
    return { ...keep, replicas: Math.ceil(ratio * groups.readyPodCount) };
  }
  if (groups.missing.size > 0) {
    // scaling down: a pod without a sample is taken to use exactly the target; up: nothing
    const value = ratio < 1 ? target : ratio > 1 ? 0 : undefined;
    if (value !== undefined)
      for (const name of groups.missing) metrics.set(name, { value, timestamp: 0, windowMs: 0 });
  }
  if (upWithUnready)
    for (const name of groups.unready) metrics.set(name, { value: 0, timestamp: 0, windowMs: 0 });
  const next = usageRatio(metrics, target).ratio;
  if (Math.abs(1 - next) <= opts.tolerance || (ratio < 1 && next > 1) || (ratio > 1 && next < 1)) return keep;
  const replicas = Math.ceil(next * metrics.size);
  if ((next < 1 && replicas > current) || (next > 1 && replicas < current)) return keep;
  return { ...keep, replicas };
}
