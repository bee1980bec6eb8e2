// The scheduler's part of a pod's flow trace (api/trace.ts): step 5.1, from the moment the pod
// entered the queue to the decision, with the attempts, the nodes each Filter plugin turned
// away and why, and the chosen node with its score. The Binding's own steps (5.2, 5.3) are
// recorded by the apiserver with the pod's update. Spans go to the pods shard in one call per
// scheduling pass (TraceSink), after the pass's writes.
import { lookupGVR } from "../../api/registry";
import { type TraceAppend, type TraceSpan, tracingEnabled } from "../../api/trace";
import type { Env } from "../env";
import { Store } from "../store/client";
import type { QueuedPodInfo } from "./queue";
import type { ScheduleOutcome } from "./scheduler";

export interface SchedulingTrace {
  queuedAt: number;
  decidedAt: number;
  attempts: number;
  node?: string;
  score?: number;
  evaluatedNodes?: number;
  feasibleNodes?: number;
  /** Filter plugin -> the nodes it turned away, with its reasons */
  filtered?: Record<string, { nodes: string[]; reasons: string[] }>;
  message?: string;
  error?: boolean;
}

const MAX_NODES_LISTED = 20;

export function schedulingTrace(q: QueuedPodInfo, r: ScheduleOutcome): SchedulingTrace {
  const t: SchedulingTrace = {
    queuedAt: q.initialAttemptTimestamp || q.timestamp,
    decidedAt: Date.now(),
    attempts: q.attempts,
  };
  if ("node" in r) {
    t.node = r.node;
    t.score = r.score;
    t.evaluatedNodes = r.evaluatedNodes;
    t.feasibleNodes = r.feasibleNodes;
    return t;
  }
  if ("error" in r) {
    t.error = true;
    t.message = r.error;
    return t;
  }
  t.message = r.message;
  const filtered: NonNullable<SchedulingTrace["filtered"]> = {};
  const d = r.unschedulable.diagnosis;
  for (const [node, s] of d.nodeToStatus.map) {
    const f = (filtered[s.plugin || "unknown"] ??= { nodes: [], reasons: [] });
    if (f.nodes.length < MAX_NODES_LISTED) f.nodes.push(node);
    for (const reason of s.reasons) if (!f.reasons.includes(reason)) f.reasons.push(reason);
  }
  if (d.preFilterMsg) {
    const plugin = d.nodeToStatus.absent.plugin || [...d.unschedulablePlugins][0] || "PreFilter";
    filtered[plugin] = { nodes: ["(all)"], reasons: [d.preFilterMsg] };
  }
  t.filtered = filtered;
  return t;
}

/**
 * A failed attempt is recorded on attempts 1, 2, 4, 8, ...: a pod retried for hours keeps a
 * handful of spans, not one per retry (a trace is bounded).
 */
export function recordsAttempt(attempts: number): boolean {
  return attempts > 0 && (attempts & (attempts - 1)) === 0;
}

export function schedulingSpan(t: SchedulingTrace): TraceSpan {
  const detail: Record<string, unknown> = {
    attempts: t.attempts,
    queuedMs: Math.max(0, t.decidedAt - t.queuedAt),
  };
  if (t.node) {
    Object.assign(detail, {
      node: t.node,
      score: t.score,
      evaluatedNodes: t.evaluatedNodes,
      feasibleNodes: t.feasibleNodes,
    });
  }
  if (t.filtered) detail.filtered = t.filtered;
  const span: TraceSpan = {
    step: "5.1",
    name: "scheduling",
    component: "scheduler",
    start: t.queuedAt,
    end: t.decidedAt,
    detail,
  };
  if (!t.node) {
    span.state = t.error ? "failed" : "waiting";
    span.reason = `${t.error ? "SchedulerError" : "Unschedulable"}: ${t.message ?? ""}`;
  }
  return span;
}

/** Spans of many pods, sent to the pods shard in one call when flushed. */
export class TraceSink {
  private entries: TraceAppend[] = [];

  constructor(private readonly env: Env) {}

  get enabled(): boolean {
    return tracingEnabled(this.env);
  }

  add(pod: { metadata: { namespace?: string; name?: string; uid?: string } }, spans: TraceSpan[]): void {
    if (!this.enabled || !pod.metadata.uid) return;
    this.entries.push({
      namespace: pod.metadata.namespace ?? "",
      name: pod.metadata.name ?? "",
      uid: pod.metadata.uid,
      spans,
    });
  }

  async flush(): Promise<void> {
    if (this.entries.length === 0) return;
    const entries = this.entries;
    this.entries = [];
    try {
      await new Store(this.env, lookupGVR("", "v1", "pods")!).appendTraces(entries);
    } catch (e) {
      // a trace is never worth a failed pass
      console.warn(`trace: ${entries.length} scheduling spans not kept: ${(e as Error).message}`);
    }
  }
}
