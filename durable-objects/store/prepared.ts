// What a create fills in, and a create prepared by the apiserver Worker: the Worker sets
// the system fields and writes the object's JSON itself, with a mark where the shard puts
// the resourceVersion, so the shard stages it without parsing and re-encoding the object.
import type { ResourceDef } from "../../api/resource";
import type { KubeObject, ObjectMeta } from "../../api/types";
import { rfc3339 } from "./deletion";
import { selectableFields } from "./fields";
import type { PreparedCreate } from "./protocol";

/** The fields a create sets, as upstream's BeforeCreate (uid, creation time) and strategies do. */
export function fillCreateFields(def: ResourceDef, meta: ObjectMeta): void {
  meta.uid = crypto.randomUUID();
  meta.creationTimestamp = rfc3339(new Date());
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
  const meta = obj.metadata;
  fillCreateFields(def, meta);
  // a mark no object holds by chance: the first occurrence is metadata.resourceVersion
  const rvMark = `rv:${crypto.randomUUID()}`;
  meta.resourceVersion = rvMark;
  const json = JSON.stringify(obj);
  delete meta.resourceVersion;
  return {
    json,
    rvMark,
    namespace: meta.namespace ?? "",
    name: meta.name ?? "",
    uid: meta.uid ?? "",
    labels: meta.labels ?? {},
    fields: selectableFields(def, obj),
  };
}

/** The stored JSON of a prepared create at revision `rv`; undefined when the mark is missing. */
export function preparedData(p: PreparedCreate, rv: number): string | undefined {
  const mark = JSON.stringify(p.rvMark);
  const at = p.json.indexOf(mark);
  if (at < 0) return undefined;
  return `${p.json.slice(0, at)}"${rv}"${p.json.slice(at + mark.length)}`;
}
