// Reaching a store shard: one Durable Object per (cluster, resource), named so.

import { shardName } from "../../api/custom/key";
import { StatusError } from "../../api/errors";
import { lookupKey, resourceKey, viewKey } from "../../api/registry";
import { apiVersionOf, type ResourceDef, type StorageView } from "../../api/resource";
import { checkFieldSelector, formatSelector, parseFieldSelector } from "../../api/selectors";
import type { PodBinding } from "../../api/strategies/pod-binding";
import { type IncludeObject, tableRow } from "../../api/table";
import type { TraceAppend, TraceSpan } from "../../api/trace";
import type { KubeObject } from "../../api/types";
import type { Env } from "../env";
import { supportedFields } from "./fields";
import { mergedList } from "./merged-list";
import { mergeWatchStreams, readLines } from "./merged-watch";
import { preparable, prepareCreate, prepareUpdate, type StoredBase, storedBase } from "./prepared";
import type {
  DeleteOptions,
  ListQuery,
  Reply,
  StreamReply,
  UpdateOptions,
  WatchQuery,
  WriteOptions,
} from "./protocol";
import { RELAY_NO_HEADER } from "./relay";
import {
  formatVector,
  localVersion,
  type ShardPlan,
  shardKey,
  shardObjectName,
  shardOf,
  shardPlan,
  singleShard,
  vectorParts,
} from "./shard-plan";

function unwrap(r: Reply): string {
  if (!r.ok) throw StatusError.fromStatus(r.status);
  return r.body;
}

function unwrapStream(r: StreamReply): ReadableStream<Uint8Array> {
  if (!r.ok) throw StatusError.fromStatus(r.status);
  return r.stream;
}

/** Called after every successful write through a Store, e.g. to drop caches of that resource. */
const writeListeners = new Set<(def: ResourceDef) => void>();

export function onStoreWrite(fn: (def: ResourceDef) => void): void {
  writeListeners.add(fn);
}

function wrote(def: ResourceDef): void {
  for (const fn of writeListeners) fn(def);
}

/**
 * Durable Object ids by name, per namespace binding. An id is a plain value (no I/O), so it
 * outlives the request that derived it; a stub is tied to its request and is made afresh.
 * Deriving the id hashes the name, and every runtime object lives until a full collection.
 */
const ids = new WeakMap<object, Map<string, DurableObjectId>>();

export function objectId(ns: { idFromName(name: string): DurableObjectId }, name: string): DurableObjectId {
  let byName = ids.get(ns);
  if (!byName) ids.set(ns, (byName = new Map()));
  let id = byName.get(name);
  if (!id) byName.set(name, (id = ns.idFromName(name)));
  return id;
}

/**
 * Each object a Store read (get, find) as it was stored, so that an update of it can be
 * prepared here (prepared.ts) without the shard parsing and re-encoding the object; taken at
 * the read, whatever a handler does to the object afterwards.
 */
const readAs = new WeakMap<KubeObject, StoredBase>();

const labelSets = new WeakMap<string[], Set<string>>();

/** The field labels a custom resource's version accepts: metadata's and its selectable fields. */
function customFieldLabels(labels: string[]): Set<string> {
  let set = labelSets.get(labels);
  if (!set) labelSets.set(labels, (set = new Set(["metadata.name", "metadata.namespace", ...labels])));
  return set;
}

/**
 * How a resource's store is spread (shard-plan.ts): a resource kept in another's store
 * (events.k8s.io's events) goes as that one; a custom resource is never spread (its store key
 * carries its CRD's stamp).
 */
export function resourcePlan(env: Env, def: ResourceDef): ShardPlan {
  if (def.custom) return { count: 1, by: "namespace" };
  return shardPlan(env, def.storedIn ? lookupKey(def.storedIn.key) : def);
}

/** The name of the Durable Object of shard `i` of the store keyed `key` in `cluster`. */
export function storeObjectName(cluster: string, key: string, i: number): string {
  return shardObjectName(`${cluster}/${shardName(key)}`, i);
}

/** A typed handle on one resource's shards. */
type ShardStub = DurableObjectStub<import("./shard").StoreShard>;

export class Store {
  readonly key: string;
  /** shard 0's stub: the only one of a resource that is not spread */
  private readonly stub: ShardStub;
  /** set when the resource is kept in another resource's store, in that resource's shape */
  private readonly view?: StorageView;
  /** how the resource is spread over shards (shard-plan.ts); one shard unless configured */
  readonly plan: ShardPlan;
  private stubs?: ShardStub[];

