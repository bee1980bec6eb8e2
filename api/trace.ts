// A pod's flow trace: spans named by FLOW.md's step numbers, recorded by the apiserver, the
// controllers, the scheduler and the node agent, kept beside the pod in its store shard and
// read back as `trace.edgeplane.dev/v1alpha1` podtraces. Pure: the Worker, the Durable Objects
// and the agent all import it (the agent sends its spans in TRACE_SPANS_HEADER).

/** One recorded stage. Times are ms since the epoch (fractions allowed). */
export interface TraceSpan {
  /** FLOW.md's step number, e.g. "2.1" */
  step: string;
  name: string;
  component: string;
  start: number;
  /** absent while the stage is still waiting */
  end?: number;
  /** "done" when absent */
  state?: "done" | "failed" | "waiting";
  reason?: string;
  detail?: Record<string, unknown>;
}

/** The spans of one pod sent in one write: which pod (the shard drops spans of a gone uid). */
export interface TraceAppend {
  namespace: string;
  name: string;
  uid: string;
  spans: TraceSpan[];
  /** the control plane's own spans only: open ones end, and ones starting at 0 happen, when the write is staged */
  closeAtStore?: boolean;
}

/** The agent's spans, JSON of TraceSpan[], on its pods/status writes. */
export const TRACE_SPANS_HEADER = "x-edgeplane-trace-spans";
/** A controller's reaction, JSON of ControllerCause, on the pod creates it makes. */
export const TRACE_CAUSE_HEADER = "x-edgeplane-trace-cause";

/** What a controller tells the apiserver about the create it sends. */
export interface ControllerCause {
  controller: string;
  owner: { kind: string; name: string; uid?: string };
  /** when the controller's sync that made the pod started (ms) */
  since: number;
}

/** Bounds: spans kept per pod, and bytes of JSON per span (larger details are cut). */
export const MAX_SPANS_PER_POD = 96;
export const MAX_SPAN_BYTES = 2048;
/** Bounds on a header's spans, so a node cannot grow a pod's trace without end. */
export const MAX_HEADER_SPANS = 48;

/**
 * Container restarts a pod's trace keeps, the newest: each restart is one span (step 9.3,
 * `start <container> (restart N)`, detail.restart = N) in a window of its own, so a pod that
 * crash-loops for a day neither fills its trace nor loses its latest restarts. The first start's
 * spans and everything else share the rest of MAX_SPANS_PER_POD.
 */
export const MAX_RESTART_SPANS = 10;

/** The name of a restart's span: the container and which restart it is (its restartCount). */
export function restartSpanName(container: string, restart: number): string {
  return `start ${container} (restart ${restart})`;
}

/** Whether a span is one of a container restart (kept in the restarts' window). */
export function isRestartSpan(s: TraceSpan): boolean {
  return s.step === "9.3" && typeof s.detail?.restart === "number";
}

/**
 * Says on each container's oldest kept restart how many of its earlier restarts the trace does
 * not hold (`detail.earlierRestartsDropped`): restarts are numbered, so a first kept restart N
 * means N - 1 went before it (dropped by the window, or never traced). Returns the spans, those
 * it changed copied.
 */
export function noteDroppedRestarts(spans: TraceSpan[]): TraceSpan[] {
  const oldest = new Map<string, number>();
  spans.forEach((s, i) => {
    if (!isRestartSpan(s)) return;
    const c = String(s.detail?.container ?? s.name);
    const j = oldest.get(c);
    if (j === undefined || (spans[j].detail?.restart as number) > (s.detail?.restart as number))
      oldest.set(c, i);
  });
  if (oldest.size === 0) return spans;
  const out = [...spans];
  for (const i of oldest.values()) {
    const dropped = (spans[i].detail?.restart as number) - 1;
    if (dropped > 0)
      out[i] = { ...spans[i], detail: { ...spans[i].detail, earlierRestartsDropped: dropped } };
  }
  return out;
}

