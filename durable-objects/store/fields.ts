// Field-selector values of an object: metadata.name and metadata.namespace for every
// resource, plus what the resource's strategy makes selectable.
import { hashText } from "../../api/hash";
import type { ResourceDef } from "../../api/resource";
import type { KubeObject } from "../../api/types";

export function selectableFields(def: ResourceDef, obj: KubeObject): Record<string, string> {
  const base: Record<string, string> = {
    "metadata.name": obj.metadata.name ?? "",
    "metadata.namespace": obj.metadata.namespace ?? "",
  };
  return def.strategy.fields ? { ...base, ...def.strategy.fields(obj) } : base;
}

const supportedCache = new WeakMap<ResourceDef, Set<string>>();

/** The field names a selector may use for this resource. */
export function supportedFields(def: ResourceDef): Set<string> {
  let s = supportedCache.get(def);
  if (!s) {
    const probe = { metadata: { name: "", namespace: "" }, spec: {}, status: {} } as KubeObject;
    let keys: string[] = [];
    try {
      keys = Object.keys(selectableFields(def, probe));
    } catch {
      keys = ["metadata.name", "metadata.namespace"];
    }
    s = new Set(keys);
    supportedCache.set(def, s);
  }
  return s;
}

/**
 * A number naming a custom resource's selectable paths (0 for none), kept in the shard's meta
 * table: when it differs from the def's, the stored field values are computed again.
 */
function fieldsSignature(paths: readonly string[]): number {
  if (!paths.length) return 0;
  return Number.parseInt(hashText(paths.join("\n")).slice(0, 8), 16) || 1;
}

const SIG_KEY = "fields_sig";

/** Whether the stored objects' field values were computed with other selectable fields than def's. */
export function storedFieldsStale(sql: SqlStorage, def: ResourceDef): boolean {
  const row = sql.exec<{ value: number }>("SELECT value FROM meta WHERE key = ?", SIG_KEY).toArray()[0];
  return (row?.value ?? 0) !== fieldsSignature(def.custom?.selectable ?? []);
}

/**
 * Computes every stored object's field values again (in the caller's transaction), as upstream
 * evaluates a custom resource's selectable fields on each object it filters: a field its CRD
 * newly declares selects the objects stored before too. The change log keeps the old values.
 */
export function recomputeStoredFields(sql: SqlStorage, def: ResourceDef): void {
  const rows = sql
    .exec<{ namespace: string; name: string; data: string }>("SELECT namespace, name, data FROM objects")
    .toArray();
  for (const r of rows)
    sql.exec(
      "UPDATE objects SET fields = ? WHERE namespace = ? AND name = ?",
      JSON.stringify(selectableFields(def, JSON.parse(r.data) as KubeObject)),
      r.namespace,
      r.name,
    );
  sql.exec(
    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
    SIG_KEY,
    fieldsSignature(def.custom?.selectable ?? []),
  );
}