  constructor(
    private readonly env: Env,
    readonly def: ResourceDef,
  ) {
    this.view = def.storedIn;
    this.key = def.storedIn?.key ?? def.custom?.storeKey ?? resourceKey(def);
    this.plan = resourcePlan(env, def);
    this.stub = env.STORE.get(objectId(env.STORE, storeObjectName(env.EDGEPLANE_CLUSTER, this.key, 0)));
  }

  /** Shard i's stub (0 is this.stub). */
  private shard(i: number): ShardStub {
    if (i === 0) return this.stub;
    if (!this.stubs) this.stubs = [];
    let stub = this.stubs[i];
    if (!stub) {
      const name = storeObjectName(this.env.EDGEPLANE_CLUSTER, this.key, i);
      this.stubs[i] = stub = this.env.STORE.get(objectId(this.env.STORE, name));
    }
    return stub;
  }

  /** The shard holding the object named so, and the resource key its calls carry. */
  private at(namespace: string, name: string): { stub: ShardStub; res: string; i: number } {
    const i = shardOf(this.plan, namespace, name);
    return { stub: this.shard(i), res: shardKey(this.key, i), i };
  }

  private get spread(): boolean {
    return this.plan.count > 1;
  }

  /** Shard i's part of a resourceVersion a client gave (a vector's component, else as it is). */
  private local(rv: string | undefined, i: number): string | undefined {
    return rv === undefined || !this.spread ? rv : localVersion(rv, i, this.plan.count);
  }

  /**
   * The object's own revision in a resourceVersion a client sent with it: of a vector (a watch
   * across shards gave it), the part of the object's shard; anything else as it is.
   */
  ownVersion(rv: string, namespace: string, name: string): string {
    if (!this.spread) return rv;
    return localVersion(rv, shardOf(this.plan, namespace, name), this.plan.count);
  }

  /** The one shard a query can be answered from, if there is one. */
  private single(q: { namespace?: string; fieldSelector?: string }): number | undefined {
    return singleShard(this.plan, this.def.namespaced, q.namespace, q.fieldSelector);
  }

  /** Empties and resets this resource's shards (its cluster was deleted: workers/clusters/teardown.ts). */
  async destroyShard(): Promise<void> {
    for (let i = 0; i < this.plan.count; i++) await this.shard(i).destroy();
  }

  /** A stored object in this resource's shape. */
  private shown(text: string): string {
    if (!this.view) return text;
    const o = JSON.parse(text);
    return o?.metadata && o.kind !== "Status" ? JSON.stringify(this.view.fromStorage(o)) : text;
  }

  /**
   * A list (or Table) of stored objects in this resource's shape. `include` is what a table's
   * rows carry when the view redraws them (listText asked the shard for whole objects).
   */
  private shownList(text: string, include?: IncludeObject): string {
    const view = this.view;
    if (!view) return text;
    const list = JSON.parse(text);
    if (list.kind === "Table") {
      const now = Date.now();
      list.rows = (list.rows ?? []).map((row: { object?: KubeObject }) => {
        if (!row.object?.metadata || row.object.kind === "PartialObjectMetadata") return row;
        const obj = view.fromStorage(row.object);
        return include ? tableRow(this.def, obj, include, now) : { ...row, object: obj };
      });
      return JSON.stringify(list);
    }
    list.kind = this.def.listKind;
    list.apiVersion = apiVersionOf(this.def);
    list.items = (list.items ?? []).map((o: KubeObject) => view.fromStorage(o));
    return JSON.stringify(list);
  }

  /**
   * The object as the shard stores it, as JSON: a string crosses the call to the Durable
   * Object for a copy, where an object is serialized and rebuilt field by field (the
   * shard writes JSON anyway).
   */
  private stored(obj: KubeObject): string {
    return JSON.stringify(this.view ? this.view.toStorage(obj) : obj);
  }

  /** The query with its field selector checked against this resource and named as stored. */
  private query<Q extends { fieldSelector?: string; table?: { columns?: unknown } }>(q: Q): Q {
    // a custom resource's table columns come from its CRD, which the shard does not read
    const columns = this.def.custom?.columns;
    if (columns && q.table) q = { ...q, table: { ...q.table, columns } };
    const labels = this.def.custom?.fieldLabels;
    if (!q.fieldSelector || (!labels && !this.view)) return q;
    const sel = parseFieldSelector(q.fieldSelector);
    // a custom resource's version accepts its own selectable fields, where its shard knows
    // every version's (api/custom/selectable.ts)
    checkFieldSelector(sel, labels ? customFieldLabels(labels) : supportedFields(this.def));
    if (!this.view) return q;
    const names = this.view.fieldLabels;
    return { ...q, fieldSelector: formatSelector(sel.map((r) => ({ ...r, key: names[r.key] ?? r.key }))) };
  }

