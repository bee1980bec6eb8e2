// The simulated nodes' resource-usage reports (api/wire/metrics.ts): every node posts one
// every `intervalSeconds` (phase-spread over the period), with figures made up from its
// running pods. A pod uses half of each container's CPU request and 60% of its memory request
// (10m and 16Mi for a container that requests none), unless the pod's annotations say what
// the whole pod uses:
//
//   sim.edgeplane.dev/cpu-usage: "250m"      sim.edgeplane.dev/memory-usage: "64Mi"
//
// split across its containers in proportion to their requests (evenly when none requests
// that resource). A change of the annotations shows in the next report. A node uses what its
// pods use plus a base of 100m and 256Mi.
import { parseQuantity } from "../../api/quantity";
import type { ContainerUsage, MetricsReport, PodSample, Usage } from "../../api/wire/metrics";
import { METRICS_REPORT_PREFIX } from "../../api/wire/metrics";
import type { Pod } from "../lib/kube-types";
import type { ApiClient } from "./client";

export const CPU_USAGE_ANNOTATION = "sim.edgeplane.dev/cpu-usage";
export const MEMORY_USAGE_ANNOTATION = "sim.edgeplane.dev/memory-usage";

const NANO = 1e9;
const DEFAULT_CPU = 0.01 * NANO;
const DEFAULT_MEMORY = 16 * 1024 * 1024;
const NODE_BASE: Usage = { cpu: 0.1 * NANO, memory: 256 * 1024 * 1024 };
const TICK_MS = 250;

/** A quantity's value (cores or bytes), or undefined when absent or not a quantity. */
function quantity(v: unknown): number | undefined {
  const n = parseQuantity(v);
  return n !== undefined && n >= 0 ? n : undefined;
}

/** Shares of `total` in proportion to `weights` (evenly when they are all zero). */
function split(total: number, weights: number[]): number[] {
  const sum = weights.reduce((a, b) => a + b, 0);
  return weights.map((w) => (sum > 0 ? (total * w) / sum : total / weights.length));
}

/** What each of the pod's (app) containers uses, by the rules above. */
export function simulatedPodUsage(pod: Pod): ContainerUsage[] {
  const containers = pod.spec?.containers ?? [];
  if (!containers.length) return [];
  const req = (c: (typeof containers)[number], r: "cpu" | "memory") =>
    quantity((c.resources?.requests as Record<string, unknown> | undefined)?.[r]) ?? 0;
  const cpuReq = containers.map((c) => req(c, "cpu"));
  const memReq = containers.map((c) => req(c, "memory"));
  const ann = pod.metadata.annotations ?? {};
  const cpuTotal = quantity(ann[CPU_USAGE_ANNOTATION]);
  const memTotal = quantity(ann[MEMORY_USAGE_ANNOTATION]);
  const cpu =
    cpuTotal !== undefined
      ? split(cpuTotal * NANO, cpuReq)
      : cpuReq.map((r) => (r > 0 ? r * 0.5 * NANO : DEFAULT_CPU));
  const memory =
    memTotal !== undefined ? split(memTotal, memReq) : memReq.map((r) => (r > 0 ? r * 0.6 : DEFAULT_MEMORY));
  return containers.map((c, i) => ({
    name: c.name,
    cpu: Math.round(cpu[i]),
    memory: Math.round(memory[i]),
  }));
}

/** A simulated node's report over its running pods, for the window ending now. */
export function simulatedReport(pods: Pod[], intervalSeconds: number, now = Date.now()): MetricsReport {
  const windowMs = intervalSeconds * 1000;
  const samples: PodSample[] = pods.map((p) => ({
    namespace: p.metadata.namespace,
    name: p.metadata.name,
    uid: p.metadata.uid,
    timestamp: now,
    windowMs,
    containers: simulatedPodUsage(p),
  }));
  const node = { ...NODE_BASE, timestamp: now, windowMs };
  for (const s of samples)
    for (const c of s.containers) {
      node.cpu += c.cpu;
      node.memory += c.memory;
    }
  return { intervalSeconds, node, pods: samples };
}

export interface SimMetricsOptions {
  intervalSeconds: number;
  /** the nodes reporting now (alive ones) */
  nodes: () => string[];
  /** a node's running pods */
  runningPods: (node: string) => Pod[];
  log: (msg: string) => void;
}

/** Posts each simulated node's report once a period, each node at its own phase. */
export class SimMetricsReporter {
  private readonly due = new Map<string, number>();
  private readonly busy = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private failuresLogged = 0;

  constructor(
    private readonly client: ApiClient,
    private readonly opts: SimMetricsOptions,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => this.tick(), TICK_MS);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private tick(): void {
    const now = Date.now();
    const period = this.opts.intervalSeconds * 1000;
    for (const node of this.opts.nodes()) {
      const due = this.due.get(node);
      if (due === undefined) {
        // the first report soon (within a second), then one per period at that phase
        this.due.set(node, now + Math.random() * Math.min(period, 1000));
        continue;
      }
      if (now < due || this.busy.has(node)) continue;
      this.due.set(node, due + period > now ? due + period : now + period);
      this.busy.add(node);
      void this.post(node).finally(() => this.busy.delete(node));
    }
  }

  private async post(node: string): Promise<void> {
    const report = simulatedReport(this.opts.runningPods(node), this.opts.intervalSeconds);
    try {
      const r = await this.client.request("POST", `${METRICS_REPORT_PREFIX}${node}`, report);
      if (r.status !== 200 && this.failuresLogged++ < 5)
        this.opts.log(`metrics report of ${node}: ${r.status} ${r.json?.message ?? ""}`);
    } catch (e) {
      if (this.failuresLogged++ < 5) this.opts.log(`metrics report of ${node}: ${(e as Error).message}`);
    }
  }
}
