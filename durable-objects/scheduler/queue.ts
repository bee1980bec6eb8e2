// The scheduling queue (after kube-scheduler's PriorityQueue): activeQ in
// priority order, backoffQ for pods waiting out their exponential backoff,
// and unschedulablePods parked until a cluster event or a timeout.
import { Heap } from "./heap";
import { newPodInfo, type Pod, type PodInfo, podKey } from "./podinfo";

export interface QueuedPodInfo {
  info: PodInfo;
  key: string;
  /** When the pod last entered the queue (ms). */
  timestamp: number;
  initialAttemptTimestamp: number;
  attempts: number;
  /** Plugins that rejected the pod in its last attempt. */
  unschedulablePlugins: Set<string>;
  /** spec.schedulingGates is not empty: held until an update removes them. */
  gated: boolean;
  seq: number;
  /** Scheduling cycle in which the pod was last popped. */
  cycle: number;
}

export interface QueueOptions {
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Unschedulable pods are retried after this long even without an event. */
  maxUnschedulableMs?: number;
}

export type ClusterEvent =
  | "NodeAdd"
  | "NodeUpdate"
  | "NodeTaintChange"
  | "AssignedPodAdd"
  | "AssignedPodUpdate"
  | "AssignedPodDelete"
  | "UnschedulableTimeout"
  | "StorageChange"
  | "ForceActivate";

function creationMs(p: PodInfo): number {
  const t = p.pod.metadata.creationTimestamp;
  return t ? Date.parse(t) : 0;
}

export class SchedulingQueue {
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly maxUnschedulableMs: number;
  private active: Heap<QueuedPodInfo>;
  private backoff: Heap<QueuedPodInfo>;
  private unschedulable = new Map<string, QueuedPodInfo>();
  /** Pods popped and not yet reported back. */
  private inFlight = new Map<string, QueuedPodInfo>();
  private seq = 0;
  private schedulingCycle = 0;
  private moveRequestCycle = -1;

  constructor(opts: QueueOptions = {}) {
    this.initialBackoffMs = opts.initialBackoffMs ?? 1000;
    this.maxBackoffMs = opts.maxBackoffMs ?? 10000;
    this.maxUnschedulableMs = opts.maxUnschedulableMs ?? 5 * 60 * 1000;
    this.active = new Heap(
      (q) => q.key,
      (a, b) => {
        if (a.info.priority !== b.info.priority) return a.info.priority > b.info.priority;
        const ca = creationMs(a.info);
        const cb = creationMs(b.info);
        if (ca !== cb) return ca < cb;
        return a.seq < b.seq;
      },
    );
    this.backoff = new Heap(
      (q) => q.key,
      (a, b) => this.backoffExpiry(a) < this.backoffExpiry(b),
    );
  }

  /** initial * 2^(attempts-1), capped at max. */
  backoffDuration(attempts: number): number {
    let d = this.initialBackoffMs;
    for (let i = 1; i < attempts; i++) {
      d *= 2;
      if (d >= this.maxBackoffMs) return this.maxBackoffMs;
    }
    return Math.min(d, this.maxBackoffMs);
  }

  backoffExpiry(q: QueuedPodInfo): number {
    return q.timestamp + (q.attempts === 0 ? 0 : this.backoffDuration(q.attempts));
  }

  private isBackingOff(q: QueuedPodInfo, now: number): boolean {
    return this.backoffExpiry(q) > now;
  }

  private has(key: string): boolean {
    return this.active.has(key) || this.backoff.has(key) || this.unschedulable.has(key);
  }

  private remove(key: string): QueuedPodInfo | undefined {
    const q = this.active.delete(key) ?? this.backoff.delete(key);
    if (q) return q;
    const u = this.unschedulable.get(key);
    this.unschedulable.delete(key);
    return u;
  }

  /** A new pending pod. */
  add(pod: Pod, now: number): void {
    const info = newPodInfo(pod);
    const prev = this.remove(info.key);
    const q: QueuedPodInfo = prev
      ? { ...prev, info, timestamp: now }
      : {
          info,
          key: info.key,
          timestamp: now,
          initialAttemptTimestamp: now,
          attempts: 0,
          unschedulablePlugins: new Set(),
          gated: false,
          seq: this.seq++,
          cycle: 0,
        };
    q.gated = (pod.spec?.schedulingGates ?? []).length > 0;
    if (q.gated) this.unschedulable.set(q.key, q);
    else this.active.push(q);
  }