  async getText(namespace: string, name: string): Promise<string> {
    const s = this.at(namespace, name);
    return this.shown(unwrap(await s.stub.get(s.res, namespace, name)));
  }

  /** A stored object read: in this resource's shape, and noted as stored (readAs) for its update. */
  private read(stored: string): KubeObject {
    const o = JSON.parse(stored) as KubeObject;
    if (this.view) return this.view.fromStorage(o);
    readAs.set(o, storedBase(stored, o));
    return o;
  }

  async get(namespace: string, name: string): Promise<KubeObject> {
    const s = this.at(namespace, name);
    return this.read(unwrap(await s.stub.get(s.res, namespace, name)));
  }

  /** The object, or undefined when it does not exist. */
  async find(namespace: string, name: string): Promise<KubeObject | undefined> {
    const s = this.at(namespace, name);
    const r = await s.stub.get(s.res, namespace, name);
    if (!r.ok) {
      if (r.status.code === 404) return undefined;
      throw StatusError.fromStatus(r.status);
    }
    return this.read(r.body);
  }

  /**
   * The list as JSON, streamed (list-stream.ts); undefined for a resource kept in another's
   * shape, whose items are re-encoded here (listText).
   */
  async listStream(q: ListQuery): Promise<ReadableStream<Uint8Array> | undefined> {
    if (this.view) return undefined;
    const one = this.single(q);
    if (one === undefined) return new Response(await this.mergedList(this.query(q))).body!;
    return unwrapStream(await this.shard(one).listStream(shardKey(this.key, one), this.localQuery(q, one)));
  }

  /** A query for shard i alone: a vector resourceVersion given is read as shard i's part. */
  private localQuery<Q extends ListQuery | WatchQuery>(q: Q, i: number): Q {
    q = this.query(q);
    if (!this.spread || !q.resourceVersion) return q;
    return { ...q, resourceVersion: this.local(q.resourceVersion, i) };
  }

  /** A list over every shard (merged-list.ts), as JSON. */
  private mergedList(q: ListQuery): Promise<string> {
    return mergedList(
      this.plan.count,
      { kind: this.def.listKind, apiVersion: apiVersionOf(this.def) },
      q,
      async (i, sq) =>
        new Response(unwrapStream(await this.shard(i).listStream(shardKey(this.key, i), sq))).text(),
    );
  }

  /**
   * The list as JSON text, in this resource's shape. Read from the shard's stream: workerd
   * refuses a call's answer over 32 MiB (a few thousand pods), and a stream has no such cap.
   */
  async listText(q: ListQuery): Promise<string> {
    // a view whose objects show more than is stored draws its table's rows itself
    const redraw = this.view?.redraws && q.table ? q.table.include : undefined;
    if (redraw) q = { ...q, table: { ...q.table!, include: "Object" } };
    const one = this.single(q);
    if (one === undefined) return this.shownList(await this.mergedList(this.query(q)), redraw);
    const stream = unwrapStream(
      await this.shard(one).listStream(shardKey(this.key, one), this.localQuery(q, one)),
    );
    return this.shownList(await new Response(stream).text(), redraw);
  }

  /** `trace`: a pod's first flow-trace spans (api/trace-record.ts), kept in its row, in the same call. */
  async create(
    obj: KubeObject,
    opts: WriteOptions = {},
    trace?: string,
  ): Promise<{ body: string; code: number }> {
    // Usually the object is encoded here, once, and the shard only fills in the revision;
    // a dry run, an object kept in another's shape, or one the shard allocates values for
    // (a Service's cluster IP) goes whole.
    const s = this.at(obj.metadata.namespace ?? "", obj.metadata.name ?? "");
    const r =
      opts.dryRun || this.view || !preparable(this.def)
        ? await s.stub.create(s.res, this.stored(obj), opts, trace)
        : await s.stub.createPrepared(s.res, prepareCreate(this.def, obj), trace, opts);
    const body = this.shown(unwrap(r));
    wrote(this.def);
    return { body, code: (r.ok && r.code) || 201 };
  }

