// Pod flow-trace spans (api/trace.ts) exported as OTLP/HTTP JSON (OpenTelemetry's
// ExportTraceServiceRequest) to EDGEPLANE_OTLP_ENDPOINT, e.g. http://127.0.0.1:4318/v1/traces
// of a collector, Jaeger or Tempo. One trace per pod (its uid is the trace id), one span per
// stage. Batched: at most one POST per half second per shard. A failed export is logged once
// a minute and the spans stay local; a malformed endpoint is reported once and nothing is sent.
import type { TraceSpan } from "../../api/trace";

const FLUSH_MS = 500;
const MAX_BATCH = 512;

interface Pending {
  uid: string;
  namespace?: string;
  name?: string;
  spans: TraceSpan[];
}

const reported = new Set<string>();

/** The endpoint, or undefined (none set, or malformed: then reported once with the reason). */
export function otlpEndpoint(env: unknown): URL | undefined {
  const raw = (env as { EDGEPLANE_OTLP_ENDPOINT?: string } | undefined)?.EDGEPLANE_OTLP_ENDPOINT?.trim();
  if (!raw) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    if (!reported.has(raw)) {
      reported.add(raw);
      console.error(
        `EDGEPLANE_OTLP_ENDPOINT ${JSON.stringify(raw)} is not an http(s) URL: pod traces are kept locally and not exported`,
      );
    }
    return undefined;
  }
  return url;
}

const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

function spanId(): string {
  return hex(crypto.getRandomValues(new Uint8Array(8)));
}

/** A pod uid as a 16-byte trace id (a uuid is 16 bytes). */
export function traceId(uid: string): string {
  const h = uid.replace(/-/g, "").toLowerCase();
  return /^[0-9a-f]{32}$/.test(h)
    ? h
    : h
        .padEnd(32, "0")
        .slice(0, 32)
        .replace(/[^0-9a-f]/g, "0");
}

const nanos = (ms: number) => (BigInt(Math.round(ms * 1000)) * 1000n).toString();

function attr(key: string, value: unknown) {
  if (typeof value === "number")
    return Number.isInteger(value)
      ? { key, value: { intValue: String(value) } }
      : { key, value: { doubleValue: value } };
  if (typeof value === "boolean") return { key, value: { boolValue: value } };
  return { key, value: { stringValue: typeof value === "string" ? value : JSON.stringify(value) } };
}

/** One ExportTraceServiceRequest of the pending spans. */
export function otlpBody(pending: Pending[]): unknown {
  return {
    resourceSpans: pending.map((p) => ({
      resource: {
        attributes: [
          attr("service.name", "edgeplane"),
          attr("k8s.pod.uid", p.uid),
          ...(p.name ? [attr("k8s.pod.name", p.name)] : []),
          ...(p.namespace ? [attr("k8s.namespace.name", p.namespace)] : []),
        ],
      },
      scopeSpans: [
        {
          scope: { name: "edgeplane.flow-trace" },
          spans: p.spans.map((s) => ({
            traceId: traceId(p.uid),
            spanId: spanId(),
            name: `${s.step} ${s.name}`,
            kind: 1,
            startTimeUnixNano: nanos(s.start),
            endTimeUnixNano: nanos(s.end ?? s.start),
            attributes: [
              attr("edgeplane.flow.step", s.step),
              attr("edgeplane.component", s.component),
              ...(s.reason ? [attr("edgeplane.reason", s.reason)] : []),
              ...Object.entries(s.detail ?? {}).map(([k, v]) => attr(`edgeplane.detail.${k}`, v)),
            ],
            status: s.state === "failed" ? { code: 2, message: s.reason ?? "" } : { code: 0 },
          })),
        },
      ],
    })),
  };
}

export class OtlpExporter {
  private pending: Pending[] = [];
  private count = 0;
  private timer?: ReturnType<typeof setTimeout>;
  private lastFailure = 0;

  constructor(
    private readonly endpoint: URL,
    private readonly waitUntil: (p: Promise<unknown>) => void,
  ) {}

  add(uid: string, spans: TraceSpan[], who?: { namespace?: string; name?: string }): void {
    if (spans.length === 0 || this.count >= MAX_BATCH * 4) return;
    this.pending.push({ uid, spans, ...who });
    this.count += spans.length;
    if (this.count >= MAX_BATCH) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  flush(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0) return;
    const body = JSON.stringify(otlpBody(this.pending));
    this.pending = [];
    this.count = 0;
    const sent = fetch(this.endpoint, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    })
      .then(async (r) => {
        await r.body?.cancel();
        if (!r.ok) throw new Error(`HTTP ${r.status}`);
      })
      .catch((e) => {
        if (Date.now() - this.lastFailure < 60_000) return;
        this.lastFailure = Date.now();
        console.warn(`pod traces: export to ${this.endpoint.origin} failed: ${(e as Error).message}`);
      });
    this.waitUntil(sent);
  }
}
