// The garbage collector (upstream pkg/controller/garbagecollector) for the cached resources:
// dependents whose owners are all gone are deleted; owners deleted in the foreground wait
// (foregroundDeletion finalizer) until their blocking dependents are gone; owners deleted with
// orphan propagation let go of their dependents first (orphan finalizer).

import { type Crd, isEstablished } from "../../../api/custom/definition";
import { lookupKey, resourceKey } from "../../../api/registry";
import type { ResourceDef } from "../../../api/resource";
import type { KubeObject, OwnerReference } from "../../../api/types";
import { CRDS, kindDef, storedDef } from "../crd/custom-kinds";
import { isConflict, isNotFound } from "../lib/api-errors";
import { byOwner, INDEX_OWNER } from "../lib/claim";
import { findLive, keyOf, pathFor } from "../lib/objects";
import type { Controller, ControllerContext } from "../runtime/controller";
import { resourcesOf } from "../runtime/subscriptions";

export const FOREGROUND = "foregroundDeletion";
export const ORPHAN = "orphan";
const CACHED = resourcesOf("controllers");

const itemKey = (res: string, obj: KubeObject) => `${res}|${keyOf(obj)}`;

/** The owner's resource: built in, or a custom resource of a CRD in the cache. */
function ownerDef(ref: OwnerReference, ctx: ControllerContext): ResourceDef | undefined {
  return kindDef(ctx, ref.apiVersion, ref.kind);
}

const hasFinalizer = (o: KubeObject, f: string) => !!o.metadata.finalizers?.includes(f);

/** Every cached object with an ownerReference to `uid`, with its resource key. */
function dependentsOf(ctx: ControllerContext, uid: string): { res: string; obj: KubeObject }[] {
  const out: { res: string; obj: KubeObject }[] = [];
  for (const res of ctx.informers.resources)
    for (const obj of ctx.informers.byIndex(res, INDEX_OWNER, uid)) out.push({ res, obj });
  return out;
}

type OwnerState = { state: "absent" } | { state: "present"; owner: KubeObject } | { state: "unknown" };

/** Looks an owner up in the caches, confirming an apparent absence with a live read. */
async function resolveOwner(
  ctx: ControllerContext,
  ref: OwnerReference,
  namespace: string | undefined,
): Promise<OwnerState> {
  const def = ownerDef(ref, ctx);
  if (!def) return { state: "unknown" };
  if (def.namespaced && !namespace) return { state: "unknown" };
  const ns = def.namespaced ? namespace : undefined;
  const res = resourceKey(def);
  if (ctx.informers.resources.includes(res)) {
    const cached = ctx.informers.get(res, ns ? `${ns}/${ref.name}` : ref.name);
    if (cached && cached.metadata.uid === ref.uid) return { state: "present", owner: cached };
  }
  const live = await findLive(ctx.api, def, ns, ref.name);
  return live?.metadata?.uid === ref.uid ? { state: "present", owner: live } : { state: "absent" };
}

