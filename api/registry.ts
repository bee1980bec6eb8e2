// The generic registry's index: every served resource, found by group/version/resource,
// by "group/resource" key (the store shard's name) or by apiVersion+kind.
import { customViewKey, defFromCustomKey } from "./custom/key";
import { notFoundPath } from "./errors";
import type { ResourceDef } from "./resource";
import { apiVersionOf } from "./resource";
import { RESOURCES } from "./strategies";

const byKey = new Map<string, ResourceDef>();
const byGVR = new Map<string, ResourceDef>();
const byKind = new Map<string, ResourceDef>();
for (const def of RESOURCES) {
  // a key names the stored resource: a view of it in another version (storedIn) does not take it
  if (!def.storedIn || !byKey.has(resourceKey(def))) byKey.set(resourceKey(def), def);
  byGVR.set(`${def.group}/${def.version}/${def.resource}`, def);
  byKind.set(`${apiVersionOf(def)}/${def.kind}`, def);
}

/** "apps/deployments", "/pods": one store shard per key and cluster. */
export function resourceKey(def: { group: string; resource: string }): string {
  return `${def.group}/${def.resource}`;
}

export function lookupKey(key: string): ResourceDef {
  const def = byKey.get(key) ?? defFromCustomKey(key);
  if (!def) throw notFoundPath(`no resource ${key}`);
  return def;
}

/** "group/version/resource": how a watch names the shape (a view) it wants events in. */
export function viewKey(def: Pick<ResourceDef, "group" | "version" | "resource" | "custom">): string {
  // a custom resource's view is its store key in the version asked for (api/custom/key.ts)
  if (def.custom) return def.custom.viewKey ?? customViewKey(def.custom.storeKey, def.version);
  return `${def.group}/${def.version}/${def.resource}`;
}

/** The resource a view key names. */
export function lookupView(key: string): ResourceDef {
  const def = byGVR.get(key) ?? defFromCustomKey(key);
  if (!def) throw notFoundPath(`no resource ${key}`);
  return def;
}

export function lookupGVR(group: string, version: string, resource: string): ResourceDef | undefined {
  return byGVR.get(`${group}/${version}/${resource}`);
}

export function lookupKind(apiVersion: string, kind: string): ResourceDef | undefined {
  return byKind.get(`${apiVersion}/${kind}`);
}

export function allResources(): readonly ResourceDef[] {
  return RESOURCES;
}
