// A small in-memory cluster for controller unit tests: an Informers-like cache, an
// ApiClient-like client that applies writes to it at once (as the real write-through does)
// with resourceVersion conflicts, finalizers and graceful pod deletion (the store's own
// deletion rules), an event recorder, a manual clock, and a driver that runs controllers
// (watch handlers -> keys -> sync) until nothing is left to do.
import { alreadyExists, conflict, notFound, StatusError } from "../../../api/errors";
import { lookupGVR, lookupKey, resourceKey } from "../../../api/registry";
import type { ResourceDef } from "../../../api/resource";
import { scaleOf } from "../../../api/strategies/workloads";
import type { KubeObject } from "../../../api/types";
import type { Controller, ControllerContext } from "../../../durable-objects/controllers/runtime/controller";
import { resourcesOf } from "../../../durable-objects/controllers/runtime/subscriptions";
import { decideDelete, readyToRemove } from "../../../durable-objects/store/deletion";

export const CACHED = resourcesOf("controllers");

export function keyOf(obj: KubeObject): string {
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name!;
}

function mergePatch(target: any, patch: any): any {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return structuredClone(patch);
  const out = target && typeof target === "object" && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** Strategic merge for the one list the controllers patch that way: status.conditions by type. */
function strategicPatch(target: any, patch: any): any {
  const conds = patch?.status?.conditions;
  const out = mergePatch(target, {
    ...patch,
    status: patch.status ? { ...patch.status, conditions: undefined } : undefined,
  });
  if (Array.isArray(conds)) {
    const list = [...(target?.status?.conditions ?? [])];
    for (const c of conds) {
      const i = list.findIndex((x: any) => x.type === c.type);
      if (i >= 0) list[i] = { ...list[i], ...c };
      else list.push(c);
    }
    out.status = { ...(out.status ?? {}), conditions: list };
  }
  return JSON.parse(JSON.stringify(out));
}

export interface Write {
  verb: "create" | "update" | "patch" | "delete" | "deletecollection";
  res: string;
  key: string;
  sub?: string;
  body?: any;
}

type Handler = (res: string, obj: KubeObject, old: KubeObject | undefined) => void;

export class FakeCluster {
  now = Date.parse("2026-01-01T00:00:00Z");
  readonly writes: Write[] = [];
  readonly events: { name: string; type: string; reason: string; message: string }[] = [];
  readonly enqueued: { controller: string; key: string; afterMs?: number }[] = [];
  /** every resource's objects by key (cached or not) */
  private data = new Map<string, Map<string, KubeObject>>();
  private indexes = new Map<string, Map<string, (o: KubeObject) => string[]>>();
  private handlers: Handler[] = [];
  private rv = 100;
  private uid = 0;
  private names = 0;
  /** set to make the next write of this verb fail with this error */
  failNext: { verb: string; error: Error } | undefined;

  readonly informers = {
    resources: CACHED,
    get: (res: string, key: string) => this.map(res).get(key),
    list: (res: string, ns?: string) =>
      [...this.map(res).values()].filter((o) => ns === undefined || (o.metadata.namespace ?? "") === ns),
    keys: (res: string) => [...this.map(res).keys()],
    addIndex: (res: string, name: string, fn: (o: KubeObject) => string[]) => {
      if (!this.indexes.has(res)) this.indexes.set(res, new Map());
      this.indexes.get(res)!.set(name, fn);
    },
    byIndex: (res: string, name: string, value: string) => {
      const fn = this.indexes.get(res)?.get(name);
      if (!fn) throw new Error(`no index ${name} on ${res}`);
      return [...this.map(res).values()].filter((o) => fn(o).includes(value));
    },
  };

  readonly api = {
    create: (def: ResourceDef, obj: KubeObject) => this.create(def, obj),
    update: (def: ResourceDef, obj: KubeObject, sub?: string) => this.update(def, obj, sub),
    patch: (
      def: ResourceDef,
      ns: string | undefined,
      name: string,
      patch: any,
      type = "application/merge-patch+json",
      sub?: string,
    ) => this.patch(def, ns, name, patch, type, sub),
    remove: (def: ResourceDef, ns: string | undefined, name: string, opts: Record<string, any> = {}) =>
      this.remove(def, ns, name, opts),
    request: (method: string, path: string, body?: any) => this.request(method, path, body),
  };

  private map(res: string): Map<string, KubeObject> {
    let m = this.data.get(res);
    if (!m) this.data.set(res, (m = new Map()));
    return m;
  }

  onChange(h: Handler): void {
    this.handlers.push(h);
  }

  private put(res: string, obj: KubeObject | undefined, key: string): void {
    const old = this.map(res).get(key);
    if (obj) this.map(res).set(key, obj);
    else this.map(res).delete(key);
    for (const h of this.handlers) h(res, obj ?? old!, old);
  }

  iso(ms = this.now): string {
    return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
  }

  /** Seeds an object as if it had been created earlier (no write recorded). */
  add(res: string, obj: KubeObject): KubeObject {
    const o = structuredClone(obj);
    const def = lookupKey(res);
    o.apiVersion ??= def.group ? `${def.group}/${def.version}` : def.version;
    o.kind ??= def.kind;
    o.metadata.uid ??= `uid-${++this.uid}`;
    o.metadata.resourceVersion = String(++this.rv);
    o.metadata.creationTimestamp ??= this.iso();
    o.metadata.generation ??= 1;
    this.put(res, o, keyOf(o));
    return o;
  }

  get(res: string, key: string): KubeObject | undefined {
    return this.map(res).get(key);
  }

  list(res: string, ns?: string): KubeObject[] {
    return this.informers.list(res, ns);
  }

  private fail(verb: string): void {
    if (this.failNext?.verb === verb) {
      const e = this.failNext.error;
      this.failNext = undefined;
      throw e;
    }
  }

  private async create(def: ResourceDef, obj: KubeObject): Promise<KubeObject> {
    this.fail("create");
    const res = resourceKey(def);
    const o = structuredClone(obj);
    if (!o.metadata.name && o.metadata.generateName)
      o.metadata.name = `${o.metadata.generateName}${(++this.names).toString(36).padStart(5, "x")}`;
    const key = keyOf(o);
    if (this.map(res).has(key)) throw alreadyExists(def, o.metadata.name!);
    this.writes.push({ verb: "create", res, key, body: o });
    return this.add(res, o);
  }

  private store(def: ResourceDef, next: KubeObject): KubeObject {
    const res = resourceKey(def);
    next.metadata.resourceVersion = String(++this.rv);
    if (readyToRemove(next)) {
      this.put(res, undefined, keyOf(next));
      return next;
    }
    this.put(res, next, keyOf(next));
    return next;
  }

  private async update(def: ResourceDef, obj: KubeObject, sub?: string): Promise<KubeObject> {
    this.fail("update");
    const res = resourceKey(def);
    const key = keyOf(obj);
    const old = this.map(res).get(key);
    if (!old) throw notFound(def, obj.metadata.name!);
    if (obj.metadata.resourceVersion && obj.metadata.resourceVersion !== old.metadata.resourceVersion) {
      throw conflict(
        def,
        obj.metadata.name!,
        "the object has been modified; please apply your changes to the latest version and try again",
      );
    }
    this.writes.push({ verb: "update", res, key, sub, body: structuredClone(obj) });
    let next: KubeObject;
    if (sub === "status") next = { ...structuredClone(old), status: structuredClone(obj.status) };
    else {
      next = { ...structuredClone(obj), status: structuredClone(old.status) };
      if (JSON.stringify(obj.spec) !== JSON.stringify(old.spec))
        next.metadata.generation = (old.metadata.generation ?? 1) + 1;
    }
    next.metadata.uid = old.metadata.uid;
    next.metadata.creationTimestamp = old.metadata.creationTimestamp;
    next.metadata.deletionTimestamp = old.metadata.deletionTimestamp;
    return this.store(def, next);
  }

  private async patch(
    def: ResourceDef,
    ns: string | undefined,
    name: string,
    patch: any,
    type: string,
    sub?: string,
  ): Promise<KubeObject> {
    this.fail("patch");
    const res = resourceKey(def);
    const key = ns && def.namespaced ? `${ns}/${name}` : name;
    const old = this.map(res).get(key);
    if (!old) throw notFound(def, name);
    const rv = patch?.metadata?.resourceVersion;
    if (rv && rv !== old.metadata.resourceVersion)
      throw conflict(
        def,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
      );
    this.writes.push({ verb: "patch", res, key, sub, body: structuredClone(patch) });
    const next = type.includes("strategic") ? strategicPatch(old, patch) : mergePatch(old, patch);
    return this.store(def, next);
  }

  private async remove(
    def: ResourceDef,
    ns: string | undefined,
    name: string,
    opts: Record<string, any>,
  ): Promise<KubeObject | undefined> {
    this.fail("delete");
    const res = resourceKey(def);
    const key = ns && def.namespaced ? `${ns}/${name}` : name;
    const cur = this.map(res).get(key);
    if (!cur) throw notFound(def, name);
    if (opts.preconditions?.uid && opts.preconditions.uid !== cur.metadata.uid) {
      throw conflict(
        def,
        name,
        `Precondition failed: UID in precondition: ${opts.preconditions.uid}, UID in object meta: ${cur.metadata.uid}`,
      );
    }
    this.writes.push({ verb: "delete", res, key, body: opts });
    const d = decideDelete(def, cur, opts as any, new Date(this.now));
    if (d.action === "remove") {
      this.put(res, undefined, key);
      return cur;
    }
    if (d.action === "mark") {
      d.object.metadata.resourceVersion = String(++this.rv);
      this.put(res, d.object, key);
      return d.object;
    }
    return cur;
  }

  /** The node agent's part of graceful deletion: pods marked for deletion go for good. */
  finishPodDeletions(): void {
    for (const p of this.list("/pods"))
      if (p.metadata.deletionTimestamp && !(p.metadata.finalizers ?? []).length)
        this.put("/pods", undefined, keyOf(p));
  }

  private parse(path: string): { def: ResourceDef; ns?: string; name?: string; sub?: string } {
    const m = /^\/(?:api\/(v1)|apis\/([^/]+)\/([^/]+))\/(.*)$/.exec(path.split("?")[0]);
    if (!m) throw new Error(`bad path ${path}`);
    const group = m[2] ?? "";
    const version = m[1] ?? m[3];
    let seg = m[4].split("/").map(decodeURIComponent);
    let ns: string | undefined;
    if (seg[0] === "namespaces" && seg.length >= 3 && lookupGVR(group, version, seg[2])) {
      ns = seg[1];
      seg = seg.slice(2);
    }
    const def = lookupGVR(group, version, seg[0]);
    if (!def)
      throw new StatusError(404, "NotFound", `the server could not find the requested resource ${path}`);
    return { def, ns, name: seg[1], sub: seg[2] };
  }

  private async request(method: string, path: string, body?: any): Promise<any> {
    const { def, ns, name, sub } = this.parse(path);
    const res = resourceKey(def);
    if (method === "GET") {
      if (name) {
        const o = this.map(res).get(ns ? `${ns}/${name}` : name);
        if (!o) throw notFound(def, name);
        // the scale subresource: the object's autoscaling/v1 Scale, as the apiserver serves it
        if (sub === "scale") return scaleOf(o);
        return structuredClone(o);
      }
      return { kind: def.listKind, items: this.informers.list(res, ns) };
    }
    if (method === "DELETE" && !name) {
      this.writes.push({ verb: "deletecollection", res, key: ns ?? "" });
      for (const o of this.informers.list(res, ns)) await this.remove(def, ns, o.metadata.name!, body ?? {});
      return { kind: def.listKind, items: [] };
    }
    if (method === "DELETE") return this.remove(def, ns, name!, body ?? {});
    if (method === "PUT") return this.update(def, body, sub);
    if (method === "PATCH" && sub === "scale" && name) {
      const scaled = await this.patch(
        def,
        ns,
        name,
        { spec: { replicas: body?.spec?.replicas } },
        "merge",
        "scale",
      );
      return scaleOf(scaled);
    }
    throw new Error(`fake: ${method} ${path} not supported`);
  }

  ctx(controller = "test"): ControllerContext {
    return {
      informers: this.informers as any,
      api: this.api as any,
      recorder: {
        event: async (obj: KubeObject, type: string, reason: string, message: string) => {
          this.events.push({ name: obj.metadata.name!, type, reason, message });
        },
      } as any,
      enqueue: (key: string, afterMs?: number) => this.enqueued.push({ controller, key, afterMs }),
      now: () => this.now,
    };
  }

  /**
   * Runs controllers as the manager does: setup, resync keys, then every change calls the
   * watch handlers and the queued keys are synced, until no key is left (or `rounds` passes).
   * Delayed re-queues (enqueue with a delay) are only recorded, not run.
   */
  async run(controllers: Controller[], rounds = 50): Promise<void> {
    const queues = new Map<Controller, Set<string>>(controllers.map((c) => [c, new Set<string>()]));
    const ctxs = new Map(controllers.map((c) => [c, this.ctx(c.name)]));
    for (const c of controllers) c.setup?.(ctxs.get(c)!);
    const handler: Handler = (res, obj, old) => {
      for (const c of controllers) {
        const fn = c.watches[res];
        if (fn) for (const k of fn(obj, old, ctxs.get(c)!)) queues.get(c)!.add(k);
      }
    };
    this.handlers.push(handler);
    try {
      for (const c of controllers) for (const k of c.resync(ctxs.get(c)!)) queues.get(c)!.add(k);
      for (let i = 0; i < rounds; i++) {
        let any = false;
        for (const c of controllers) {
          const q = queues.get(c)!;
          const keys = [...q];
          q.clear();
          for (const k of keys) {
            any = true;
            const ctx = ctxs.get(c)!;
            // immediate re-queues go back on this queue
            const enqueue = ctx.enqueue;
            ctx.enqueue = (key, after) => (after ? enqueue(key, after) : q.add(key));
            try {
              await c.sync(k, ctx);
            } catch (e) {
              if (!(e instanceof StatusError)) throw e;
              q.add(k); // retried, as the queue would
            } finally {
              ctx.enqueue = enqueue;
            }
          }
        }
        if (!any) return;
      }
    } finally {
      this.handlers.splice(this.handlers.indexOf(handler), 1);
    }
  }
}

export function pod(
  name: string,
  o: {
    ns?: string;
    labels?: Record<string, string>;
    node?: string;
    phase?: string;
    ready?: boolean;
    readySince?: string;
    owner?: KubeObject;
    created?: string;
  } = {},
): KubeObject {
  const conditions =
    o.ready !== undefined
      ? [
          {
            type: "Ready",
            status: o.ready ? "True" : "False",
            lastTransitionTime: o.readySince ?? "2025-12-31T00:00:00Z",
          },
        ]
      : [];
  const p: KubeObject = {
    metadata: { name, namespace: o.ns ?? "default", labels: o.labels ?? {} },
    spec: { containers: [{ name: "c", image: "busybox" }], ...(o.node ? { nodeName: o.node } : {}) },
    status: { phase: o.phase ?? "Pending", conditions },
  };
  if (o.created) p.metadata.creationTimestamp = o.created;
  if (o.owner) {
    p.metadata.ownerReferences = [
      {
        apiVersion: o.owner.apiVersion!,
        kind: o.owner.kind!,
        name: o.owner.metadata.name!,
        uid: o.owner.metadata.uid!,
        controller: true,
        blockOwnerDeletion: true,
      },
    ];
  }
  return p;
}
