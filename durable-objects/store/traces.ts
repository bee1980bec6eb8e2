// Pods' flow traces in the pods shard (schema.ts `traces`): spans appended by uid, bounded per
// pod, read back with the pod, removed when the pod's row is. A created pod's first spans go in
// the group commit that stores the pod; later ones are plain inserts in the shard's turn.
import {
  type EncodedSpans,
  MAX_SPANS_PER_POD,
  STORED_AT,
  STORED_RV,
  type TraceAppend,
  type TraceSpan,
} from "../../api/trace";
import { insertRows } from "./batch";
import type { OtlpExporter } from "./otlp";

interface Queued {
  uid: string;
  spans: EncodedSpans;
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
    this.insert(uid, JSON.stringify(kept), kept.length, have);
    this.exporter?.add(uid, kept, who);
  }

  private insert(uid: string, json: string, count: number, had: number): void {
    this.sql.exec("INSERT INTO traces (uid, spans, count) VALUES (?, ?, ?)", uid, json, count);
    this.counted(uid, had + count);
  }

  private counted(uid: string, n: number): void {
    this.counts.set(uid, n);
    // the map is a cache: bounded, it forgets the oldest
    if (this.counts.size > 4096) this.counts.delete(this.counts.keys().next().value!);
  }

  /** A created pod's first spans, for the group commit that stores it (writeQueued). */
  queue(uid: string, spans: EncodedSpans, rv: string, who: { namespace?: string; name?: string }): void {
    this.queued.push({ uid, spans, rv, who: { namespace: who.namespace, name: who.name } });
  }

  /** Inside the group commit's transaction: the queued spans, their store step ending `now`. */
  writeQueued(now: number): void {
    if (this.queued.length === 0) return;
    const q = this.queued;
    this.queued = [];
    // one statement for the whole commit: each statement is a cursor the isolate frees only
    // in a full collection (batch.ts insertRows)
    const rows: SqlStorageValue[][] = [];
    for (const e of q) {
      if (e.spans.count > MAX_SPANS_PER_POD) continue;
      const json = storedJson(e.spans.json, now, e.rv);
      rows.push([e.uid, json, e.spans.count]);
      this.counted(e.uid, e.spans.count);
      if (this.exporter) this.exporter.add(e.uid, JSON.parse(json) as TraceSpan[], e.who);
    }
    insertRows(this.sql, "INSERT INTO traces (uid, spans, count)", rows);
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

/** A created pod's encoded spans (EncodedSpans) with the commit's instant and revision in. */
export function storedJson(json: string, now: number, rv: string): string {
  return json.replaceAll(STORED_AT, String(now)).replace(STORED_RV, JSON.stringify(rv));
}

/** Spans completed at `at`, the staging of the write they came with (TraceAppend.closeAtStore). */
export function closeAt(spans: TraceSpan[], at: number): TraceSpan[] {
  return spans.map((s) => {
    if (s.start === 0) return { ...s, start: at, end: at };
    if (s.end === undefined && s.state === undefined) return { ...s, end: Math.max(at, s.start) };
    return s;
  });
}
