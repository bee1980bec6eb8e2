// Pods' flow traces in the pods shard (schema.ts `traces`): spans appended by uid, bounded per
// pod, read back with the pod, removed when the pod's row is. Writes are plain inserts in the
// shard's turn: the Durable Object's storage coalesces them with the turn's other writes.
import { MAX_SPANS_PER_POD, type TraceAppend, type TraceSpan } from "../../api/trace";
import type { OtlpExporter } from "./otlp";

interface Queued {
  uid: string;
  spans: TraceSpan[];
  rv: string;
  who: { namespace?: string; name?: string };
}

export class TraceTable {
  /** spans kept per uid, as far as this instance wrote or read them (a cap check without a query) */
  private readonly counts = new Map<string, number>();
  /** created pods' first spans, written with the group commit that stores the pods */
  private queued: Queued[] = [];

  constructor(
    private readonly sql: SqlStorage,
    /** where spans are exported too, when EDGEPLANE_OTLP_ENDPOINT is set (otlp.ts) */
    private readonly exporter?: OtlpExporter,
  ) {}

  /** Appends spans of `uid`, up to the bound; a pod's first spans need no lookup. */
  append(uid: string, spans: TraceSpan[], fresh = false, who?: { namespace?: string; name?: string }): void {
    if (!uid || spans.length === 0) return;
    let have = this.counts.get(uid);
    if (have === undefined)
      have = fresh
        ? 0
        : (this.sql.exec<{ n: number | null }>("SELECT SUM(count) AS n FROM traces WHERE uid = ?", uid).one()
            .n ?? 0);
    const room = MAX_SPANS_PER_POD - have;
    if (room <= 0) return;
    const kept = spans.length > room ? spans.slice(0, room) : spans;
    this.sql.exec(
      "INSERT INTO traces (uid, spans, count) VALUES (?, ?, ?)",
      uid,
      JSON.stringify(kept),
      kept.length,
    );
    this.counts.set(uid, have + kept.length);
    this.exporter?.add(uid, kept, who);
    // the map is a cache: bounded, it forgets the oldest
    if (this.counts.size > 4096) this.counts.delete(this.counts.keys().next().value!);
  }

  /** A created pod's first spans, for the group commit that stores it (writeQueued). */
  queue(uid: string, spans: TraceSpan[], rv: string, who: { namespace?: string; name?: string }): void {
    this.queued.push({ uid, spans, rv, who: { namespace: who.namespace, name: who.name } });
  }

  /** Inside the group commit's transaction: the queued spans, their store step ending `now`. */
  writeQueued(now: number): void {
    if (this.queued.length === 0) return;
    const q = this.queued;
    this.queued = [];
    for (const e of q) this.append(e.uid, storedSpans(e.spans, now, e.rv), true, e.who);
  }

  /** The group commit failed: its pods were not stored, nor are their spans. */
  dropQueued(): void {
    this.queued = [];
  }

  /** Appends each entry whose pod is still the one stored under its name. */
  appendAll(
    entries: TraceAppend[],
    storedUid: (namespace: string, name: string) => string | undefined,
  ): number {
    let n = 0;
    for (const e of entries) {
      if (!e?.uid || !Array.isArray(e.spans) || storedUid(e.namespace, e.name) !== e.uid) continue;
      this.append(e.uid, e.spans, false, e);
      n++;
    }
    return n;
  }

  read(uid: string): TraceSpan[] {
    const out: TraceSpan[] = [];
    for (const r of this.sql.exec<{ spans: string }>(
      "SELECT spans FROM traces WHERE uid = ? ORDER BY id",
      uid,
    ))
      out.push(...(JSON.parse(r.spans) as TraceSpan[]));
    return out;
  }

  remove(uid: string): void {
    this.counts.delete(uid);
    this.sql.exec("DELETE FROM traces WHERE uid = ?", uid);
  }
}

/**
 * The apiserver's spans of a create, completed by the shard once the write is durable: the
 * store step (2.4) ends now with the resourceVersion, and the initializers' mark (3.1) sits at
 * that end (they ran within admission, before the object was visible).
 */
export function storedSpans(spans: TraceSpan[], now: number, rv: string | undefined): TraceSpan[] {
  return spans.map((s) => {
    if (s.step === "2.4" && s.end === undefined)
      return { ...s, end: Math.max(now, s.start), detail: { ...s.detail, resourceVersion: rv } };
    if (s.step === "3.1") return { ...s, start: now, end: now };
    return s;
  });
}

/** Spans completed at `at`, the staging of the write they came with (TraceAppend.closeAtStore). */
export function closeAt(spans: TraceSpan[], at: number): TraceSpan[] {
  return spans.map((s) => {
    if (s.start === 0) return { ...s, start: at, end: at };
    if (s.end === undefined && s.state === undefined) return { ...s, end: Math.max(at, s.start) };
    return s;
  });
}
