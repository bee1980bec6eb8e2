// The node's resource-usage reports (api/wire/metrics.ts), from what the kubelet reads for
// metrics-server: each running container's cumulative CPU and working set from CRI
// (ListContainerStats), and the machine's from /proc (CPU time off /proc/stat; working set as
// memory in use less inactive file pages, /proc/meminfo). CPU is the rate between this
// sample and the last one, so a container shows from its second sample on (or its first,
// when the runtime gives a rate of its own, as containerd does).
import { readFileSync } from "node:fs";
import { cpus } from "node:os";
import type { ContainerUsage, MetricsReport, PodSample, Sample } from "../../api/wire/metrics";
import type { CriClient } from "../cri/client";
import type { ContainerStats } from "../cri/types";
import {
  CONTAINER_NAME_LABEL,
  NODE_LABEL,
  POD_NAME_LABEL,
  POD_NAMESPACE_LABEL,
  POD_UID_LABEL,
} from "./runtime-cache";

interface CpuPoint {
  /** ns since the epoch */
  at: number;
  /** core-nanoseconds */
  used: number;
}

/** CPU time of the whole machine (/proc/stat's first line), ns of busy time and total time. */
export function machineCpu(text = readFileSync("/proc/stat", "utf8")): { busy: number; total: number } {
  const line = text.split("\n", 1)[0] ?? "";
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is inside user already)
  const total = v.slice(0, 8).reduce((a, b) => a + (b || 0), 0);
  const idle = (v[3] || 0) + (v[4] || 0);
  // USER_HZ is 100 on Linux: one tick is 10 ms
  return { busy: (total - idle) * 1e7, total: total * 1e7 };
}

/** The machine's working set: MemTotal - MemFree - Inactive(file), bytes. */
export function machineWorkingSet(text = readFileSync("/proc/meminfo", "utf8")): number {
  const kb = (key: string) =>
    Number(new RegExp(`^${key.replace(/[()]/g, "\\$&")}:\\s+(\\d+)`, "m").exec(text)?.[1] ?? 0);
  return Math.max(0, (kb("MemTotal") - kb("MemFree") - kb("Inactive(file)")) * 1024);
}

export class UsageCollector {
  private readonly containers = new Map<string, CpuPoint>();
  private node?: { at: number; busy: number; total: number };
  private readonly cores = cpus().length;

  constructor(
    private readonly cri: CriClient,
    private readonly nodeName: string,
    private readonly intervalSeconds: number,
  ) {}

  /** Samples everything now; the report holds what has a rate (undefined for the first call). */
  async collect(): Promise<MetricsReport | undefined> {
    const selector = { [NODE_LABEL]: this.nodeName };
    const [running, stats] = await Promise.all([
      this.cri.listContainers({ state: { state: "CONTAINER_RUNNING" }, label_selector: selector }),
      this.cri.listContainerStats({ label_selector: selector }),
    ]);
    const now = Date.now();
    const node = this.nodeSample(now);
    const live = new Set(running.map((c) => c.id));
    const pods = new Map<string, PodSample & { complete: boolean }>();
    const seen = new Set<string>();
    for (const s of stats) {
      const id = s.attributes?.id ?? "";
      if (!live.has(id)) continue;
      seen.add(id);
      const labels = s.attributes?.labels ?? {};
      const uid = labels[POD_UID_LABEL];
      if (!uid) continue;
      let pod = pods.get(uid);
      if (!pod) {
        pod = {
          namespace: labels[POD_NAMESPACE_LABEL] ?? "",
          name: labels[POD_NAME_LABEL] ?? "",
          uid,
          timestamp: 0,
          windowMs: Number.POSITIVE_INFINITY,
          containers: [],
          complete: true,
        };
        pods.set(uid, pod);
      }
      const usage = this.containerUsage(id, s);
      if (!usage) {
        pod.complete = false;
        continue;
      }
      pod.containers.push({
        name: labels[CONTAINER_NAME_LABEL] ?? s.attributes?.metadata?.name ?? "",
        ...usage.use,
      });
      pod.timestamp = Math.max(pod.timestamp, usage.timestamp);
      pod.windowMs = Math.min(pod.windowMs, usage.windowMs);
    }
    for (const id of this.containers.keys()) if (!seen.has(id)) this.containers.delete(id);
    if (!node) return undefined;
    // as metrics-server, a pod shows only when every one of its running containers does
    const samples: PodSample[] = [];
    for (const { complete, ...p } of pods.values())
      if (complete && p.containers.length && p.namespace && p.name) samples.push(p);
    return { intervalSeconds: this.intervalSeconds, node, pods: samples };
  }

  private containerUsage(
    id: string,
    s: ContainerStats,
  ): { use: Omit<ContainerUsage, "name">; timestamp: number; windowMs: number } | undefined {
    const at = s.cpu?.timestamp ?? 0;
    const used = s.cpu?.usage_core_nano_seconds?.value;
    const memory = s.memory?.working_set_bytes?.value ?? 0;
    if (!at || used === undefined) return undefined;
    const prev = this.containers.get(id);
    this.containers.set(id, { at, used });
    if (prev && at > prev.at && used >= prev.used) {
      const cpu = ((used - prev.used) / (at - prev.at)) * 1e9;
      return { use: { cpu: Math.round(cpu), memory }, timestamp: at / 1e6, windowMs: (at - prev.at) / 1e6 };
    }
    // the runtime's own rate over its last window (containerd keeps one per container)
    const rate = s.cpu?.usage_nano_cores?.value;
    if (!prev && rate)
      return { use: { cpu: rate, memory }, timestamp: at / 1e6, windowMs: this.intervalSeconds * 1000 };
    return undefined;
  }

  private nodeSample(now: number): Sample | undefined {
    let cpu: { busy: number; total: number };
    let memory: number;
    try {
      cpu = machineCpu();
      memory = machineWorkingSet();
    } catch {
      return undefined;
    }
    const prev = this.node;
    this.node = { at: now, ...cpu };
    if (!prev || cpu.total <= prev.total) return undefined;
    const cores = ((cpu.busy - prev.busy) / (cpu.total - prev.total)) * this.cores;
    return { cpu: Math.round(cores * 1e9), memory, timestamp: now, windowMs: now - prev.at };
  }
}
