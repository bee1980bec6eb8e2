// One store shard: every object of one resource in one cluster, in this Durable Object's
// SQLite. A monotonic revision is the resourceVersion; each change writes the object and a
// change-log row, concurrent changes together in one transaction (batch.ts), and then fans
// out to watchers. The object is single threaded and its checks see staged changes, so a
// read-check-write inside one method is atomic, like an etcd transaction.
import { DurableObject } from "cloudflare:workers";
import { type DrizzleSqliteDODatabase, drizzle } from "drizzle-orm/durable-sqlite";
import { migrate } from "drizzle-orm/durable-sqlite/migrator";
import { keyStamp } from "../../api/custom/key";
import {
  alreadyExists,
  badRequest,
  conflict,
  notFound,
  type Status,
  StatusError,
  staleResourceVersion,
  tooLarge,
} from "../../api/errors";
import { lookupKey, resourceKey } from "../../api/registry";
import type { ResourceDef } from "../../api/resource";
import { applyPodBinding, type PodBinding } from "../../api/strategies/pod-binding";
import type { TraceAppend, TraceSpan } from "../../api/trace";
import type { KubeObject } from "../../api/types";
import migrations from "../../migrations/migrations.js";
import { objectEnv } from "../clusters";
import type { Env } from "../env";
import { Allocations } from "./allocations";
import { type Row, WriteBatch, writeStaged } from "./batch";
import { changesAfter, compactionPoint, compactLog } from "./changelog";
import { deleteCollection } from "./collection";
import { ShardCount } from "./counts";
import { decideDelete, readyToRemove } from "./deletion";
import { fail, MAX_STORED_BYTES, ok, storedBytes, unchanged } from "./encoding";
import { EXPIRY_RESOURCE_KEY, expiredRows, expiryStepMs, ttlMs } from "./expiry";
import { recomputeStoredFields, selectableFields, storedFieldsStale } from "./fields";
import { ListPins, listStream } from "./list-stream";
import { NameFilter } from "./names";
import { OtlpExporter, otlpEndpoint } from "./otlp";
import { Pokes } from "./pokes";
import { fillCreateFields, preparedData } from "./prepared";
import type {
  Answer,
  DeleteOptions,
  ListQuery,
  PreparedCreate,
  PreparedUpdate,
  Reply,
  StreamReply,
  UpdateOptions,
  WriteOptions,
} from "./protocol";
import { type RecentChange, RecentChanges } from "./recent";
import { Relays } from "./relay";
import { splitShardKey } from "./shard-plan";
import { closeAt, TraceTable } from "./traces";
import { attachedFilter, serveWatch, watchSockets } from "./watch";
import { type Change, type WatchFilter, WatchHub } from "./watchers";

