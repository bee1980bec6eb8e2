// Informer-style caches for the control plane's own objects: filled by a list, kept current
// by pulling each shard's change log when the shard pokes, re-listed when the log no longer
// reaches back (410). Writes the components make are applied at once (write-through), so a
// controller never acts twice on a state its own write already changed.
import { StatusError } from "../../../api/errors";
import { lookupKey } from "../../../api/registry";
import type { KubeObject } from "../../../api/types";
import type { Env } from "../../env";
import { resourcePlan, Store, storeObjectName } from "../../store/client";
import type { StoreShard } from "../../store/shard";
import { parseVector, type ShardPlan, shardKey, shardOf } from "../../store/shard-plan";
import { decodeChange } from "./shared-changes";
import { StringPool } from "./strings";

export type ChangeType = "ADDED" | "MODIFIED" | "DELETED";
export type Handler = (res: string, type: ChangeType, obj: KubeObject, old: KubeObject | undefined) => void;

export function keyOf(obj: KubeObject): string {
  const ns = obj.metadata.namespace;
  return ns ? `${ns}/${obj.metadata.name}` : obj.metadata.name!;
}

/**
 * Objects per page of a relist. A whole list crosses to the informer as one call's answer,
 * and workerd refuses an answer over 32 MiB: after a restart with ~20,000 pods stored, the
 * controllers' and the scheduler's first list failed on every poke, so neither ever started
 * and each retry built the whole list again on the one thread. A page is one call and one
 * parse of a few hundred objects, over the one snapshot the first page pins.
 */
const RELIST_PAGE = 500;

/** Objects put in a relist's new cache between two turns of the thread. */
const RELIST_SLICE = 2000;

/** Gives up the thread for a timer's turn: requests waiting meanwhile are read and run. */
function nextTurn(): Promise<void> {
  return new Promise((r) => setTimeout(r, 0));
}

function rvOf(obj: KubeObject | undefined): number {
  return obj ? Number(obj.metadata.resourceVersion ?? 0) : 0;
}

/**
 * Drops, in place, what no component reads from the caches. Field ownership of every object
 * (upstream's informers strip managedFields too): about half of a cached pod. And a pod's
 * volumes and volume mounts (no component reads them; each pod has at least its projected
 * service-account token volume): over 40% of what is left. A cached
 * pod then takes ~1.3 KB of heap instead of ~2.3 KB without managedFields alone and ~4.3 KB
 * whole (measured in Node on a hand-built pod in the shape the apiserver stores), which
 * shortens every full collection of the isolate holding the caches. The fields are set to
 * undefined, not deleted: deleting a property that is not an object's last turns it into a
 * slower and larger dictionary. Volumes on claims stay: the scheduler's VolumeBinding and the
 * PVC protection controller read them.
 */
export function lighten(res: string, obj: KubeObject): void {
  if (obj.metadata.managedFields !== undefined) obj.metadata.managedFields = undefined;
  if (res !== "/pods") return;
  const spec = obj.spec as { volumes?: unknown; [list: string]: unknown } | undefined;
  if (!spec) return;
  if (spec.volumes !== undefined) spec.volumes = claimVolumes(spec.volumes);
  for (const list of ["initContainers", "containers", "ephemeralContainers"])
    for (const c of (spec[list] as { volumeMounts?: unknown }[] | undefined) ?? [])
      if (c.volumeMounts !== undefined) c.volumeMounts = undefined;
}

/** Of a pod's volumes, those on claims (the scheduler's VolumeBinding and PVC protection read them). */
function claimVolumes(volumes: unknown): unknown[] | undefined {
  if (!Array.isArray(volumes)) return undefined;
  const kept = volumes.filter((v) => v?.persistentVolumeClaim || v?.ephemeral);
  return kept.length ? kept : undefined;
}