  /**
   * Stores `obj`. With `old`, the object this Store read and `obj` replaces (its revision
   * is opts.expectRV), the update is encoded here and the shard applies it only if `old` is
   * still stored; otherwise (a dry run, no `old`, a view, an allocating resource) it goes whole.
   */
  async update(
    obj: KubeObject,
    opts: UpdateOptions = {},
    old?: KubeObject,
    trace?: TraceAppend,
  ): Promise<string> {
    const base = old && readAs.get(old);
    // expectRV is a revision this Store read (a vector a client sent is read as the object's own
    // shard's by the handler first: ownVersion)
    const s = this.at(obj.metadata.namespace ?? "", obj.metadata.name ?? "");
    const r =
      base && !opts.dryRun && opts.expectRV === base.resourceVersion && preparable(this.def)
        ? await s.stub.updatePrepared(s.res, prepareUpdate(this.def, obj, base), trace)
        : await s.stub.update(s.res, this.stored(obj), opts, trace);
    const body = this.shown(unwrap(r));
    wrote(this.def);
    return body;
  }

  /**
   * Binds a pod: its shard applies the Binding to the stored pod and stages the write in one
   * call (api/strategies/pod-binding.ts); `trace`'s uid is the bound pod's, filled in there.
   */
  async bind(
    namespace: string,
    name: string,
    binding: PodBinding,
    opts: { dryRun?: boolean } = {},
    trace?: TraceAppend,
  ): Promise<void> {
    const s = this.at(namespace, name);
    unwrap(await s.stub.bind(s.res, namespace, name, binding, opts, trace));
    if (!opts.dryRun) wrote(this.def);
  }

  async remove(
    namespace: string,
    name: string,
    opts: DeleteOptions = {},
  ): Promise<{ body: string; code: number }> {
    const s = this.at(namespace, name);
    const pre = opts.preconditions?.resourceVersion;
    if (this.spread && pre)
      opts = { ...opts, preconditions: { ...opts.preconditions, resourceVersion: this.local(pre, s.i) } };
    const r = await s.stub.remove(s.res, namespace, name, opts);
    const body = this.shown(unwrap(r));
    wrote(this.def);
    return { body, code: (r.ok && r.code) || 200 };
  }

  async removeCollection(q: ListQuery, opts: DeleteOptions = {}): Promise<string> {
    const one = this.single(q);
    if (one !== undefined) {
      const r = await this.shard(one).removeCollection(shardKey(this.key, one), this.query(q), opts);
      wrote(this.def); // a failure may come after some objects were deleted
      return this.shownList(await new Response(unwrapStream(r)).text());
    }
    // every shard deletes its part; the answer lists them all, at the vector of their revisions
    const parts: { metadata?: { resourceVersion?: string }; items?: KubeObject[] }[] = [];
    try {
      for (let i = 0; i < this.plan.count; i++) {
        const r = await this.shard(i).removeCollection(shardKey(this.key, i), this.query(q), opts);
        parts.push(JSON.parse(await new Response(unwrapStream(r)).text()));
      }
    } finally {
      wrote(this.def);
    }
    const list = {
      kind: this.def.listKind,
      apiVersion: apiVersionOf(this.def),
      metadata: { resourceVersion: formatVector(parts.map((p) => Number(p.metadata?.resourceVersion ?? 0))) },
      items: parts.flatMap((p) => p.items ?? []),
    };
    return this.shownList(JSON.stringify(list));
  }

  async watch(query: WatchQuery, signal?: AbortSignal): Promise<Response> {
    const one = this.single(query);
    // a relay is one shard's: a watch across shards is a stream of its own
    if (one === undefined) return this.mergedWatch({ ...query, relay: undefined }, signal);
    return this.shard(one).fetch("https://store/watch", {
      method: "POST",
      body: JSON.stringify({ res: shardKey(this.key, one), query: this.watchQuery(query, one) }),
      signal,
    });
  }