/** Whether tracing is on for these Worker variables (EDGEPLANE_TRACE=off switches it off). */
export function tracingEnabled(env: unknown): boolean {
  const v = (env as { EDGEPLANE_TRACE?: string } | undefined)?.EDGEPLANE_TRACE;
  return !(v && /^(off|false|0|no)$/i.test(v.trim()));
}

/** A span fit to keep: the known fields only, its detail cut when it is too large. */
export function cleanSpan(s: unknown): TraceSpan | undefined {
  if (!s || typeof s !== "object") return undefined;
  const o = s as Record<string, unknown>;
  if (typeof o.step !== "string" || typeof o.name !== "string" || typeof o.start !== "number")
    return undefined;
  if (!/^\d{1,2}(\.\d{1,2})?$/.test(o.step) || !Number.isFinite(o.start)) return undefined;
  const out: TraceSpan = {
    step: o.step,
    name: o.name.slice(0, 120),
    component: typeof o.component === "string" ? o.component.slice(0, 60) : "",
    start: o.start,
  };
  if (typeof o.end === "number" && Number.isFinite(o.end)) out.end = Math.max(o.end, o.start);
  if (o.state === "failed" || o.state === "waiting") out.state = o.state;
  if (typeof o.reason === "string") out.reason = o.reason.slice(0, 1024);
  if (o.detail && typeof o.detail === "object" && !Array.isArray(o.detail)) {
    const d = JSON.stringify(o.detail);
    out.detail = d.length <= MAX_SPAN_BYTES ? (o.detail as Record<string, unknown>) : { truncated: true };
  }
  return out;
}

/** Spans from a header's JSON: malformed input gives none (a trace never fails a write). */
export function parseSpans(text: string | null | undefined): TraceSpan[] {
  if (!text) return [];
  try {
    const v = JSON.parse(text);
    if (!Array.isArray(v)) return [];
    return v
      .slice(0, MAX_HEADER_SPANS)
      .map(cleanSpan)
      .filter((s): s is TraceSpan => !!s);
  } catch {
    return [];
  }
}

/** RFC 3339 with nine fraction digits (Go's RFC3339Nano keeps what is there; we keep µs). */
export function rfc3339Nano(ms: number): string {
  const whole = Math.floor(ms);
  const base = new Date(whole).toISOString(); // ...T..:..:..mmmZ
  const micros = Math.round((ms - whole) * 1000)
    .toString()
    .padStart(3, "0")
    .slice(0, 3);
  return `${base.slice(0, -1)}${micros}000Z`;
}

/** The order FLOW.md walks its steps, for spans that start at the same instant. */
export function compareSteps(a: string, b: string): number {
  const [a1, a2 = "0"] = a.split(".");
  const [b1, b2 = "0"] = b.split(".");
  return Number(a1) - Number(b1) || Number(a2) - Number(b2);
}

/**
 * Spans as a trace shows them: in the order they happened (which follows FLOW.md's walk); of
 * spans starting together the one ending first, then FLOW.md's order; waiting ones (no end) last.
 */
export function orderSpans(spans: TraceSpan[]): TraceSpan[] {
  return spans
    .map((s, i) => ({ s, i }))
    .sort((x, y) => {
      const xw = x.s.end === undefined ? 1 : 0;
      const yw = y.s.end === undefined ? 1 : 0;
      return (
        xw - yw ||
        x.s.start - y.s.start ||
        (x.s.end ?? 0) - (y.s.end ?? 0) ||
        compareSteps(x.s.step, y.s.step) ||
        x.i - y.i
      );
    })
    .map((x) => x.s);
}

/** One stage of a pod's trace as the podtraces API answers it (and `edgeplane trace` reads it). */
export interface TraceStage {
  /** FLOW.md's step number */
  step: string;
  name: string;
  component: string;
  /** RFC3339 with nanoseconds */
  start: string;
  end?: string;
  durationMs?: number;
  state: "done" | "failed" | "waiting";
  reason?: string;
  detail: Record<string, unknown>;
}
