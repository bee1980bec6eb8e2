// Objects as the controllers name and read them: cache keys (<namespace>/<name>), API paths,
// and reads of the live object past the cache.

import type { ResourceDef } from "../../../api/resource";
import type { KubeObject } from "../../../api/types";
import { isNotFound } from "./api-errors";

export function keyOf(obj: KubeObject): string {
  const ns = obj.metadata.namespace;
  return ns ? `${ns}/${obj.metadata.name}` : obj.metadata.name!;
}

export function splitKey(key: string): { namespace?: string; name: string } {
  const i = key.indexOf("/");
  return i < 0 ? { name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

/** The API path of a resource (collection, object or subresource), as the apiserver serves it. */
export function pathFor(def: ResourceDef, namespace?: string, name?: string, sub?: string): string {
  const base = def.group ? `/apis/${def.group}/${def.version}` : `/api/${def.version}`;
  const ns = def.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : "";
  let p = `${base}${ns}/${def.resource}`;
  if (name) p += `/${encodeURIComponent(name)}`;
  if (sub) p += `/${sub}`;
  return p;
}

/** A namespace that takes new objects: there, not being deleted, Active (or no phase yet). */
export function isNamespaceActive(ns: KubeObject | undefined): boolean {
  return !!ns && !ns.metadata.deletionTimestamp && (!ns.status?.phase || ns.status.phase === "Active");
}

/**
 * The object as the apiserver has it now (not as a cache does), undefined when it is not
 * there. `api` is a controller's client (its request method).
 */
export async function findLive(
  api: { request(method: string, path: string): Promise<any> },
  def: ResourceDef,
  namespace: string | undefined,
  name: string,
): Promise<KubeObject | undefined> {
  try {
    return (await api.request("GET", pathFor(def, namespace, name))) as KubeObject;
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}