  /**
   * A watch over every shard (merged-watch.ts): each shard from its part of the version, or
   * from its state with the bookmark that ends it; the answer is the first failure, or the
   * merged stream.
   */
  private async mergedWatch(query: WatchQuery, signal?: AbortSignal): Promise<Response> {
    const n = this.plan.count;
    const parts = vectorParts(query.resourceVersion, n);
    if (!parts) {
      // a plain revision says nothing of the other shards: one ERROR event, 410 Expired (as a
      // shard answers a version it compacted), and the client lists again
      const status = new StatusError(410, "Expired", `too old resource version: ${query.resourceVersion}`);
      return new Response(`${JSON.stringify({ type: "ERROR", object: status.toStatus() })}\n`, {
        headers: { "content-type": "application/json", "cache-control": "no-cache, private" },
      });
    }
    const fromState = parts[0] === "" || parts[0] === "0" || !!query.sendInitialEvents;
    const shardQuery = (i: number): WatchQuery => ({
      ...this.watchQuery(query, i),
      resourceVersion: parts[i],
      ...(fromState ? { sendInitialEvents: true, allowWatchBookmarks: true } : {}),
    });
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    signal?.addEventListener("abort", onAbort);
    const answers = await Promise.all(
      parts.map((_, i) =>
        this.shard(i).fetch("https://store/watch", {
          method: "POST",
          body: JSON.stringify({ res: shardKey(this.key, i), query: shardQuery(i) }),
          signal: controller.signal,
        }),
      ),
    );
    const failed = answers.find((r) => !r.ok || !r.body);
    if (failed) {
      controller.abort();
      for (const r of answers) if (r !== failed) r.body?.cancel().catch(() => {});
      return failed;
    }
    const stream = mergeWatchStreams(
      answers.map((r) => r.body!),
      {
        start: fromState ? new Array(n).fill(0) : parts.map(Number),
        fromState,
        bookmarks: !!query.allowWatchBookmarks,
        initialEvents: !!query.sendInitialEvents,
        table: !!query.table,
      },
    );
    const headers = new Headers(answers[0].headers);
    headers.delete("content-length");
    return new Response(stream, { headers });
  }

  /** A watch over a hibernatable WebSocket held by the shard; the response is its 101. */
  async watchSocket(query: WatchQuery): Promise<Response> {
    const one = this.single(query);
    if (one === undefined) return this.mergedWatchSocket({ ...query, relay: undefined });
    return this.shard(one).fetch("https://store/watch", {
      headers: {
        upgrade: "websocket",
        "x-watch": JSON.stringify({ res: shardKey(this.key, one), query: this.watchQuery(query, one) }),
      },
    });
  }

  /** A merged watch over a WebSocket this isolate holds: one event per message. */
  private async mergedWatchSocket(query: WatchQuery): Promise<Response> {
    const res = await this.mergedWatch(query);
    if (!res.ok || !res.body) return res;
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    const reader = res.body.getReader();
    server.addEventListener("close", () => reader.cancel().catch(() => {}));
    void (async () => {
      try {
        await readLines(reader, (line) => {
          server.send(line);
          return true;
        });
        server.close(1000, "watch closed");
      } catch {
        try {
          server.close(1011, "watch failed");
        } catch {
          // already closed
        }
      }
    })();
    return new Response(null, { status: 101, webSocket: client });
  }

  /** Opens the front door's relay to shard i (durable-objects/store/relay.ts): its stream. */
  async openRelay(no: string, i = 0): Promise<Response> {
    return this.shard(i).fetch("https://store/relay", { headers: { [RELAY_NO_HEADER]: no } });
  }

  async cancelRelayed(no: string, ids: number[], i = 0): Promise<void> {
    await this.shard(i).cancelRelayed(no, ids);
  }

  /** A watch in this resource's shape: the shard converts each event for it. */
  private watchQuery(q: WatchQuery, shard: number): WatchQuery {
    const local = this.localQuery(q, shard);
    return this.view ? { ...local, view: viewKey(this.def) } : local;
  }

  /** Spans for pods of this (pods) shard, in one call; those of a pod that is gone are dropped. */
  async appendTraces(entries: TraceAppend[]): Promise<number> {
    if (!this.spread) return this.stub.appendTraces(this.key, entries);
    const byShard = new Map<number, TraceAppend[]>();
    for (const e of entries) {
      const i = shardOf(this.plan, e.namespace, e.name);
      let list = byShard.get(i);
      if (!list) byShard.set(i, (list = []));
      list.push(e);
    }
    let kept = 0;
    for (const [i, list] of byShard) kept += await this.shard(i).appendTraces(shardKey(this.key, i), list);
    return kept;
  }

  /** A pod (as JSON) and its flow-trace spans; 404 as a get's. */
  async podTrace(namespace: string, name: string): Promise<{ body: string; spans: TraceSpan[] }> {
    const s = this.at(namespace, name);
    const r = (await s.stub.podTrace(s.res, namespace, name)) as
      | { ok: true; body: string; spans: TraceSpan[] }
      | Extract<Reply, { ok: false }>;
    if (!r.ok) throw StatusError.fromStatus(r.status);
    return { body: r.body, spans: r.spans };
  }

  /** Compacts every shard's change log to its head; shard 0's compaction point. */
  async compactNow(): Promise<number> {
    const points = [];
    for (let i = 0; i < this.plan.count; i++) points.push(await this.shard(i).compactNow());
    return points[0];
  }
}
