// What a create fills in, and a create prepared by the apiserver Worker: the Worker sets
// the system fields and writes the object's JSON itself, with a mark where the shard puts
// the resourceVersion, so the shard stages it without parsing and re-encoding the object.
import type { ResourceDef } from "../../api/resource";
import { rfc3339 } from "../../api/time";
import type { KubeObject, ObjectMeta } from "../../api/types";
import { readyToRemove } from "./deletion";
import { unchanged } from "./encoding";
import { selectableFields } from "./fields";
import type { PreparedCreate, PreparedUpdate } from "./protocol";

/** The fields a create sets, as upstream's BeforeCreate (uid, creation time) and strategies do. */
export function fillCreateFields(def: ResourceDef, meta: ObjectMeta): void {
  // a strategy may have given it already (a Job selects its pods by it before validation)
  meta.uid ||= crypto.randomUUID();
  meta.creationTimestamp = rfc3339();
  if (def.strategy.generation) meta.generation = 1;
  delete meta.deletionTimestamp;
  delete meta.deletionGracePeriodSeconds;
}

/** Whether a create of this resource may be prepared (the shard allocates nothing for it). */
export function preparable(def: ResourceDef): boolean {
  return !def.strategy.allocator;
}

/** Fills in `obj` (as fillCreateFields) and encodes it for the shard's createPrepared. */
export function prepareCreate(def: ResourceDef, obj: KubeObject): PreparedCreate {
  fillCreateFields(def, obj.metadata);
  const p = encodeMarked(def, obj);
  delete obj.metadata.resourceVersion;
  return p;
}

/** A stored object as read: its JSON and the system fields an update keeps, taken when it was read. */
export interface StoredBase {
  json: string;
  uid: string;
  creationTimestamp?: string;
  resourceVersion: string;
}

export function storedBase(json: string, obj: KubeObject): StoredBase {
  const m = obj.metadata;
  return {
    json,
    uid: m.uid ?? "",
    creationTimestamp: m.creationTimestamp,
    resourceVersion: m.resourceVersion ?? "",
  };
}

/**
 * Encodes an update of the stored object `base` to `obj` for the shard's updatePrepared,
 * deciding what the shard decides for a whole update (the system fields kept from the stored
 * object, whether anything changes, whether the object goes) against `base`; the shard applies
 * it only if `base` is still what it stores. `obj` is left at base's resourceVersion.
 */
export function prepareUpdate(def: ResourceDef, obj: KubeObject, base: StoredBase): PreparedUpdate {
  const meta = obj.metadata;
  // a uid the client sent is a precondition the shard checks; none means the stored one
  meta.uid ||= base.uid;
  meta.creationTimestamp = base.creationTimestamp;
  meta.resourceVersion = base.resourceVersion;
  const same = unchanged(obj, base.json);
  const remove = !same && readyToRemove(obj);
  const p = encodeMarked(def, obj);
  meta.resourceVersion = base.resourceVersion;
  return { ...p, expectRV: base.resourceVersion, unchanged: same, remove };
}

/** The object's JSON with a mark as its resourceVersion, and what the shard stores beside it. */
function encodeMarked(def: ResourceDef, obj: KubeObject): PreparedCreate {
  const meta = obj.metadata;
  // a mark no object holds by chance: the first occurrence is metadata.resourceVersion
  const rvMark = `rv:${crypto.randomUUID()}`;
  meta.resourceVersion = rvMark;
  return {
    json: JSON.stringify(obj),
    rvMark,
    namespace: meta.namespace ?? "",
    name: meta.name ?? "",
    uid: meta.uid ?? "",
    labels: meta.labels ?? {},
    fields: selectableFields(def, obj),
  };
}

/** The stored JSON of a prepared write at revision `rv`; undefined when the mark is missing. */
export function preparedData(p: PreparedCreate, rv: number): string | undefined {
  const mark = JSON.stringify(p.rvMark);
  const at = p.json.indexOf(mark);
  if (at < 0) return undefined;
  return `${p.json.slice(0, at)}"${rv}"${p.json.slice(at + mark.length)}`;
}
