// Field-selector values of an object: metadata.name and metadata.namespace for every
// resource, plus what the resource's strategy makes selectable.
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
