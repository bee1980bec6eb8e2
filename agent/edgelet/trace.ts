// The node agent's part of a pod's flow trace (api/trace.ts): FLOW.md steps 6-9 of the pod's
// first start, from the moment its worker saw it to Ready, then one span per container restart
// (9.3 `start <c> (restart N)`, also after Ready). Stages are recorded one after the other (each
// from the end of the previous one), so they never overlap; a failure is recorded once per
// reason. The spans ride up on the status manager's next pods/status write (status-manager.ts),
// in TRACE_SPANS_HEADER: no request of their own.
import { restartSpanName, type TraceSpan } from "../../api/trace";

/** Spans a pod keeps before they are sent (a worker that cannot report drops the oldest; the
 * trace then says how many restarts it lacks: api/trace.ts noteDroppedRestarts). */
const MAX_PENDING = 64;

export class PodTracer {
  private pending: TraceSpan[] = [];
  /** the end of the last stage recorded: the next one starts there */
  private cursor: number;
  private readonly once = new Set<string>();
  /** Ready was recorded (or the pod ran before this agent saw it): only restarts are traced */
  finished: boolean;

  constructor(seenAt: number, finished = false) {
    this.cursor = seenAt;
    this.finished = finished;
  }

  /**
   * A container restart (9.3), from the end of its previous run (`since`, ms; not before the
   * last stage recorded) to now, when the new run has started; recorded after Ready too.
   * `detail` says why: the previous run's exit, the back-off waited.
   */
  restart(
    container: string,
    restart: number,
    since: number | undefined,
    detail: Record<string, unknown>,
  ): void {
    const now = Math.max(Date.now(), this.cursor);
    const start = Math.min(now, Math.max(since ?? this.cursor, this.cursor));
    this.cursor = now;
    this.add({
      step: "9.3",
      name: restartSpanName(container, restart),
      component: "edgelet",
      start,
      end: now,
      detail: { container, restart, ...detail },
    });
  }

  /** A stage from the end of the previous one to now. */
  stage(step: string, name: string, detail?: Record<string, unknown>): void {
    this.push(step, name, detail);
  }

  /** A stage that failed or waits, recorded once per (stage, reason). */
  failed(
    step: string,
    name: string,
    reason: string,
    detail?: Record<string, unknown>,
    state: "failed" | "waiting" = "failed",
  ): void {
    const key = `${step} ${name} ${reason.split(":")[0]}`;
    if (this.once.has(key)) return;
    this.once.add(key);
    this.push(step, name, detail, state, reason);
  }

  /** A stage recorded only the first time it is reached (a sync runs many times). */
  first(key: string, step: string, name: string, detail?: Record<string, unknown>): void {
    if (this.once.has(key)) return;
    this.once.add(key);
    this.push(step, name, detail);
  }

  /** A zero-length mark now. */
  mark(step: string, name: string, detail?: Record<string, unknown>): void {
    if (this.finished) return;
    const now = Math.max(Date.now(), this.cursor);
    this.cursor = now;
    this.add({ step, name, component: "edgelet", start: now, end: now, detail });
  }

  has(key: string): boolean {
    return this.once.has(key);
  }

  private push(
    step: string,
    name: string,
    detail?: Record<string, unknown>,
    state?: "failed" | "waiting",
    reason?: string,
  ): void {
    if (this.finished) return;
    const now = Math.max(Date.now(), this.cursor);
    const span: TraceSpan = { step, name, component: "edgelet", start: this.cursor, end: now };
    if (detail) span.detail = detail;
    if (state) span.state = state;
    if (reason) span.reason = reason;
    this.cursor = now;
    this.add(span);
  }

  private add(span: TraceSpan): void {
    this.pending.push(span);
    if (this.pending.length > MAX_PENDING) this.pending.shift();
  }

  /** The spans not sent yet, handed over (the status manager puts them back if its write fails). */
  take(): TraceSpan[] {
    const out = this.pending;
    this.pending = [];
    return out;
  }
}
