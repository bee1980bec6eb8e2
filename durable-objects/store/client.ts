// Reaching a store shard: one Durable Object per (cluster, resource), named so.

import { shardName } from "../../api/custom/key";
import { StatusError } from "../../api/errors";
import { resourceKey, viewKey } from "../../api/registry";
import { apiVersionOf, type ResourceDef, type StorageView } from "../../api/resource";
import { checkFieldSelector, formatSelector, parseFieldSelector } from "../../api/selectors";
import type { PodBinding } from "../../api/strategies/pod-binding";
import { type IncludeObject, tableRow } from "../../api/table";
import type { TraceAppend, TraceSpan } from "../../api/trace";
import type { KubeObject } from "../../api/types";
import type { Env } from "../env";
import { supportedFields } from "./fields";
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

/** A typed handle on one resource's shard. */
export class Store {
  readonly key: string;
  private readonly stub: DurableObjectStub<import("./shard").StoreShard>;
  /** set when the resource is kept in another resource's store, in that resource's shape */
  private readonly view?: StorageView;

  constructor(
    env: Env,
    readonly def: ResourceDef,
  ) {
    this.view = def.storedIn;
    this.key = def.storedIn?.key ?? def.custom?.storeKey ?? resourceKey(def);
    this.stub = env.STORE.get(objectId(env.STORE, `${env.EDGEPLANE_CLUSTER}/${shardName(this.key)}`));
  }

  /** Empties and resets this resource's shard (its cluster was deleted: workers/clusters/teardown.ts). */
  async destroyShard(): Promise<void> {
    await this.stub.destroy();
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
    return this.shown(unwrap(await this.stub.get(this.key, namespace, name)));
  }

  /** A stored object read: in this resource's shape, and noted as stored (readAs) for its update. */
  private read(stored: string): KubeObject {
    const o = JSON.parse(stored) as KubeObject;
    if (this.view) return this.view.fromStorage(o);
    readAs.set(o, storedBase(stored, o));
    return o;
  }

  async get(namespace: string, name: string): Promise<KubeObject> {
    return this.read(unwrap(await this.stub.get(this.key, namespace, name)));
  }

  /** The object, or undefined when it does not exist. */
  async find(namespace: string, name: string): Promise<KubeObject | undefined> {
    const r = await this.stub.get(this.key, namespace, name);
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
    return unwrapStream(await this.stub.listStream(this.key, this.query(q)));
  }

  /**
   * The list as JSON text, in this resource's shape. Read from the shard's stream: workerd
   * refuses a call's answer over 32 MiB (a few thousand pods), and a stream has no such cap.
   */
  async listText(q: ListQuery): Promise<string> {
    // a view whose objects show more than is stored draws its table's rows itself
    const redraw = this.view?.redraws && q.table ? q.table.include : undefined;
    if (redraw) q = { ...q, table: { ...q.table!, include: "Object" } };
    const stream = unwrapStream(await this.stub.listStream(this.key, this.query(q)));
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
    const r =
      opts.dryRun || this.view || !preparable(this.def)
        ? await this.stub.create(this.key, this.stored(obj), opts, trace)
        : await this.stub.createPrepared(this.key, prepareCreate(this.def, obj), trace, opts);
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
    const r =
      base && !opts.dryRun && opts.expectRV === base.resourceVersion && preparable(this.def)
        ? await this.stub.updatePrepared(this.key, prepareUpdate(this.def, obj, base), trace)
        : await this.stub.update(this.key, this.stored(obj), opts, trace);
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
    unwrap(await this.stub.bind(this.key, namespace, name, binding, opts, trace));
    if (!opts.dryRun) wrote(this.def);
  }

  async remove(
    namespace: string,
    name: string,
    opts: DeleteOptions = {},
  ): Promise<{ body: string; code: number }> {
    const r = await this.stub.remove(this.key, namespace, name, opts);
    const body = this.shown(unwrap(r));
    wrote(this.def);
    return { body, code: (r.ok && r.code) || 200 };
  }

  async removeCollection(q: ListQuery, opts: DeleteOptions = {}): Promise<string> {
    const r = await this.stub.removeCollection(this.key, this.query(q), opts);
    wrote(this.def); // a failure may come after some objects were deleted
    return this.shownList(await new Response(unwrapStream(r)).text());
  }

  async watch(query: WatchQuery, signal?: AbortSignal): Promise<Response> {
    return this.stub.fetch("https://store/watch", {
      method: "POST",
      body: JSON.stringify({ res: this.key, query: this.watchQuery(query) }),
      signal,
    });
  }

  /** A watch over a hibernatable WebSocket held by the shard; the response is its 101. */
  async watchSocket(query: WatchQuery): Promise<Response> {
    return this.stub.fetch("https://store/watch", {
      headers: {
        upgrade: "websocket",
        "x-watch": JSON.stringify({ res: this.key, query: this.watchQuery(query) }),
      },
    });
  }

  /** Opens the front door's relay to this shard (durable-objects/store/relay.ts): its stream. */
  async openRelay(no: string): Promise<Response> {
    return this.stub.fetch("https://store/relay", { headers: { [RELAY_NO_HEADER]: no } });
  }

  async cancelRelayed(no: string, ids: number[]): Promise<void> {
    await this.stub.cancelRelayed(no, ids);
  }

  /** A watch in this resource's shape: the shard converts each event for it. */
  private watchQuery(q: WatchQuery): WatchQuery {
    return this.view ? { ...this.query(q), view: viewKey(this.def) } : this.query(q);
  }

  /** Spans for pods of this (pods) shard, in one call; those of a pod that is gone are dropped. */
  async appendTraces(entries: TraceAppend[]): Promise<number> {
    return this.stub.appendTraces(this.key, entries);
  }

  /** A pod (as JSON) and its flow-trace spans; 404 as a get's. */
  async podTrace(namespace: string, name: string): Promise<{ body: string; spans: TraceSpan[] }> {
    const r = (await this.stub.podTrace(this.key, namespace, name)) as
      | { ok: true; body: string; spans: TraceSpan[] }
      | Extract<Reply, { ok: false }>;
    if (!r.ok) throw StatusError.fromStatus(r.status);
    return { body: r.body, spans: r.spans };
  }

  async compactNow(): Promise<number> {
    return this.stub.compactNow();
  }
}
