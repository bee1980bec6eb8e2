// How a custom resource is named to its store shard. Built-in resources are found by key in
// the static registry; a custom one is known only from its CustomResourceDefinition, which a
// shard does not read. So the key a shard is called with carries what the shard needs to
// write and list the objects (kind, list kind, storage version, scope):
//   "<group>/<plural>#<Kind>,<ListKind>,<version>,<N|C>"
// and a watch in another served version names its view the same way with that version.
// The shard's Durable Object is still named by "<group>/<plural>" alone.
import { apiVersionOf, type ResourceDef, STANDARD_VERBS } from "../resource";

export interface CustomKeyParts {
  group: string;
  resource: string;
  kind: string;
  listKind: string;
  version: string;
  namespaced: boolean;
}

export function customKey(p: CustomKeyParts): string {
  return `${p.group}/${p.resource}#${p.kind},${p.listKind},${p.version},${p.namespaced ? "N" : "C"}`;
}

/** The "<group>/<plural>" part: the shard's name. */
export function shardName(key: string): string {
  const i = key.indexOf("#");
  return i < 0 ? key : key.slice(0, i);
}

const decoded = new Map<string, ResourceDef>();

/**
 * The def a shard (or a watch's view) works with for a custom key: names, scope and version,
 * no validation or defaulting (the Worker did those). Undefined for any other key.
 */
export function defFromCustomKey(key: string): ResourceDef | undefined {
  const hit = decoded.get(key);
  if (hit) return hit;
  const m = /^([^/#]+)\/([^/#]+)#([^,]+),([^,]+),([^,]+),([NC])$/.exec(key);
  if (!m) return undefined;
  const [, group, resource, kind, listKind, version, scope] = m;
  const def: ResourceDef = {
    group,
    version,
    resource,
    kind,
    listKind,
    singular: kind.toLowerCase(),
    namespaced: scope === "N",
    verbs: STANDARD_VERBS,
    strategy: { generation: true },
    custom: { storeKey: key },
  };
  // a view in a version other than the stored one: conversion "None" changes apiVersion only
  def.storedIn = {
    key,
    toStorage: (o) => o,
    fromStorage: (o) => ({ ...o, apiVersion: apiVersionOf(def) }),
    fieldLabels: {},
  };
  decoded.set(key, def);
  return def;
}