export class StoreShard extends DurableObject<Env> {
  readonly sql: SqlStorage;
  readonly db: DrizzleSqliteDODatabase;
  /**
   * which shard of its resource this is (store/shard-plan.ts): 0 unless the resource is spread;
   * learnt from the key its calls carry ("/pods~2")
   */
  shardNo = 0;
  /** head revision: the resourceVersion of the last commit */
  revision = 0;
  /** oldest revision a watch may start from is compacted + 1 */
  compacted = 0;
  def?: ResourceDef;
  readonly hub: WatchHub;
  /** snapshots of lists being streamed a page at a time (list-stream.ts) */
  readonly listPins = new ListPins();
  /** the front door's relay to this shard, when it has one open (relay.ts) */
  readonly relays: Relays;
  /** the newest changes in memory: informers catching up read them without a query */
  readonly recent = new RecentChanges();
  /** wakes the controllers and the scheduler after commits */
  private readonly pokes: Pokes;
  /** writes staged for the next group commit */
  private readonly batch = new WriteBatch(() => this.flush());
  /** how many objects it holds, in a cluster other than the root (counts.ts) */
  private readonly count: ShardCount;
  /** the names this shard may hold, so that most creates need no lookup (names.ts) */
  private readonly names = new NameFilter(() => {
    this.flush();
    return this.sql.exec<{ namespace: string; name: string }>("SELECT namespace, name FROM objects");
  });

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // its cluster's settings (durable-objects/clusters.ts): pokes go to that cluster's loops
    this.env = objectEnv(ctx, env);
    this.sql = ctx.storage.sql;
    this.db = drizzle(ctx.storage);
    this.pokes = new Pokes(
      this.env,
      () => this.revision,
      () => this.shardNo,
    );
    this.count = new ShardCount(
      this.env,
      () => this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM objects").one().n,
      () => this.flush(),
      () => this.shardNo,
    );
    this.hub = new WatchHub(
      () => this.def,
      () => this.revision,
      () => watchSockets(ctx),
    );
    this.relays = new Relays(this.hub);
    ctx.blockConcurrencyWhile(async () => {
      await migrate(this.db, migrations);
      for (const r of this.sql.exec<{ key: string; value: number }>("SELECT key, value FROM meta")) {
        if (r.key === "revision") this.revision = r.value;
        if (r.key === "compacted") this.compacted = r.value;
      }
      // Commits do not write the head to meta: every revision above the compaction point is
      // still a row of the change log, so the head is the newest row or the point itself.
      const head = this.sql.exec<{ rv: number | null }>("SELECT MAX(rv) AS rv FROM changes").one().rv ?? 0;
      this.revision = Math.max(this.revision, this.compacted, head);
    });
  }

  /** the ledger of allocated values, for resources that have some (services) */
  private allocations?: Allocations;

  /** the key `def` was built from */
  private defKey?: string;

  /** pods' flow traces (traces.ts), in the pods shard only */
  private traces?: TraceTable;

  private use(res: string): ResourceDef {
    if (res === this.defKey) return this.def!;
    if (!this.def) {
      // a spread resource's shard past the first hears its number with its key ("/pods~2")
      const { key, shard } = splitShardKey(res);
      this.shardNo = shard;
      const def = lookupKey(key);
      this.def = def;
      this.defKey = res;
      const allocator = def.strategy.allocator;
      if (allocator)
        this.allocations = new Allocations(def, allocator, this.settings, () => this.storedData());
      if (def.group === "" && def.resource === "pods") {
        const endpoint = otlpEndpoint(this.env);
        const exporter = endpoint && new OtlpExporter(endpoint, (p) => this.ctx.waitUntil(p));
        this.traces = new TraceTable(this.sql, exporter || undefined);
      }
      if (def.custom) this.refreshFields();
    } else if (this.def.custom && keyStamp(res) > keyStamp(this.defKey!)) {
      // a custom resource's CRD changed (api/custom/key.ts): its newest key is followed
      this.def = lookupKey(res);
      this.defKey = res;
      this.refreshFields();
    }
    return this.def;
  }

  /**
   * A prepared write's key, with its field values computed here when the Worker prepared it
   * with an older def than the shard's (a custom resource's CRD changed meanwhile).
   */
  private fieldsOf<P extends PreparedCreate>(res: string, p: P): P {
    if (res === this.defKey) return p;
    return { ...p, fields: selectableFields(this.def!, JSON.parse(p.json) as KubeObject) };
  }

  /** After the def changed: the stored field values follow its selectable fields (fields.ts). */
  private refreshFields(): void {
    if (!storedFieldsStale(this.sql, this.def!)) return;
    this.flush();
    this.ctx.storage.transactionSync(() => recomputeStoredFields(this.sql, this.def!));
  }

  /** The Worker variables (ranges, TTLs) as plain settings. */
  private get settings(): Record<string, string | undefined> {
    return this.env as unknown as Record<string, string | undefined>;
  }

  private *storedData(): Iterable<string> {
    this.flush();
    for (const r of this.sql.exec<{ data: string }>("SELECT data FROM objects")) yield r.data;
  }

  /** An object's current row, staged writes included. */
  row(namespace: string, name: string): Row | undefined {
    const staged = this.batch.lookup(namespace, name);
    if (staged !== undefined) return staged ?? undefined;
    if (!this.names.mayHold(namespace, name)) return undefined;
    const rows = this.sql
      .exec<Row & Record<string, SqlStorageValue>>(
        "SELECT namespace, name, uid, rv, labels, fields, data FROM objects WHERE namespace = ? AND name = ?",
        namespace,
        name,
      )
      .toArray();
    return rows[0];
  }

  // ---- RPC surface -------------------------------------------------------------------

  async get(res: string, namespace: string, name: string): Promise<Reply> {
    try {
      const def = this.use(res);
      this.flush();
      const r = this.row(namespace, name);
      if (!r) throw notFound(def, name);
      return ok(r.data);
    } catch (e) {
      return fail(e);
    }
  }

  /** A list, as a stream of its JSON (list-stream.ts: without a limit, read a page at a time). */
  async listStream(res: string, q: ListQuery): Promise<StreamReply> {
    try {
      const def = this.use(res);
      this.flush();
      return { ok: true, stream: listStream(this, def, q) };
    } catch (e) {
      return fail(e) as StreamReply;
    }
  }

  /**
   * `json` is the object's JSON (a string crosses the call for a copy; see Store); `trace`, a
   * pod's first spans (api/trace-record.ts), stored in its row by the same statement.
   */
  async create(res: string, json: string, opts: WriteOptions = {}, trace?: string): Promise<Reply> {
    return this.answer(() => {
      const def = this.use(res);
      const obj = JSON.parse(json) as KubeObject;
      const meta = obj.metadata;
      const namespace = meta.namespace ?? "";
      // names (generated ones included) are settled by the apiserver before validation
      const name = meta.name;
      if (!name) throw badRequest("metadata.name is required");
      if (this.row(namespace, name)) throw alreadyExists(def, name);
      this.count.check(def, name, opts.limit);
      fillCreateFields(def, meta);
      this.allocations?.allocate(obj, undefined);
      if (opts.dryRun) return ok(JSON.stringify(obj), 201);
      return ok(this.commit("ADDED", obj, undefined, this.traces && trace), 201);
    });
  }

  /** A create the Worker encoded (prepared.ts): staged as sent, with its revision filled in. */
  async createPrepared(
    res: string,
    p: PreparedCreate,
    trace?: string,
    opts: WriteOptions = {},
  ): Promise<Reply> {
    return this.answer(() => {
      const def = this.use(res);
      if (this.allocations) throw new StatusError(500, "InternalError", `${res} allocates: create it whole`);
      if (!p.name) throw badRequest("metadata.name is required");
      if (this.row(p.namespace, p.name)) throw alreadyExists(def, p.name);
      this.count.check(def, p.name, opts.limit);
      // the pod's first spans go in its row (traces.ts)
      return ok(
        this.stage(
          "ADDED",
          this.fieldsOf(res, p),
          undefined,
          (rv) => markedData(p, rv),
          this.traces && trace,
        ),
        201,
      );
    });
  }

  /** Spans of pods (scheduler, controllers): each kept if its pod is still the one named. */
  async appendTraces(res: string, entries: TraceAppend[]): Promise<number> {
    this.use(res);
    if (!this.traces) return 0;
    this.flush();
    return this.traces.appendAll(entries, (ns, name) => this.row(ns, name)?.uid);
  }

  /** A pod and its trace's spans (the podtraces read). */
  async podTrace(
    res: string,
    namespace: string,
    name: string,
  ): Promise<{ ok: true; body: string; spans: TraceSpan[] } | { ok: false; status: Status }> {
    const r = await this.get(res, namespace, name);
    if (!r.ok) return r;
    const uid = this.row(namespace, name)?.uid;
    return {
      ok: true,
      body: r.body,
      spans: uid && this.traces ? this.traces.read(uid, namespace, name) : [],
    };
  }

  /** `json` is the object's JSON, as for create. */
  async update(res: string, json: string, opts: UpdateOptions = {}, trace?: TraceAppend): Promise<Reply> {
    const at = Date.now();
    const reply = await this.answer(() => {
      const def = this.use(res);
      const obj = JSON.parse(json) as KubeObject;
      const namespace = obj.metadata.namespace ?? "";
      const name = obj.metadata.name!;
      const cur = this.updateTarget(def, namespace, name, opts.expectRV, obj.metadata.uid);
      const old = JSON.parse(cur.data) as KubeObject;
      obj.metadata.uid = cur.uid;
      obj.metadata.creationTimestamp = old.metadata.creationTimestamp;
      obj.metadata.resourceVersion = String(cur.rv);
      this.allocations?.allocate(obj, old);
      if (unchanged(obj, cur.data)) return ok(cur.data); // a no-op keeps its resourceVersion
      if (opts.dryRun) return ok(JSON.stringify(obj));
      if (readyToRemove(obj)) {
        return ok(this.commit("DELETED", obj, cur));
      }
      return ok(this.commit("MODIFIED", obj, cur));
    });
    if (trace && reply.ok && !opts.dryRun) this.appendTrace(trace, at);
    return reply;
  }

  /** An update the Worker encoded against revision p.expectRV (prepared.ts): staged as sent if that is still stored. */
  async updatePrepared(res: string, p: PreparedUpdate, trace?: TraceAppend): Promise<Reply> {
    const at = Date.now();
    const reply = await this.answer(() => {
      const def = this.use(res);
      if (this.allocations) throw new StatusError(500, "InternalError", `${res} allocates: update it whole`);
      const cur = this.updateTarget(def, p.namespace, p.name, p.expectRV, p.uid);
      if (p.unchanged) return ok(cur.data);
      const key = this.fieldsOf(res, p);
      return ok(this.stage(p.remove ? "DELETED" : "MODIFIED", key, cur, (rv) => markedData(p, rv)));
    });
    if (trace && reply.ok) this.appendTrace(trace, at);
    return reply;
  }

  /**
   * A Binding applied to the stored pod and staged in one call (the apiserver's pods/binding,
   * api/strategies/pod-binding.ts): no read of the pod before it, no retry on a revision
   * that moved meanwhile. `trace` gets the bound pod's uid.
   */
  async bind(
    res: string,
    namespace: string,
    name: string,
    b: PodBinding,
    opts: { dryRun?: boolean } = {},
    trace?: TraceAppend,
  ): Promise<Reply> {
    const at = Date.now();
    let uid = "";
    const reply = await this.answer(() => {
      const def = this.use(res);
      const cur = this.row(namespace, name);
      if (!cur) throw notFound(def, name);
      const pod = JSON.parse(cur.data) as KubeObject;
      applyPodBinding(pod, b);
      uid = cur.uid;
      if (opts.dryRun) return ok(JSON.stringify(pod));
      return ok(this.commit("MODIFIED", pod, cur));
    });
    if (trace && reply.ok && !opts.dryRun) this.appendTrace({ ...trace, uid }, at);
    return reply;
  }

  /**
   * The stored row an update applies to, after its preconditions: the object exists, is at
   * revision `expectRV` when one is given, and has `uid` when one is given.
   */
  private updateTarget(
    def: ResourceDef,
    namespace: string,
    name: string,
    expectRV: string | undefined,
    uid: string | undefined,
  ): Row {
    const cur = this.row(namespace, name);
    if (!cur) throw notFound(def, name);
    if (expectRV !== undefined && expectRV !== String(cur.rv)) throw staleResourceVersion(def, name);
    checkUid(def, name, uid, cur);
    return cur;
  }

  async remove(res: string, namespace: string, name: string, opts: DeleteOptions = {}): Promise<Reply> {
    return this.answer(() => this.removeNow(this.use(res), namespace, name, opts));
  }

  /** Stages one delete (or the mark that starts a graceful one). */
  private removeNow(def: ResourceDef, namespace: string, name: string, opts: DeleteOptions): Answer {
    const cur = this.row(namespace, name);
    if (!cur) throw notFound(def, name);
    const pre = opts.preconditions;
    checkUid(def, name, pre?.uid, cur);
    if (pre?.resourceVersion && pre.resourceVersion !== String(cur.rv))
      throw conflict(
        def,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${cur.rv}`,
      );
    const obj = JSON.parse(cur.data) as KubeObject;
    const d = decideDelete(def, obj, opts, new Date());
    // a delete that only marks the object answers 200 with it, as upstream (202 is
    // reserved for orphanDependents=false, which the apiserver handles)
    if (d.action === "unchanged") return ok(cur.data, 200);
    if (d.action === "mark") {
      if (opts.dryRun) return ok(JSON.stringify(d.object), 200);
      return ok(this.commit("MODIFIED", d.object, cur), 200);
    }
    if (opts.dryRun) return ok(cur.data);
    return ok(this.commit("DELETED", obj, cur));
  }

  /**
   * Deletes every object a list query selects, in slices (collection.ts). The deleted objects
   * are answered as a stream: as a call's answer, a list over 32 MiB failed (a 500) after
   * every object in it was deleted.
   */
  async removeCollection(res: string, q: ListQuery, opts: DeleteOptions = {}): Promise<StreamReply> {
    let def: ResourceDef;
    try {
      def = this.use(res);
      this.flush();
    } catch (e) {
      return fail(e) as StreamReply;
    }
    const r = await deleteCollection(this, def, q, {
      remove: (namespace, name) =>
        this.removeNow(def, namespace, name, admittedOnly(def, opts, namespace, name)),
      commit: (write) => this.answer(write),
      revision: () => this.batch.lastRevision ?? this.revision,
    });
    return r.ok ? { ok: true, stream: new Response(r.body).body! } : r;
  }

  /** Runs a write and answers once what it staged (and anything it read that was staged) is written. */
  private async answer(write: () => Reply): Promise<Reply> {
    let reply: Reply;
    try {
      reply = write();
    } catch (e) {
      reply = fail(e);
    }
    try {
      await this.batch.written();
    } catch (e) {
      return fail(e);
    }
    return reply;
  }

  /** Watch requests, the only HTTP a shard serves (watch.ts: serveWatch). */
  override async fetch(request: Request): Promise<Response> {
    return serveWatch(this, request, (res) => this.use(res));
  }

  /** The front door's clients of these relayed watches went away. */
  async cancelRelayed(no: string, ids: number[]): Promise<void> {
    this.relays.cancel(no, ids);
  }

  /** Accepts a watch's WebSocket with the hibernation API; its filter travels with it. */
  acceptWatchSocket(ws: WebSocket, filter: WatchFilter): void {
    this.ctx.acceptWebSocket(ws);
    ws.serializeAttachment({ filter: attachedFilter(this.ctx.storage, filter) });
  }

  /** Watch sockets carry nothing from the client; a close from the client ends the watch. */
  override async webSocketMessage(): Promise<void> {}

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    try {
      ws.close(code === 1005 ? 1000 : code, "watch closed");
    } catch {
      // already closed
    }
  }

  // ---- commits ------------------------------------------------------------------------

  /**
   * Spans sent with a write of the pod (the agent's on its status, a binding's), kept once the
   * write is answered, also when it was a no-op; `at` is when the write was staged.
   */
  private appendTrace(t: TraceAppend, at: number): void {
    const spans = t.closeAtStore ? closeAt(t.spans, at) : t.spans;
    this.traces?.appendAll([{ ...t, spans }], (ns, name) => this.row(ns, name)?.uid);
  }

  /**
   * Stages one change for the next group commit and returns the stored JSON. Callers answer
   * only once the batch is written (see answer()); watchers hear of it then.
   */
  commit(type: Change["type"], obj: KubeObject, prev: Row | undefined, trace?: string): string {
    const meta = obj.metadata;
    const key = {
      namespace: meta.namespace ?? "",
      name: meta.name!,
      uid: meta.uid!,
      labels: meta.labels ?? {},
      fields: selectableFields(this.def!, obj),
    };
    const data = this.stage(
      type,
      key,
      prev,
      (rv) => {
        meta.resourceVersion = String(rv);
        return JSON.stringify(obj);
      },
      trace,
    );
    this.allocations?.record(obj, type === "DELETED");
    return data;
  }

  /**
   * The core of a commit: the object's stored JSON at its new revision comes from `encode`;
   * `trace` is a created pod's trace record, for its row.
   */
  private stage(
    type: Change["type"],
    key: Pick<PreparedCreate, "namespace" | "name" | "uid" | "labels" | "fields">,
    prev: Row | undefined,
    encode: (rv: number) => string,
    trace?: string,
  ): string {
    const rv = (this.batch.lastRevision ?? this.revision) + 1;
    const data = encode(rv);
    if (storedBytes(data) > MAX_STORED_BYTES) throw tooLarge("etcdserver: request is too large");
    this.batch.add({
      change: {
        rv,
        type,
        namespace: key.namespace,
        name: key.name,
        labels: key.labels,
        fields: key.fields,
        prevLabels: prev ? JSON.parse(prev.labels) : null,
        prevFields: prev ? JSON.parse(prev.fields) : null,
        data,
      },
      uid: key.uid,
      labelsJson: JSON.stringify(key.labels),
      fieldsJson: JSON.stringify(key.fields),
      prev,
      at: Date.now(),
      trace: trace || undefined,
    });
    if (type === "ADDED") this.names.add(key.namespace, key.name);
    this.count.staged(type);
    return data;
  }

  /**
   * Writes the staged changes in one transaction, then publishes them in order. Reads call
   * this first, so they always see every write staged before them.
   */
  flush(): void {
    const { staged, done } = this.batch.take();
    if (!staged.length) {
      done();
      return;
    }
    const now = Date.now();
    try {
      this.ctx.storage.transactionSync(() => writeStaged(this.sql, staged, now));
    } catch (e) {
      // nothing of the batch is stored: the ledger of allocations saw it, so it is rebuilt
      this.allocations?.forget();
      this.count.forget();
      done(e);
      return;
    }
    const before = this.revision;
    const changes = staged.map((s) => s.change);
    if (this.traces) this.traces.committed(staged, now);
    for (const c of changes) this.recent.push(c.rv, c.type, c.data);
    this.revision = changes.at(-1)!.rv;
    this.hub.publish(changes);
    if (changes.some((c) => c.type !== "DELETED")) this.armExpiry();
    // every 256 revisions, as before batching: whenever a batch crosses a multiple of 256
    if (Math.floor(before / 256) !== Math.floor(this.revision / 256)) this.compact(staged.at(-1)!.at);
    this.pokes.wake(this.def!.custom?.storeKey ?? resourceKey(this.def!));
    this.count.committed(this.def!);
    done();
  }

  // ---- expiry (Events) -----------------------------------------------------------------

  private expiryArmed = false;

  /** After a write of an expiring resource: make sure the alarm will look for expired objects. */
  private armExpiry(): void {
    if (this.expiryArmed) return;
    const ttl = this.def && ttlMs(this.def, this.settings);
    if (!ttl) return;
    this.expiryArmed = true;
    // the key this shard is called with: a spread resource's shard learns its number from it
    void this.ctx.storage.put(EXPIRY_RESOURCE_KEY, this.defKey ?? resourceKey(this.def!));
    void this.ctx.storage.setAlarm(Date.now() + expiryStepMs(ttl));
  }

  override async alarm(): Promise<void> {
    const res = await this.ctx.storage.get<string>(EXPIRY_RESOURCE_KEY);
    if (!res) return;
    const def = this.use(res);
    const ttl = ttlMs(def, this.settings);
    if (!ttl) return;
    const now = Date.now();
    this.flush();
    for (const row of expiredRows(this.sql, now - ttl))
      this.commit("DELETED", JSON.parse(row.data) as KubeObject, row);
    this.flush();
    // while anything is stored, look again a step later (an existence check, not a count)
    const left = this.sql.exec("SELECT 1 FROM objects LIMIT 1").toArray().length > 0;
    this.expiryArmed = left;
    if (left) await this.ctx.storage.setAlarm(now + expiryStepMs(ttl));
  }

  /**
   * Changes after `rv`, oldest first, at most `limit` (and at most changelog.ts's
   * CHANGES_MAX_CHARS of JSON); `upTo` is the revision they reach, the head when none was left
   * out; `expired` when the change log no longer reaches back that far (the caller re-lists).
   */
  async changesSince(
    res: string,
    rv: number,
    limit = 5000,
  ): Promise<{ expired: boolean; head: number; upTo: number; events: RecentChange[] }> {
    this.use(res);
    // Only what is written: staged changes are nobody's yet, and their commit pokes the
    // puller again. Writing them now would split the group commit in two.
    const head = this.revision;
    if (rv < this.compacted) return { expired: true, head, upTo: head, events: [] };
    const recent = this.recent.since(rv, limit); // one revision each, from rv + 1 on
    if (recent) return { expired: false, head, upTo: rv + recent.length, events: recent };
    const read = changesAfter(this.sql, rv, limit);
    return { expired: false, head, upTo: read.complete ? head : read.last, events: read.events };
  }

  /** Compacts the change log to the watch window (changelog.ts). */
  compact(now = Date.now()): void {
    this.compactTo(compactionPoint(this.sql, this.revision, this.settings, now));
  }

  private compactTo(wanted: number): void {
    const point = this.listPins.clamp(wanted);
    if (point <= this.compacted) return;
    this.ctx.storage.transactionSync(() => compactLog(this.sql, point));
    this.compacted = point;
  }

  /**
   * Its cluster was deleted (workers/clusters/teardown.ts): watches end, the rows, change log
   * and alarm are gone, and the object is reset (its next life starts empty).
   */
  async destroy(): Promise<void> {
    for (const ws of this.ctx.getWebSockets()) {
      try {
        ws.close(1001, "cluster deleted");
      } catch {
        // already closed
      }
    }
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.ctx.abort("cluster deleted");
  }

  /** Operator and test hook: compact the change log up to the head now. */
  async compactNow(): Promise<number> {
    this.flush();
    this.compactTo(this.revision);
    return this.compacted;
  }
}

/** A uid precondition, when one is given: 409 unless the stored object has that uid. */
/** A collection's delete of one object: only one admission let go, and only that very object. */
function admittedOnly(def: ResourceDef, opts: DeleteOptions, namespace: string, name: string): DeleteOptions {
  const { admitted, ...rest } = opts;
  if (!admitted) return opts;
  const uid = admitted[`${namespace}/${name}`];
  if (uid === undefined || (rest.preconditions?.uid && rest.preconditions.uid !== uid))
    throw notFound(def, name); // left out of the collection's answer
  return { ...rest, preconditions: { ...rest.preconditions, uid } };
}

function checkUid(def: ResourceDef, name: string, uid: string | undefined, cur: Row): void {
  if (uid && uid !== cur.uid)
    throw conflict(
      def,
      name,
      `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${cur.uid}`,
    );
}

/** A prepared write's JSON at revision `rv`. */
function markedData(p: PreparedCreate, rv: number): string {
  const data = preparedData(p, rv);
  if (data === undefined) throw new StatusError(500, "InternalError", "prepared write without its mark");
  return data;
}
