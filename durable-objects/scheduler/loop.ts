// Glue for the Durable Object: routes watch events into the cache and the
// queue, runs scheduling cycles within a time budget, and returns what must
// be written (Bindings, pod status, events, victims to delete). No I/O here.
import type { KubeObject } from "../../api/types";
import {
  bindingFor,
  type EventOptions,
  failedSchedulingEvent,
  failedSchedulingStatus,
  preemptedEvent,
  scheduledEvent,
} from "./events";
import type { VolumeDecision } from "./plugins/volumebinding";
import { type Pod, podKey } from "./podinfo";
import { type QueuedPodInfo, type QueueOptions, SchedulingQueue } from "./queue";
import { Scheduler, type SchedulerOptions } from "./scheduler";
import { type SchedulingTrace, schedulingTrace } from "./trace";

export type SchedulingAction =
  | {
      kind: "bind";
      pod: Pod;
      key: string;
      nodeName: string;
      binding: KubeObject;
      event: KubeObject;
      /** claims to bind or provision, and wait for, before the Binding (VolumeBinding's PreBind) */
      volumes?: VolumeDecision;
      /** what the pod's flow trace records of this decision (trace.ts) */
      trace: SchedulingTrace;
    }
  | {
      kind: "unschedulable";
      pod: Pod;
      key: string;
      message: string;
      /** New pod status to write (null: unchanged, skip the write). */
      status: Record<string, unknown> | null;
      event: KubeObject;
      nominatedNodeName?: string;
      /** Pods to delete for preemption, each with its Preempted event. */
      victims: { pod: Pod; event: KubeObject }[];
      trace: SchedulingTrace;
    };

export type WatchType = "ADDED" | "MODIFIED" | "DELETED";

const TERMINAL = new Set(["Succeeded", "Failed"]);
const AFFECTED_BY_POD_ADD = new Set(["InterPodAffinity", "PodTopologySpread"]);

export interface LoopOptions extends SchedulerOptions, QueueOptions {
  events?: EventOptions;
}

export class SchedulingLoop {
  readonly scheduler: Scheduler;
  readonly queue: SchedulingQueue;
  private readonly schedulerName: string;
  private readonly eventOpts: EventOptions;
  /** Popped pods whose Binding is being written. */
  private binding = new Map<string, QueuedPodInfo>();

  constructor(opts: LoopOptions = {}) {
    this.scheduler = new Scheduler(opts);
    this.queue = new SchedulingQueue(opts);
    this.schedulerName = this.scheduler.framework.profile.schedulerName;
    this.eventOpts = opts.events ?? {};
  }

  private responsibleFor(pod: Pod): boolean {
    return (pod.spec?.schedulerName ?? "default-scheduler") === this.schedulerName;
  }

  onPod(type: WatchType, pod: Pod, now: number): void {
    const gone = type === "DELETED" || TERMINAL.has(pod.status?.phase);
    const assigned = !!pod.spec?.nodeName;
    const key = podKey(pod);
    if (assigned || gone) {
      this.queue.delete(key);
      if (gone) {
        if (this.scheduler.cache.podNode(key) !== undefined) {
          this.scheduler.cache.removePod(pod);
          this.queue.moveAllToActiveOrBackoff("AssignedPodDelete", now);
        }
        return;
      }
      const known = this.scheduler.cache.podNode(key) !== undefined;
      this.scheduler.cache.addPod(pod);
      if (!known) {
        // A new pod on a node can only help pods waiting on pod (anti-)affinity or spreading.
        this.queue.moveAllToActiveOrBackoff("AssignedPodAdd", now, (q) =>
          [...q.unschedulablePlugins].some((p) => AFFECTED_BY_POD_ADD.has(p)),
        );
      }
      return;
    }
    if (!this.responsibleFor(pod) || pod.metadata.deletionTimestamp) return;
    if (this.binding.has(key) || this.scheduler.cache.isAssumed(key)) return;
    if (type === "ADDED") this.queue.add(pod, now);
    else this.queue.update(pod, now);
  }