  /** The pending pod changed: refresh it; a parked pod gets another chance. */
  update(pod: Pod, now: number): void {
    const key = podKey(pod);
    if (this.inFlight.has(key)) {
      this.inFlight.get(key)!.info = newPodInfo(pod);
      return;
    }
    const prev = this.remove(key);
    if (!prev) {
      this.add(pod, now);
      return;
    }
    const q: QueuedPodInfo = { ...prev, info: newPodInfo(pod) };
    q.gated = (pod.spec?.schedulingGates ?? []).length > 0;
    if (q.gated) this.unschedulable.set(key, q);
    else if (this.isBackingOff(q, now)) this.backoff.push(q);
    else this.active.push(q);
  }

  /** The pod was deleted or got bound by someone else. */
  delete(pod: Pod | string): void {
    const key = typeof pod === "string" ? pod : podKey(pod);
    this.remove(key);
    this.inFlight.delete(key);
  }

  /** The next pod to schedule, or undefined; backoff-completed pods are flushed first. */
  pop(now: number): QueuedPodInfo | undefined {
    this.flushBackoffCompleted(now);
    const q = this.active.pop();
    if (!q) return undefined;
    q.attempts++;
    q.cycle = ++this.schedulingCycle;
    this.inFlight.set(q.key, q);
    return q;
  }

  /** The popped pod was bound (or assumed): it leaves the queue. */
  done(key: string): void {
    this.inFlight.delete(key);
  }

  /**
   * A scheduling attempt failed. Errors, and failures that raced with a
   * cluster event, go to backoffQ; other failures park in unschedulablePods.
   */
  requeueFailed(
    q: QueuedPodInfo,
    now: number,
    opts: { error?: boolean; plugins?: Iterable<string> } = {},
  ): void {
    this.inFlight.delete(q.key);
    if (this.has(q.key)) return;
    q.timestamp = now;
    q.unschedulablePlugins = new Set(opts.plugins ?? []);
    if (opts.error || this.moveRequestCycle >= q.cycle) this.backoff.push(q);
    else this.unschedulable.set(q.key, q);
  }

  /** A cluster event that may make parked pods schedulable: move them to activeQ or backoffQ. */
  moveAllToActiveOrBackoff(_event: ClusterEvent, now: number, only?: (q: QueuedPodInfo) => boolean): number {
    let moved = 0;
    for (const [key, q] of this.unschedulable) {
      if (q.gated || (only && !only(q))) continue;
      this.unschedulable.delete(key);
      if (this.isBackingOff(q, now)) this.backoff.push(q);
      else this.active.push(q);
      moved++;
    }
    this.moveRequestCycle = this.schedulingCycle;
    return moved;
  }

  flushBackoffCompleted(now: number): number {
    let n = 0;
    for (;;) {
      const top = this.backoff.peek();
      if (!top || this.isBackingOff(top, now)) break;
      this.backoff.pop();
      this.active.push(top);
      n++;
    }
    return n;
  }

  /** Pods parked longer than maxUnschedulableMs go back to be retried. */
  flushUnschedulableLeftover(now: number): number {
    let n = 0;
    for (const [key, q] of this.unschedulable) {
      if (q.gated || now - q.timestamp < this.maxUnschedulableMs) continue;
      this.unschedulable.delete(key);
      if (this.isBackingOff(q, now)) this.backoff.push(q);
      else this.active.push(q);
      n++;
    }
    return n;
  }

  /** When the queue next needs attention (for the Durable Object alarm). */
  nextWakeAt(now: number): number | undefined {
    if (this.active.size > 0) return now;
    let t: number | undefined;
    const top = this.backoff.peek();
    if (top) t = this.backoffExpiry(top);
    for (const q of this.unschedulable.values()) {
      if (q.gated) continue;
      const due = q.timestamp + this.maxUnschedulableMs;
      if (t === undefined || due < t) t = due;
    }
    return t;
  }

  lengths(): { active: number; backoff: number; unschedulable: number; inFlight: number } {
    return {
      active: this.active.size,
      backoff: this.backoff.size,
      unschedulable: this.unschedulable.size,
      inFlight: this.inFlight.size,
    };
  }

  where(key: string): "active" | "backoff" | "unschedulable" | "inFlight" | undefined {
    if (this.active.has(key)) return "active";
    if (this.backoff.has(key)) return "backoff";
    if (this.unschedulable.has(key)) return "unschedulable";
    if (this.inFlight.has(key)) return "inFlight";
    return undefined;
  }
}
