// Pods' flow traces in the pods shard: a created pod's first spans (the apiserver's) are a
// compact record in the pod's own row (schema.ts `objects.trace`, api/trace-record.ts),
// written by the statement that stores the pod; spans that come later (scheduler, binding,
// node agent) are rows of `traces`, appended by uid. Bounded per pod, read back with the pod,
// removed when the pod's row is.
import {
  isRestartSpan,
  MAX_RESTART_SPANS,
  MAX_SPANS_PER_POD,
  type TraceAppend,
  type TraceSpan,
} from "../../api/trace";
import { createRecordSpans, MAX_CREATE_SPANS, storedCreateRecord } from "../../api/trace-record";
import type { Staged } from "./batch";
import type { OtlpExporter } from "./otlp";

/** Pods whose span counts a generation of TraceTable's cache holds (two are kept). */
const COUNTS_PER_GENERATION = 2048;

export class TraceTable {
  /**
   * spans kept per uid, as far as this instance wrote or read them (a cap check without a
   * query): a cache in two generations, the older dropped whole when the newer fills. (Evicting
   * the oldest key one by one cost ~15 µs per pod create: V8's Map leaves a deleted entry as a
   * hole that `keys().next()` walks over until the table is rehashed.)
   */
  private counts = new Map<string, number>();
  private olderCounts = new Map<string, number>();

  constructor(
    private readonly sql: SqlStorage,
    /** where spans are exported too, when EDGEPLANE_OTLP_ENDPOINT is set (otlp.ts) */
    private readonly exporter?: OtlpExporter,
  ) {}

  /**
   * Appends spans of `uid`: container restarts to the window of the newest MAX_RESTART_SPANS,
   * the others up to the rest of the bound (its create's spans count too).
   */
  append(uid: string, spans: TraceSpan[], who: { namespace: string; name: string }): void {
    if (!uid || spans.length === 0) return;
    const restarts = spans.filter(isRestartSpan);
    if (restarts.length === 0) {
      this.appendCounted(uid, spans, who);
      return;
    }
    const others = spans.filter((s) => !isRestartSpan(s));
    if (others.length) this.appendCounted(uid, others, who);
    this.appendRestarts(uid, restarts, who);
  }

  /**
   * Restarts, one row each with `count` 0 (they are not counted against the first start's
   * bound): the newest MAX_RESTART_SPANS rows of the pod stay, older ones are deleted.
   */
  private appendRestarts(uid: string, spans: TraceSpan[], who: { namespace: string; name: string }): void {
    const kept = spans.slice(-MAX_RESTART_SPANS);
    for (const s of kept)
      this.sql.exec("INSERT INTO traces (uid, spans, count) VALUES (?, ?, 0)", uid, JSON.stringify([s]));
    this.sql.exec(
      `DELETE FROM traces WHERE uid = ? AND count = 0 AND id <=
        (SELECT id FROM traces WHERE uid = ? AND count = 0 ORDER BY id DESC LIMIT 1 OFFSET ?)`,
      uid,
      uid,
      MAX_RESTART_SPANS,
    );
    this.exporter?.add(uid, kept, who);
  }

  private appendCounted(uid: string, spans: TraceSpan[], who: { namespace: string; name: string }): void {
    let have = this.counts.get(uid) ?? this.olderCounts.get(uid);
    if (have === undefined)
      have =
        (this.sql.exec<{ n: number | null }>("SELECT SUM(count) AS n FROM traces WHERE uid = ?", uid).one()
          .n ?? 0) + this.createSpans(who.namespace, who.name).length;
    const room = MAX_SPANS_PER_POD - MAX_RESTART_SPANS - have;
    if (room <= 0) return;
    const kept = spans.length > room ? spans.slice(0, room) : spans;
    this.sql.exec(
      "INSERT INTO traces (uid, spans, count) VALUES (?, ?, ?)",
      uid,
      JSON.stringify(kept),
      kept.length,
    );
    this.counted(uid, have + kept.length);
    this.exporter?.add(uid, kept, who);
  }

  private counted(uid: string, n: number): void {
    this.counts.set(uid, n);
    if (this.counts.size >= COUNTS_PER_GENERATION) {
      this.olderCounts = this.counts;
      this.counts = new Map();
    }
  }

  /** The spans of a stored pod's create record (its row's `trace`). */
  private createSpans(namespace: string, name: string): TraceSpan[] {
    const rows = this.sql
      .exec<{ trace: string | null }>(
        "SELECT trace FROM objects WHERE namespace = ? AND name = ?",
        namespace,
        name,
      )
      .toArray();
    return createRecordSpans(rows[0]?.trace);
  }

  /**
   * After a group commit: the spans of deleted pods go; created pods are counted (so the
   * scheduler's and the agent's first spans need no lookup) and their records go to the
   * exporter, when there is one (the rows already hold them).
   */
  committed(staged: readonly Staged[], now: number): void {
    for (const s of staged) {
      const c = s.change;
      if (c.type === "DELETED") this.remove(s.uid);
      else if (s.trace !== undefined && !s.prev) {
        this.counted(s.uid, MAX_CREATE_SPANS);
        if (this.exporter)
          this.exporter.add(s.uid, createRecordSpans(storedCreateRecord(s.trace, c.rv, now)), c);
      }
    }
  }

  /** Appends each entry whose pod is still the one stored under its name. */
  appendAll(
    entries: TraceAppend[],
    storedUid: (namespace: string, name: string) => string | undefined,
  ): number {
    let n = 0;
    for (const e of entries) {
      if (!e?.uid || !Array.isArray(e.spans) || storedUid(e.namespace, e.name) !== e.uid) continue;
      this.append(e.uid, e.spans, e);
      n++;
    }
    return n;
  }

  /** A stored pod's spans: its create's, then those appended since. */
  read(uid: string, namespace: string, name: string): TraceSpan[] {
    const out = this.createSpans(namespace, name);
    for (const r of this.sql.exec<{ spans: string }>(
      "SELECT spans FROM traces WHERE uid = ? ORDER BY id",
      uid,
    ))
      out.push(...(JSON.parse(r.spans) as TraceSpan[]));
    return out;
  }

  remove(uid: string): void {
    this.counts.delete(uid);
    this.olderCounts.delete(uid);
    this.sql.exec("DELETE FROM traces WHERE uid = ?", uid);
  }
}

/** Spans completed at `at`, the staging of the write they came with (TraceAppend.closeAtStore). */
export function closeAt(spans: TraceSpan[], at: number): TraceSpan[] {
  return spans.map((s) => {
    if (s.start === 0) return { ...s, start: at, end: at };
    if (s.end === undefined && s.state === undefined) return { ...s, end: Math.max(at, s.start) };
    return s;
  });
}
