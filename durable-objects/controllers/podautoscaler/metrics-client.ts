// Where the HPA controller reads pod usage: the resource metrics API, as upstream's REST
// metrics client reads it (GET /apis/metrics.k8s.io/v1beta1/namespaces/<ns>/pods?labelSelector=
// <selector> -> PodMetricsList). The list comes through a small interface (tests hand in
// their own); turning it into samples per pod is here, with upstream's errors.
import { StatusError } from "../../../api/errors";
import { timeOf } from "../../../api/time";
import { milliOf, type PodMetrics } from "./replica-calculator";

/** What lists PodMetrics (metrics.k8s.io/v1beta1) of a namespace by label selector. */
export interface PodMetricsLister {
  list(namespace: string, labelSelector: string): Promise<PodMetricsList>;
}

export interface PodMetricsList {
  items?: {
    metadata?: { name?: string; namespace?: string };
    timestamp?: string;
    window?: string;
    containers?: { name?: string; usage?: Record<string, string> }[];
  }[];
}

/** The resource metrics API through the controllers' own API client. */
export function metricsApiLister(api: {
  request(method: string, path: string): Promise<any>;
}): PodMetricsLister {
  return {
    async list(namespace, labelSelector) {
      const ns = encodeURIComponent(namespace);
      const q = labelSelector ? `?labelSelector=${encodeURIComponent(labelSelector)}` : "";
      try {
        return await api.request("GET", `/apis/metrics.k8s.io/v1beta1/namespaces/${ns}/pods${q}`);
      } catch (e) {
        // no metrics API served: what client-go says of it
        if (e instanceof StatusError && e.code === 404)
          throw new Error("the server could not find the requested resource (get pods.metrics.k8s.io)");
        throw e;
      }
    },
  };
}

const GO_DURATION_UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** A Go duration ("1m0s", "10.5s", "250ms") in milliseconds; 0 when not one. */
export function goDurationMs(text: string | undefined): number {
  if (!text) return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let at = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    total += Number(m[1]) * GO_DURATION_UNITS[m[2]]!;
    at = re.lastIndex;
  }
  return at === text.length ? total : 0;
}

/**
 * Samples of one resource per pod (milli-units), with the first item's timestamp: the sum over
 * the pod's containers (a pod missing the resource in any container has no sample), or one
 * container's usage. Errors as upstream's metrics client words them.
 */
export async function resourceMetrics(
  lister: PodMetricsLister,
  namespace: string,
  labelSelector: string,
  resource: string,
  container: string,
): Promise<{ metrics: PodMetrics; timestamp: number }> {
  let list: PodMetricsList;
  try {
    list = await lister.list(namespace, labelSelector);
  } catch (e) {
    throw new Error(
      `unable to fetch metrics from resource metrics API: ${e instanceof Error ? e.message : e}`,
    );
  }
  const items = list?.items ?? [];
  if (items.length === 0) throw new Error("no metrics returned from resource metrics API");
  const metrics: PodMetrics = new Map();
  for (const item of items) {
    const name = item.metadata?.name;
    if (!name) continue;
    const timestamp = timeOf(item.timestamp) ?? 0;
    const windowMs = goDurationMs(item.window);
    const containers = item.containers ?? [];
    if (container) {
      const c = containers.find((x) => x.name === container);
      const v = milliOf(c?.usage?.[resource]);
      if (v !== undefined) metrics.set(name, { value: v, timestamp, windowMs });
      continue;
    }
    let sum = 0;
    let missing = containers.length === 0;
    for (const c of containers) {
      const v = milliOf(c.usage?.[resource]);
      if (v === undefined) {
        missing = true;
        break;
      }
      sum += v;
    }
    if (!missing) metrics.set(name, { value: sum, timestamp, windowMs });
  }
  return { metrics, timestamp: timeOf(items[0]!.timestamp) ?? 0 };
}
