// Watch fan-out inside a store shard: each watcher is a filter (namespace, label and
// field selectors) and a stream. A change is encoded once per event type and written to
// every watcher it concerns, with upstream's selector transitions (a change that makes an
// object stop matching is a DELETED for that watcher, one that makes it match an ADDED).

import { concatBytes } from "../../api/bytes";
import { type PrinterColumn, tableDef } from "../../api/custom/definition";
import { lookupView } from "../../api/registry";
import type { ResourceDef } from "../../api/resource";
import { apiVersionOf } from "../../api/resource";
import { matches, type Selector } from "../../api/selectors";
import { columnDefinitions, type IncludeObject, tableRow } from "../../api/table";
import type { KubeObject } from "../../api/types";
import { DATA, type Relay } from "./relay";
import { WatcherIndex } from "./watch-index";

export interface Change {
  rv: number;
  type: "ADDED" | "MODIFIED" | "DELETED";
  namespace: string;
  name: string;
  labels: Record<string, string>;
  fields: Record<string, string>;
  prevLabels: Record<string, string> | null;
  prevFields: Record<string, string> | null;
  data: string;
}

export interface WatchFilter {
  namespace?: string;
  labels: Selector;
  fields: Selector;
  /** the resource key whose shape the watcher asked for (events.k8s.io Events in the core shard) */
  view?: string;
}

/** Where a watcher's events go: a chunked HTTP stream or a WebSocket. */
export interface Sink {
  write(bytes: Uint8Array): Promise<void> | void;
  close(): void;
  /** bytes queued and not yet taken by the client */
  backlog(): number;
}

export interface Watcher {
  filter: WatchFilter;
  sink: Sink;
  table?: { include: IncludeObject; headersSent: boolean; columns?: PrinterColumn[] };
  bookmarks: boolean;
  timer?: ReturnType<typeof setTimeout>;
  closed: boolean;
  /** set when the front door holds this watch: its events go out on that relay (relay.ts) */
  relayed?: { relay: Relay; id: number };
}

const encoder = new TextEncoder();

/** Which event a watcher with this filter sees for a change, if any. */
export function eventFor(f: WatchFilter, c: Change): Change["type"] | null {
  if (f.namespace !== undefined && f.namespace !== c.namespace) return null;
  const now = matches(f.labels, c.labels) && matches(f.fields, c.fields);
  if (c.type === "ADDED") return now ? "ADDED" : null;
  if (c.type === "DELETED") return now ? "DELETED" : null;
  const before =
    c.prevLabels !== null && matches(f.labels, c.prevLabels) && matches(f.fields, c.prevFields ?? {});
  if (now && before) return "MODIFIED";
  if (now) return "ADDED";
  if (before) return "DELETED";
  return null;
}

function streamSink(writer: WritableStreamDefaultWriter<Uint8Array>): Sink {
  return {
    write: (bytes) => writer.write(bytes),
    close: () => void writer.close().catch(() => {}),
    backlog: () => -(writer.desiredSize ?? 0),
  };
}

const decoder = new TextDecoder();

/** A WebSocket watcher: one text message per event, as upstream's websocket watch sends them. */
export function socketSink(ws: WebSocket): Sink {
  return {
    write: (bytes) => ws.send(decoder.decode(bytes).replace(/\n$/, "")),
    close: () => ws.close(1000, "watch closed"),
    backlog: () => 0,
  };
}

/**
 * Joins a watcher's frames of one commit. Watchers that see the same events hold the same
 * frames (they are encoded once per change and shape), so each distinct sequence is joined
 * once and its bytes shared: with 100 watchers on a namespace, one copy of a commit's events
 * instead of 100.
 */
function joinedFrames(): (frames: readonly Uint8Array[]) => Uint8Array {
  const ids = new Map<Uint8Array, number>();
  const joined = new Map<string, Uint8Array>();
  return (frames) => {
    let key = "";
    for (const f of frames) {
      let id = ids.get(f);
      if (id === undefined) ids.set(f, (id = ids.size));
      key += `${id},`;
    }
    let bytes = joined.get(key);
    if (!bytes) joined.set(key, (bytes = concatBytes(frames)));
    return bytes;
  };
}

export class WatchHub {
  private watchers = new WatcherIndex<Watcher>();
  private bookmarkTimer?: ReturnType<typeof setInterval>;