class Cache {
  readonly byKey = new Map<string, KubeObject>();
  readonly byNamespace = new Map<string, Map<string, KubeObject>>();
  readonly indexes = new Map<
    string,
    { fn: (o: KubeObject) => string[]; map: Map<string, Map<string, KubeObject>> }
  >();
  /** how far the cache follows each shard of the resource (one, unless it is spread) */
  rvs: number[] = [0];

  /** An index by computed values, built over what is cached and kept as objects come and go. */
  addIndex(name: string, fn: (o: KubeObject) => string[]): void {
    if (this.indexes.has(name)) return;
    const ix = { fn, map: new Map<string, Map<string, KubeObject>>() };
    this.indexes.set(name, ix);
    for (const [key, o] of this.byKey) {
      for (const v of fn(o)) {
        let s = ix.map.get(v);
        if (!s) ix.map.set(v, (s = new Map()));
        s.set(key, o);
      }
    }
  }

  /** An empty cache with the same indexes. */
  emptyLike(): Cache {
    const c = new Cache();
    for (const [name, ix] of this.indexes) c.indexes.set(name, { fn: ix.fn, map: new Map() });
    return c;
  }

  put(obj: KubeObject): void {
    const key = keyOf(obj);
    const old = this.byKey.get(key);
    if (old) this.unindex(key, old);
    this.byKey.set(key, obj);
    const ns = obj.metadata.namespace ?? "";
    let m = this.byNamespace.get(ns);
    if (!m) this.byNamespace.set(ns, (m = new Map()));
    m.set(key, obj);
    for (const ix of this.indexes.values()) {
      for (const v of ix.fn(obj)) {
        let s = ix.map.get(v);
        if (!s) ix.map.set(v, (s = new Map()));
        s.set(key, obj);
      }
    }
  }

  remove(key: string): void {
    const old = this.byKey.get(key);
    if (!old) return;
    this.unindex(key, old);
    this.byKey.delete(key);
  }

  private unindex(key: string, old: KubeObject): void {
    this.byNamespace.get(old.metadata.namespace ?? "")?.delete(key);
    for (const ix of this.indexes.values()) for (const v of ix.fn(old)) ix.map.get(v)?.delete(key);
  }
}

export class Informers {
  private caches = new Map<string, Cache>();
  private handlers: Handler[] = [];
  private pulling = new Map<string, Promise<void>>();
  private again = new Set<string>();
  /** each resource's shard stubs, kept (see store/pokes.ts); one dropped when its pull fails */
  private stubs = new Map<string, DurableObjectStub<StoreShard>[]>();
  /** per resource, the shards poked since its pull began ("all": every shard) */
  private dirty = new Map<string, Set<number> | "all">();
  /** how each resource is spread over shards (store/shard-plan.ts) */
  private plans = new Map<string, ShardPlan>();
  /** repeated values of the cached objects, kept once (strings.ts) */
  private readonly strings = new StringPool();

  /**
   * filters: per resource, which objects to keep (the others are never cached, and an object
   * that stops matching leaves the cache as if deleted)
   */
  constructor(
    private readonly env: Env,
    readonly resources: string[],
    private readonly filters: Record<string, (obj: KubeObject) => boolean> = {},
  ) {
    for (const r of resources) this.caches.set(r, new Cache());
  }

  onChange(h: Handler): void {
    this.handlers.push(h);
  }

  /**
   * An index of a resource's objects by computed values (e.g. pods by node name). Controllers
   * that rely on the same index each ask for it; it is built once.
   */
  addIndex(res: string, name: string, fn: (o: KubeObject) => string[]): void {
    this.cache(res).addIndex(name, fn);
  }

  private cache(res: string): Cache {
    const c = this.caches.get(res);
    if (!c) throw new Error(`resource ${res} is not cached here`);
    return c;
  }

  get(res: string, key: string): KubeObject | undefined {
    return this.cache(res).byKey.get(key);
  }