async function patchOwnerRefs(
  ctx: ControllerContext,
  def: ResourceDef,
  obj: KubeObject,
  drop: Set<string>,
): Promise<void> {
  const refs = (obj.metadata.ownerReferences ?? []).filter((r) => !drop.has(r.uid));
  try {
    await ctx.api.patch(def, obj.metadata.namespace, obj.metadata.name!, {
      metadata: { ownerReferences: refs.length ? refs : null, resourceVersion: obj.metadata.resourceVersion },
    });
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}

async function removeFinalizer(
  ctx: ControllerContext,
  def: ResourceDef,
  obj: KubeObject,
  f: string,
): Promise<void> {
  const rest = (obj.metadata.finalizers ?? []).filter((x) => x !== f);
  try {
    await ctx.api.patch(def, obj.metadata.namespace, obj.metadata.name!, {
      metadata: { finalizers: rest.length ? rest : null, resourceVersion: obj.metadata.resourceVersion },
    });
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}

async function deleteItem(
  ctx: ControllerContext,
  def: ResourceDef,
  obj: KubeObject,
  policy: string,
): Promise<void> {
  try {
    await ctx.api.remove(def, obj.metadata.namespace, obj.metadata.name!, {
      propagationPolicy: policy,
      preconditions: { uid: obj.metadata.uid },
    });
  } catch (e) {
    // gone already, or replaced by a namesake (uid precondition failed): nothing of ours to delete
    if (!isNotFound(e) && !isConflict(e)) throw e;
  }
}

/** Upstream attemptToDeleteItem: classify the owners, then delete, detach or leave the item. */
async function attemptToDelete(ctx: ControllerContext, def: ResourceDef, obj: KubeObject): Promise<void> {
  if (obj.metadata.deletionTimestamp && !hasFinalizer(obj, FOREGROUND)) return;
  const solid: OwnerReference[] = [];
  const dangling: OwnerReference[] = [];
  const waiting: OwnerReference[] = [];
  for (const ref of obj.metadata.ownerReferences ?? []) {
    const r = await resolveOwner(ctx, ref, obj.metadata.namespace);
    if (r.state === "absent") dangling.push(ref);
    else if (r.state === "present" && r.owner.metadata.deletionTimestamp && hasFinalizer(r.owner, FOREGROUND))
      waiting.push(ref);
    else solid.push(ref);
  }
  if (solid.length) {
    if (dangling.length || waiting.length)
      await patchOwnerRefs(ctx, def, obj, new Set([...dangling, ...waiting].map((r) => r.uid)));
    return;
  }
  if (!dangling.length && !waiting.length) return;
  if (waiting.length && dependentsOf(ctx, obj.metadata.uid!).length)
    return deleteItem(ctx, def, obj, "Foreground");
  const policy = hasFinalizer(obj, ORPHAN)
    ? "Orphan"
    : hasFinalizer(obj, FOREGROUND)
      ? "Foreground"
      : "Background";
  await deleteItem(ctx, def, obj, policy);
}

/** Key of the pass over one CRD's objects that wait for the collector (they are not cached). */
export const CUSTOM_OWNERS = "custom|";
const CUSTOM_PREFIX = CUSTOM_OWNERS;

/** The CRD name ("crontabs.stable.example.com") of a custom resource's store key. */
export function customCrdName(storeKey: string): string | undefined {
  const m = /^([^/#]+)\/([^/#]+)#/.exec(storeKey);
  return m ? `${m[2]}.${m[1]}` : undefined;
}

/**
 * The objects of a custom resource that the collector has business with (being deleted in the
 * foreground or orphaning, or owned): read live (the caches hold only built-in kinds), each
 * then handled as a cached one is.
 */
async function syncCustomOwners(crdName: string, ctx: ControllerContext): Promise<void> {
  const crd = ctx.informers.get(CRDS, crdName) as Crd | undefined;
  const def = crd && isEstablished(crd) ? storedDef(crd) : undefined;
  if (!def) return;
  const items = ((await ctx.api.request("GET", pathFor(def)))?.items ?? []) as KubeObject[];
  // ones deleted in the foreground or orphaning, and ones whose owners may be gone
  for (const obj of items)
    if (
      obj.metadata.ownerReferences?.length ||
      (obj.metadata.deletionTimestamp && (hasFinalizer(obj, FOREGROUND) || hasFinalizer(obj, ORPHAN)))
    )
      await collect(ctx, def, obj);
  // cached objects owned by one of them that is gone are looked at now, not at the resync
  const live = new Set(items.map((o) => o.metadata.uid));
  for (const res of ctx.informers.resources)
    for (const dep of ctx.informers.byIndex(res, INDEX_OWNER_KIND, `${def.group}/${def.kind}`))
      if (
        dep.metadata.ownerReferences?.some(
          (r) => ownerKind(r) === `${def.group}/${def.kind}` && !live.has(r.uid),
        )
      )
        ctx.enqueue(itemKey(res, dep));
}

const INDEX_OWNER_KIND = "ownerGroupKind";
/** "<group>/<Kind>" of an owner reference (its apiVersion's version left out). */
const ownerKind = (r: OwnerReference) =>
  `${r.apiVersion.includes("/") ? r.apiVersion.split("/")[0] : ""}/${r.kind}`;
const byOwnerKind = (o: KubeObject): string[] => (o.metadata.ownerReferences ?? []).map(ownerKind);

export async function syncGarbage(key: string, ctx: ControllerContext): Promise<void> {
  if (key.startsWith(CUSTOM_PREFIX)) return syncCustomOwners(key.slice(CUSTOM_PREFIX.length), ctx);
  const bar = key.indexOf("|");
  const res = key.slice(0, bar);
  const obj = ctx.informers.get(res, key.slice(bar + 1));
  if (!obj) return;
  return collect(ctx, resourceDef(res), obj);
}

/** One object's part in collection: its orphan or foreground finalizer, or its owners. */
async function collect(ctx: ControllerContext, def: ResourceDef, obj: KubeObject): Promise<void> {
  if (obj.metadata.deletionTimestamp && hasFinalizer(obj, ORPHAN)) {
    for (const dep of dependentsOf(ctx, obj.metadata.uid!))
      await patchOwnerRefs(ctx, resourceDef(dep.res), dep.obj, new Set([obj.metadata.uid!]));
    return removeFinalizer(ctx, def, obj, ORPHAN);
  }
  if (obj.metadata.deletionTimestamp && hasFinalizer(obj, FOREGROUND)) {
    const deps = dependentsOf(ctx, obj.metadata.uid!);
    const blocking = deps.filter((d) =>
      d.obj.metadata.ownerReferences?.some((r) => r.uid === obj.metadata.uid && r.blockOwnerDeletion),
    );
    if (!blocking.length) return removeFinalizer(ctx, def, obj, FOREGROUND);
    for (const d of deps)
      if (!d.obj.metadata.deletionTimestamp || hasFinalizer(d.obj, FOREGROUND))
        ctx.enqueue(itemKey(d.res, d.obj));
    return;
  }
  if (obj.metadata.ownerReferences?.length) await attemptToDelete(ctx, def, obj);
}

function resourceDef(res: string): ResourceDef {
  return lookupKey(res);
}

/** The GC keys a change concerns: the object itself, its dependents when it goes, its deleting owners. */
function keysFor(
  res: string,
  obj: KubeObject,
  old: KubeObject | undefined,
  ctx: ControllerContext,
): string[] {
  const keys = new Set<string>();
  const gone = !ctx.informers.get(res, keyOf(obj));
  if (
    !gone &&
    (obj.metadata.ownerReferences?.length ||
      (obj.metadata.deletionTimestamp && (hasFinalizer(obj, FOREGROUND) || hasFinalizer(obj, ORPHAN))))
  ) {
    keys.add(itemKey(res, obj));
  }
  if (gone || obj.metadata.deletionTimestamp)
    for (const d of dependentsOf(ctx, obj.metadata.uid!)) keys.add(itemKey(d.res, d.obj));
  for (const o of old ? [obj, old] : [obj]) {
    for (const ref of o.metadata.ownerReferences ?? []) {
      const def = ownerDef(ref, ctx);
      if (!def) continue;
      if (def.custom) {
        // a custom owner is not cached: a dependent that goes may let one deleted in the foreground go
        const crd = customCrdName(def.custom.storeKey);
        if (crd && (gone || obj.metadata.deletionTimestamp)) keys.add(`${CUSTOM_PREFIX}${crd}`);
        continue;
      }
      const ores = resourceKey(def);
      if (!ctx.informers.resources.includes(ores)) continue;
      const owner = ctx.informers.get(
        ores,
        def.namespaced ? `${o.metadata.namespace}/${ref.name}` : ref.name,
      );
      if (owner && owner.metadata.uid === ref.uid && owner.metadata.deletionTimestamp)
        keys.add(itemKey(ores, owner));
    }
  }
  return [...keys];
}

export const garbageCollector: Controller = {
  name: "garbage-collector",
  setup(ctx) {
    for (const res of ctx.informers.resources) {
      ctx.informers.addIndex(res, INDEX_OWNER, byOwner);
      ctx.informers.addIndex(res, INDEX_OWNER_KIND, byOwnerKind);
    }
  },
  watches: Object.fromEntries(
    CACHED.map((res) => [
      res,
      (obj: KubeObject, old: KubeObject | undefined, ctx: ControllerContext) => keysFor(res, obj, old, ctx),
    ]),
  ),
  resync(ctx) {
    const keys: string[] = [];
    for (const res of ctx.informers.resources) {
      for (const obj of ctx.informers.list(res)) {
        const m = obj.metadata;
        if (
          m.ownerReferences?.length ||
          (m.deletionTimestamp && (hasFinalizer(obj, FOREGROUND) || hasFinalizer(obj, ORPHAN)))
        )
          keys.push(itemKey(res, obj));
      }
    }
    // custom objects deleted in the foreground or orphaning are found on this pass
    for (const name of ctx.informers.keys(CRDS)) keys.push(`${CUSTOM_PREFIX}${name}`);
    return keys;
  },
  sync: syncGarbage,
};