  onNode(type: WatchType, node: KubeObject, now: number): void {
    if (type === "DELETED") {
      this.scheduler.cache.removeNode(node.metadata.name ?? "");
      return;
    }
    if (type === "ADDED") this.scheduler.cache.addNode(node);
    else this.scheduler.cache.updateNode(node);
    this.queue.moveAllToActiveOrBackoff(type === "ADDED" ? "NodeAdd" : "NodeUpdate", now);
  }

  /** A claim, volume or class changed: pods waiting on their claims may fit now. */
  onStorage(now: number): void {
    this.queue.moveAllToActiveOrBackoff("StorageChange", now, (q) =>
      q.unschedulablePlugins.has("VolumeBinding"),
    );
  }

  onNamespace(type: WatchType, ns: KubeObject): void {
    if (type === "DELETED") this.scheduler.cache.removeNamespace(ns.metadata.name ?? "");
    else this.scheduler.cache.setNamespace(ns.metadata.name ?? "", ns.metadata.labels);
  }

  /** Schedules queued pods until the queue is empty, `maxPods` or `budgetMs` is reached. */
  runCycles(
    now: number,
    limits: { maxPods?: number; budgetMs?: number; clock?: () => number } = {},
  ): SchedulingAction[] {
    const clock = limits.clock ?? (() => Date.now());
    const start = clock();
    const actions: SchedulingAction[] = [];
    this.queue.flushUnschedulableLeftover(now);
    this.scheduler.cache.cleanupAssumedPods(now);
    for (let n = 0; n < (limits.maxPods ?? Number.POSITIVE_INFINITY); n++) {
      if (limits.budgetMs !== undefined && clock() - start >= limits.budgetMs) break;
      const q = this.queue.pop(now);
      if (!q) break;
      actions.push(this.scheduleQueued(q, now));
    }
    return actions;
  }

  private scheduleQueued(q: QueuedPodInfo, now: number): SchedulingAction {
    const pod = q.info.pod;
    const r = this.scheduler.scheduleOne(q.info);
    if ("node" in r) {
      this.binding.set(q.key, q);
      return {
        kind: "bind",
        pod,
        key: q.key,
        nodeName: r.node,
        binding: bindingFor(pod, r.node),
        volumes: this.scheduler.volumeDecision(q.key),
        event: scheduledEvent(pod, r.node, { ...this.eventOpts, now }),
        trace: schedulingTrace(q, r),
      };
    }
    const isError = "error" in r;
    const message = isError ? r.error : r.message;
    const trace = schedulingTrace(q, r);
    const plugins = isError ? [] : r.unschedulable.diagnosis.unschedulablePlugins;
    this.queue.requeueFailed(q, now, { error: isError, plugins });
    const nominated = !isError ? r.nominatedNodeName : undefined;
    const victims = (!isError && r.victims) || [];
    return {
      kind: "unschedulable",
      pod,
      key: q.key,
      message,
      status: failedSchedulingStatus(pod, message, now, {
        reason: isError ? "SchedulerError" : "Unschedulable",
        nominatedNodeName: nominated,
      }),
      event: failedSchedulingEvent(pod, message, { ...this.eventOpts, now }),
      nominatedNodeName: nominated,
      victims: victims.map((v) => ({
        pod: v.pod,
        event: preemptedEvent(v.pod, pod, nominated ?? "", { ...this.eventOpts, now }),
      })),
      trace,
    };
  }

  /** Report the outcome of a Binding write. A failure undoes the assumption and retries with backoff. */
  bindingResult(key: string, ok: boolean, now: number): void {
    const q = this.binding.get(key);
    this.binding.delete(key);
    this.scheduler.bindingDone(key, ok, now);
    if (ok) this.queue.done(key);
    else if (q) this.queue.requeueFailed(q, now, { error: true });
  }

  /** When the Durable Object should next run cycles (undefined: only on events). */
  nextWakeAt(now: number): number | undefined {
    return this.queue.nextWakeAt(now);
  }
}