  list(res: string, namespace?: string): KubeObject[] {
    const c = this.cache(res);
    if (namespace === undefined) return [...c.byKey.values()];
    return [...(c.byNamespace.get(namespace)?.values() ?? [])];
  }

  byIndex(res: string, index: string, value: string): KubeObject[] {
    return [...(this.cache(res).indexes.get(index)?.map.get(value)?.values() ?? [])];
  }

  keys(res: string): string[] {
    return [...this.cache(res).byKey.keys()];
  }

  /**
   * Fills a resource's cache from a list; emits ADDED/MODIFIED/DELETED for differences from
   * before. The new cache is built beside the old one a slice at a time, giving up the thread
   * between slices, and replaces it in one step, so no controller sees half a list: filled
   * in one go, 50,000 pods held every request ~0.8 s after a restart. Writes this component
   * made meanwhile (observe) that are newer than the list stay.
   */
  async relist(res: string): Promise<void> {
    const list = await this.listAll(res);
    const fresh = this.cache(res).emptyLike();
    for (let i = 0; i < list.items.length; i += RELIST_SLICE) {
      for (const obj of list.items.slice(i, i + RELIST_SLICE)) fresh.put(obj);
      await nextTurn();
    }
    const before = this.cache(res);
    for (const [name, ix] of before.indexes) if (!fresh.indexes.has(name)) fresh.addIndex(name, ix.fn);
    const plan = this.plan(res);
    for (const [key, o] of before.byKey) {
      const n = fresh.byKey.get(key);
      const shardRv = list.rvs[shardOf(plan, o.metadata.namespace ?? "", o.metadata.name ?? "")] ?? 0;
      if (n ? rvOf(o) > rvOf(n) : rvOf(o) > shardRv) fresh.put(o);
    }
    fresh.rvs = list.rvs;
    this.caches.set(res, fresh);
    for (const [key, obj] of fresh.byKey) {
      const old = before.byKey.get(key);
      if (!old) this.emit(res, "ADDED", obj, undefined);
      else if (rvOf(old) !== rvOf(obj)) this.emit(res, "MODIFIED", obj, old);
    }
    for (const [key, old] of before.byKey) if (!fresh.byKey.has(key)) this.emit(res, "DELETED", old, old);
  }

  /**
   * Every object of `res`, as the caches keep them (lighten), and the list's revision, read
   * a page at a time (RELIST_PAGE).
   */
  private async listAll(res: string): Promise<{ items: KubeObject[]; rvs: number[] }> {
    const store = new Store(this.env, lookupKey(res));
    for (;;) {
      const items: KubeObject[] = [];
      let next: string | undefined;
      try {
        for (;;) {
          const page = JSON.parse(await store.listText({ limit: RELIST_PAGE, continue: next }));
          const keep = this.filters[res];
          for (const obj of page.items ?? []) {
            if (keep && !keep(obj)) continue;
            lighten(res, obj);
            this.strings.share(obj);
            items.push(obj);
          }
          next = page.metadata?.continue || undefined;
          if (!next) return { items, rvs: parseVector(String(page.metadata?.resourceVersion ?? "0")) };
          await nextTurn();
        }
      } catch (e) {
        // the snapshot left the watch window while its pages were read: list again, from now
        if (!(next && e instanceof StatusError && e.code === 410)) throw e;
      }
    }
  }

  async startAll(): Promise<void> {
    await Promise.all(this.resources.map((r) => this.relist(r)));
  }

  /**
   * Pulls the changes of one resource (of one of its shards, when `shard` says which poked);
   * concurrent calls coalesce into one more pull.
   */
  pull(res: string, shard?: number): Promise<void> {
    const d = this.dirty.get(res);
    if (shard === undefined || this.plan(res).count === 1) this.dirty.set(res, "all");
    else if (d !== "all") this.dirty.set(res, (d ?? new Set<number>()).add(shard));
    const running = this.pulling.get(res);
    if (running) {
      this.again.add(res);
      return running;
    }
    const p = (async () => {
      try {
        do {
          this.again.delete(res);
          const which = this.dirty.get(res) ?? "all";
          this.dirty.delete(res);
          await this.pullOnce(res, which);
        } while (this.again.has(res));
      } finally {
        this.pulling.delete(res);
      }
    })();
    this.pulling.set(res, p);
    return p;
  }