  constructor(
    private readonly def: () => ResourceDef | undefined,
    private readonly head: () => number,
    /** hibernatable WebSocket watchers, found afresh on each publish (they outlive this object's memory) */
    private readonly sockets: () => Iterable<{ filter: WatchFilter; sink: Sink }> = () => [],
  ) {}

  /** A watcher over a WebSocket, for its replay; live events reach it through `sockets`. */
  transient(filter: WatchFilter, sink: Sink): Watcher {
    return { filter, sink, bookmarks: false, closed: false };
  }

  get size(): number {
    return this.watchers.size;
  }

  /**
   * Opens a watcher: a stream of its own (`readable`), or one carried by `relayed`'s relay.
   * Replay events are written first, then live changes follow.
   */
  open(
    filter: WatchFilter,
    opts: {
      table?: { include: IncludeObject; columns?: PrinterColumn[] };
      bookmarks: boolean;
      timeoutSeconds?: number;
      relayed?: { relay: Relay; id: number };
    },
  ): { readable?: ReadableStream<Uint8Array>; watcher: Watcher } {
    let readable: ReadableStream<Uint8Array> | undefined;
    let sink: Sink;
    let writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
    if (opts.relayed) sink = opts.relayed.relay.sink(opts.relayed.id);
    else {
      // the runtime's own byte pipe: the response is pumped natively, with no JS per chunk
      const pipe = new IdentityTransformStream({ highWaterMark: 1 << 20 });
      readable = pipe.readable;
      writer = pipe.writable.getWriter();
      sink = streamSink(writer);
    }
    const w: Watcher = {
      filter,
      sink,
      table: opts.table ? { ...opts.table, headersSent: false } : undefined,
      bookmarks: opts.bookmarks,
      closed: false,
      relayed: opts.relayed,
    };
    if (opts.timeoutSeconds && opts.timeoutSeconds > 0) {
      w.timer = setTimeout(() => this.close(w), opts.timeoutSeconds * 1000);
    }
    writer?.closed.catch(() => this.drop(w));
    opts.relayed?.relay.watchers.set(opts.relayed.id, w);
    this.watchers.add(w);
    if (opts.bookmarks) this.ensureBookmarks();
    return { readable, watcher: w };
  }

  /** Writes one change to one watcher (used for replay before the watcher is live). */
  replayTo(w: Watcher, c: Change): void {
    const type = eventFor(w.filter, c);
    if (type) this.write(w, this.frame(w, type, c.data, c.rv, new Map()));
  }

  /** A synthetic ADDED for an object that exists when the watch starts. */
  initial(w: Watcher, data: string, rv: number): void {
    this.write(w, this.frame(w, "ADDED", data, rv, new Map()));
  }

  error(w: Watcher, status: unknown): void {
    this.write(w, encoder.encode(`${JSON.stringify({ type: "ERROR", object: status })}\n`));
    this.close(w);
  }

  bookmark(w: Watcher, rv: number, annotations?: Record<string, string>): void {
    const def = w.filter.view ? lookupView(w.filter.view) : this.def();
    if (!def) return;
    const metadata: Record<string, unknown> = { resourceVersion: String(rv) };
    if (annotations) metadata.annotations = annotations;
    const obj = { kind: def.kind, apiVersion: apiVersionOf(def), metadata };
    this.write(w, encoder.encode(`${JSON.stringify({ type: "BOOKMARK", object: obj })}\n`));
  }

