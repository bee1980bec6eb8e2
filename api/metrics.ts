// metrics.k8s.io/v1beta1 objects (NodeMetrics, PodMetrics) from the nodes' samples, in the
// shape metrics-server serves: usage as canonical quantities (CPU in the smallest decimal
// suffix that keeps it whole, e.g. "12345678n" or "250m"; memory in the largest power-of-1024
// suffix that divides it, e.g. "65536Ki"), timestamp as metav1.Time, window as a Go duration.
import { parseQuantity } from "./quantity";
import { rfc3339 } from "./time";
import type { KubeObject } from "./types";
import type { PodSample, Sample, Usage } from "./wire/metrics";

export const METRICS_GROUP = "metrics.k8s.io";
export const METRICS_API_VERSION = "metrics.k8s.io/v1beta1";

const DECIMAL_SUFFIXES: [number, string][] = [
  [-9, "n"],
  [-6, "u"],
  [-3, "m"],
  [0, ""],
  [3, "k"],
  [6, "M"],
  [9, "G"],
  [12, "T"],
];

/** A CPU figure in nanocores as Kubernetes writes the quantity (DecimalSI, scale -9). */
export function cpuQuantity(nanocores: number): string {
  let n = Math.max(0, Math.round(nanocores));
  if (n === 0) return "0";
  let i = 0;
  while (i < DECIMAL_SUFFIXES.length - 1 && n % 1000 === 0) {
    n /= 1000;
    i++;
  }
  return `${n}${DECIMAL_SUFFIXES[i][1]}`;
}

const BINARY_SUFFIXES = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];

/** A memory figure in bytes as Kubernetes writes the quantity (BinarySI). */
export function memoryQuantity(bytes: number): string {
  let n = Math.max(0, Math.round(bytes));
  // below 1024, or not a whole multiple of it, Go writes the plain number
  if (n < 1024 || n % 1024 !== 0) return String(n);
  let i = 0;
  while (i < BINARY_SUFFIXES.length - 1 && n % 1024 === 0 && n >= 1024) {
    n /= 1024;
    i++;
  }
  return `${n}${BINARY_SUFFIXES[i]}`;
}

/** A duration in ms as Go's time.Duration.String() writes it: "15s", "20.04s", "1m0.5s". */
export function goDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms));
  if (total === 0) return "0s";
  if (total < 1000) return `${total}ms`;
  const h = Math.floor(total / 3_600_000);
  const m = Math.floor((total % 3_600_000) / 60_000);
  const rest = total % 60_000;
  const whole = Math.floor(rest / 1000);
  const frac = rest % 1000;
  const s = frac ? `${whole}.${String(frac).padStart(3, "0").replace(/0+$/, "")}s` : `${whole}s`;
  if (h) return `${h}h${m}m${s}`;
  if (m) return `${m}m${s}`;
  return s;
}

export function usageOf(u: Usage): { cpu: string; memory: string } {
  return { cpu: cpuQuantity(u.cpu), memory: memoryQuantity(u.memory) };
}

/** A node's NodeMetrics; its labels are the Node's (as metrics-server copies them). */
export function nodeMetrics(node: KubeObject, s: Sample, now = Date.now()): KubeObject {
  const metadata: KubeObject["metadata"] = { name: node.metadata.name, creationTimestamp: rfc3339(now) };
  if (node.metadata.labels) metadata.labels = node.metadata.labels;
  return {
    kind: "NodeMetrics",
    apiVersion: METRICS_API_VERSION,
    metadata,
    timestamp: rfc3339(s.timestamp),
    window: goDuration(s.windowMs),
    usage: usageOf(s),
  } as KubeObject;
}

/** A pod's PodMetrics, one entry per container the node sampled. */
export function podMetrics(pod: KubeObject, s: PodSample, now = Date.now()): KubeObject {
  const metadata: KubeObject["metadata"] = {
    name: pod.metadata.name,
    namespace: pod.metadata.namespace,
    creationTimestamp: rfc3339(now),
  };
  if (pod.metadata.labels) metadata.labels = pod.metadata.labels;
  return {
    kind: "PodMetrics",
    apiVersion: METRICS_API_VERSION,
    metadata,
    timestamp: rfc3339(s.timestamp),
    window: goDuration(s.windowMs),
    containers: s.containers.map((c) => ({ name: c.name, usage: usageOf(c) })),
  } as KubeObject;
}

/** What cpuQuantity/memoryQuantity wrote, back as a whole number of 1/scale units (0 if not a quantity). */
function quantityValue(q: unknown, scale: number): number {
  return Math.round((parseQuantity(q) ?? 0) * scale);
}

/** A PodMetrics' usage summed over its containers (its table's cells). */
export function podUsageTotal(obj: KubeObject): { cpu: string; memory: string } {
  let cpu = 0;
  let memory = 0;
  for (const c of (obj as { containers?: { usage?: Record<string, string> }[] }).containers ?? []) {
    cpu += quantityValue(c.usage?.cpu, 1e9);
    memory += quantityValue(c.usage?.memory, 1);
  }
  return { cpu: cpuQuantity(cpu), memory: memoryQuantity(memory) };
}