  private plan(res: string): ShardPlan {
    let plan = this.plans.get(res);
    if (!plan) {
      plan = resourcePlan(this.env, lookupKey(res));
      this.plans.set(res, plan);
    }
    return plan;
  }

  /** Pulls the shards named (or all) of the resource in turn; a relist (410 from any) ends the pull. */
  private async pullOnce(res: string, which: Set<number> | "all"): Promise<void> {
    const count = this.plan(res).count;
    let stubs = this.stubs.get(res);
    if (!stubs) this.stubs.set(res, (stubs = []));
    for (let i = 0; i < count; i++) {
      if (which !== "all" && !which.has(i)) continue;
      let stub = stubs[i];
      if (!stub) {
        const name = storeObjectName(this.env.EDGEPLANE_CLUSTER, res, i);
        stubs[i] = stub = this.env.STORE.get(this.env.STORE.idFromName(name));
      }
      if (!(await this.pullShard(res, i, stub))) return;
    }
  }

  /** Pulls one shard's changes; false when the resource was listed again instead. */
  private async pullShard(res: string, i: number, stub: DurableObjectStub<StoreShard>): Promise<boolean> {
    for (;;) {
      const r = await stub
        .changesSince(shardKey(res, i), this.cache(res).rvs[i] ?? 0, 2000)
        .catch((e: unknown) => {
          delete this.stubs.get(res)![i];
          throw e;
        });
      // read after the call: a relist replaces a resource's cache
      const c = this.cache(res);
      if (r.expired) {
        await this.relist(res);
        return false;
      }
      for (const e of r.events) {
        const { obj, prepared } = decodeChange(res, e.data, (o) => this.prepare(res, o));
        this.apply(res, c, e.type as ChangeType, obj, prepared);
        c.rvs[i] = Math.max(c.rvs[i] ?? 0, rvOf(obj));
      }
      c.rvs[i] = Math.max(c.rvs[i] ?? 0, r.upTo);
      if (r.upTo >= r.head) return true;
    }
  }

  /** A write this component made, applied before its change event arrives. */
  observe(res: string, obj: KubeObject, deleted = false): void {
    const c = this.caches.get(res);
    if (c) this.apply(res, c, deleted ? "DELETED" : "MODIFIED", obj);
  }

  /** What the caches keep of an object (lighten), its strings pooled. */
  private prepare(res: string, obj: KubeObject): void {
    lighten(res, obj);
    this.strings.share(obj);
  }

  /** `prepared`: the object is lightened and pooled already (decodeChange), and shared: read only. */
  private apply(res: string, c: Cache, type: ChangeType, obj: KubeObject, prepared = false): void {
    const key = keyOf(obj);
    const old = c.byKey.get(key);
    const keep = this.filters[res];
    const kept = !keep || keep(obj);
    if (!old && !kept) return; // never cached
    if (!prepared) this.prepare(res, obj);
    if (old && rvOf(old) > rvOf(obj)) return; // already newer (a write-through got ahead)
    if (type === "DELETED" || !kept) {
      if (!old) return;
      c.remove(key);
      this.emit(res, "DELETED", obj, old);
      return;
    }
    if (old && rvOf(old) === rvOf(obj)) return;
    c.put(obj);
    this.emit(res, old ? "MODIFIED" : "ADDED", obj, old);
  }

  private emit(res: string, type: ChangeType, obj: KubeObject, old: KubeObject | undefined): void {
    for (const h of this.handlers) {
      try {
        h(res, type, obj, old);
      } catch (e) {
        console.error("informer handler failed", e);
      }
    }
  }
}
