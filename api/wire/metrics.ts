// The resource-usage report a node agent sends the control plane (the metrics API's source,
// as the kubelet's summary is metrics-server's), shared by the agents (agent/edgelet,
// agent/simulated) and the Worker that takes it (workers/handlers/metrics-report.ts).
//
//   POST /edgeplane/metrics/<node>   body: MetricsReport (JSON)
//
// The node's own credential may post only to its own path (the Node authorizer); the pods in
// the report must be bound to that node (else 403 Forbidden). Figures are already rates over
// the window, as metrics-server serves them: CPU in nanocores (usage over the window), memory
// as the working set in bytes, at the end of the window.

export const METRICS_REPORT_PREFIX = "/edgeplane/metrics/";

/** A report larger than this is refused (413): 110 pods of many containers fit many times over. */
export const METRICS_REPORT_MAX_BYTES = 1 << 20;

export interface Usage {
  /** CPU used over the window, nanocores (1e9 = one core) */
  cpu: number;
  /** working set at the end of the window, bytes */
  memory: number;
}

export interface Sample extends Usage {
  /** the end of the window, ms since the epoch */
  timestamp: number;
  /** the window's length, ms */
  windowMs: number;
}

export interface ContainerUsage extends Usage {
  name: string;
}

export interface PodSample {
  namespace: string;
  name: string;
  uid: string;
  timestamp: number;
  windowMs: number;
  containers: ContainerUsage[];
}

export interface MetricsReport {
  /** how often the node reports, seconds: its samples are dropped after three periods unrenewed */
  intervalSeconds: number;
  node: Sample;
  pods: PodSample[];
}

const num = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;
const str = (v: unknown): v is string => typeof v === "string" && v.length > 0 && v.length <= 253;

/** The report in `body`, or why it is not one (for a 400). */
export function parseMetricsReport(body: unknown): MetricsReport | string {
  const b = body as Partial<MetricsReport> | undefined;
  if (!b || typeof b !== "object") return "a metrics report must be a JSON object";
  if (!num(b.intervalSeconds) || b.intervalSeconds < 1 || b.intervalSeconds > 3600)
    return "intervalSeconds: must be a number of seconds from 1 to 3600";
  const n = b.node as Partial<Sample> | undefined;
  if (!n || !num(n.cpu) || !num(n.memory) || !num(n.timestamp) || !num(n.windowMs))
    return "node: must hold cpu, memory, timestamp and windowMs as non-negative numbers";
  if (!Array.isArray(b.pods)) return "pods: must be a list";
  for (const [i, p] of b.pods.entries()) {
    if (!p || typeof p !== "object") return `pods[${i}]: must be an object`;
    if (!str(p.namespace) || !str(p.name) || !str(p.uid))
      return `pods[${i}]: namespace, name and uid are required`;
    if (!num(p.timestamp) || !num(p.windowMs)) return `pods[${i}]: timestamp and windowMs are required`;
    if (!Array.isArray(p.containers)) return `pods[${i}].containers: must be a list`;
    for (const [j, c] of p.containers.entries())
      if (!c || !str(c.name) || !num(c.cpu) || !num(c.memory))
        return `pods[${i}].containers[${j}]: name, cpu and memory are required`;
  }
  return b as MetricsReport;
}