  /**
   * Fan-out of the changes of one commit, in revision order. A stream watcher gets all it
   * sees of them in one write (a write costs the runtime far more than its bytes), a
   * WebSocket watcher one message per event. Relayed watchers that see the same bytes share
   * one relay message.
   */
  publish(changes: readonly Change[]): void {
    const queued = new Map<Watcher, Uint8Array[]>();
    const sockets = [...this.sockets()];
    for (const c of changes) {
      const cache = new Map<string, unknown>();
      for (const w of this.watchers.candidates(c)) {
        const type = eventFor(w.filter, c);
        if (!type) continue;
        const bytes = this.frame(w, type, c.data, c.rv, cache);
        const q = queued.get(w);
        if (q) q.push(bytes);
        else queued.set(w, [bytes]);
      }
      for (const s of sockets) {
        const type = eventFor(s.filter, c);
        if (!type) continue;
        try {
          s.sink.write(
            this.frame(
              { filter: s.filter, sink: s.sink, bookmarks: false, closed: false },
              type,
              c.data,
              c.rv,
              cache,
            ),
          );
        } catch {
          // a socket closing under us; the runtime drops it
        }
      }
    }
    const joined = joinedFrames();
    const bytesOf = (q: Uint8Array[]) => (q.length === 1 ? q[0]! : joined(q));
    // relayed watchers first: one message carries many, and streams of their own are slow to write
    let relayed: Map<Relay, Map<Uint8Array, number[]>> | undefined;
    for (const [w, q] of queued) {
      if (!w.relayed) continue;
      const bytes = bytesOf(q);
      relayed ??= new Map();
      let byBytes = relayed.get(w.relayed.relay);
      if (!byBytes) relayed.set(w.relayed.relay, (byBytes = new Map()));
      const ids = byBytes.get(bytes);
      if (ids) ids.push(w.relayed.id);
      else byBytes.set(bytes, [w.relayed.id]);
    }
    if (relayed)
      for (const [relay, byBytes] of relayed)
        for (const [bytes, ids] of byBytes) relay.send(DATA, ids, bytes);
    for (const [w, q] of queued) if (!w.relayed) this.write(w, bytesOf(q));
  }

  close(w: Watcher): void {
    if (w.closed) return;
    this.drop(w);
    w.sink.close();
  }

  closeAll(): void {
    for (const w of [...this.watchers]) this.close(w);
  }

  private drop(w: Watcher): void {
    w.closed = true;
    if (w.timer) clearTimeout(w.timer);
    w.relayed?.relay.watchers.delete(w.relayed.id);
    this.watchers.delete(w);
    if (this.bookmarkTimer && ![...this.watchers].some((x) => x.bookmarks)) {
      clearInterval(this.bookmarkTimer);
      this.bookmarkTimer = undefined;
    }
  }

  private ensureBookmarks(): void {
    if (this.bookmarkTimer) return;
    this.bookmarkTimer = setInterval(() => {
      const rv = this.head();
      for (const w of this.watchers) if (w.bookmarks && !w.table) this.bookmark(w, rv);
    }, 30_000);
  }

  private write(w: Watcher, bytes: Uint8Array): void {
    if (w.closed) return;
    // A watcher that stopped reading and has more than 64 MiB queued is cut off (upstream
    // closes slow watchers too); the client re-lists or re-watches from its last version.
    if (w.sink.backlog() > 64 << 20) {
      this.close(w);
      return;
    }
    try {
      const p = w.sink.write(bytes);
      if (p) p.catch(() => this.drop(w));
    } catch {
      this.drop(w);
    }
  }

  /** The stored JSON in the shape a watcher asked for, converted once per change and shape. */
  private shown(view: string, data: string, cache: Map<string, unknown>): string {
    const key = `view:${view}`;
    let s = cache.get(key) as string | undefined;
    if (s === undefined) {
      const storedIn = lookupView(view).storedIn;
      s = storedIn ? JSON.stringify(storedIn.fromStorage(JSON.parse(data))) : data;
      cache.set(key, s);
    }
    return s;
  }

  private frame(w: Watcher, type: string, data: string, rv: number, cache: Map<string, unknown>): Uint8Array {
    const view = w.filter.view;
    if (view) data = this.shown(view, data, cache);
    if (!w.table) {
      const key = `raw:${view ?? ""}:${type}`;
      let bytes = cache.get(key) as Uint8Array | undefined;
      if (!bytes) {
        bytes = encoder.encode(`{"type":"${type}","object":${data}}\n`);
        cache.set(key, bytes);
      }
      return bytes;
    }
    const def = tableDef(this.def()!, w.table.columns);
    let obj = cache.get(`obj:${view ?? ""}`) as KubeObject | undefined;
    if (!obj) {
      obj = JSON.parse(data) as KubeObject;
      cache.set(`obj:${view ?? ""}`, obj);
    }
    const table = {
      kind: "Table",
      apiVersion: "meta.k8s.io/v1",
      metadata: { resourceVersion: String(rv) },
      columnDefinitions: w.table.headersSent ? [] : columnDefinitions(def),
      rows: [tableRow(def, obj, w.table.include, Date.now())],
    };
    w.table.headersSent = true;
    return encoder.encode(`${JSON.stringify({ type, object: table })}\n`);
  }
}
