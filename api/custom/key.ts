// How a custom resource is named to its store shard. Built-in resources are found by key in
// the static registry; a custom one is known only from its CustomResourceDefinition, which a
// shard does not read. So the key a shard is called with carries what the shard needs to
// write and list the objects (kind, list kind, storage version, scope):
//   "<group>/<plural>#<Kind>,<ListKind>,<version>,<N|C>;<stamp>;<paths>"
// where the stamp is the CRD's resourceVersion and the paths are its selectable fields (all
// versions', URI-encoded, comma-separated; selectable.ts). A watch in another served version
// names its view the same way with that version; a view of a CRD with schema defaults also
// carries them (";d=<trees>", read-defaults.ts), which the shard fills into each event. The
// shard's Durable Object is still named by "<group>/<plural>" alone: the key moves on as the
// CRD changes, and the shard follows the newest stamp it is called with (shard.ts).
import { apiVersionOf, type ResourceDef, STANDARD_VERBS } from "../resource";
import { decodeReadDefaults, encodeReadDefaults, fromStorageAs, type ReadDefaults } from "./read-defaults";
import { selectableValuesOf } from "./selectable";

export interface CustomKeyParts {
  group: string;
  resource: string;
  kind: string;
  listKind: string;
  version: string;
  namespaced: boolean;
  /** the CRD's resourceVersion: which of two keys is newer */
  stamp?: string;
  /** the selectable fields' JSON paths, every version's */
  selectable?: string[];
}

export function customKey(p: CustomKeyParts): string {
  const base = `${p.group}/${p.resource}#${p.kind},${p.listKind},${p.version},${p.namespaced ? "N" : "C"}`;
  if (p.stamp === undefined) return base;
  return `${base};${p.stamp};${(p.selectable ?? []).map(encodeURIComponent).join(",")}`;
}

/** The CRD stamp a custom key carries (0 when none): a shard keeps the newest key's def. */
export function keyStamp(key: string): number {
  const m = /;(\d+);[^;]*(?:;d=[^;]*)?$/.exec(key);
  return m ? Number(m[1]) : 0;
}

/** The key with the version of a view in place of the stored one (and the read defaults, if any). */
export function customViewKey(storeKey: string, version: string, defaults?: ReadDefaults): string {
  const key = storeKey.replace(/,[^,#]+,([NC])(;|$)/, `,${version},$1$2`);
  return defaults ? `${key};d=${encodeReadDefaults(defaults)}` : key;
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
  const m = /^([^/#]+)\/([^/#]+)#([^,]+),([^,]+),([^,;]+),([NC])(?:;\d+;([^;]*))?(?:;d=([^;]*))?$/.exec(key);
  if (!m) return undefined;
  const [, group, resource, kind, listKind, version, scope, encoded, defaults] = m;
  const trees = defaults ? decodeReadDefaults(defaults) : undefined;
  const paths = encoded ? encoded.split(",").map(decodeURIComponent) : [];
  const fields = selectableValuesOf(paths);
  const def: ResourceDef = {
    group,
    version,
    resource,
    kind,
    listKind,
    singular: kind.toLowerCase(),
    namespaced: scope === "N",
    verbs: STANDARD_VERBS,
    strategy: fields ? { generation: true, fields } : { generation: true },
    custom: { storeKey: key, selectable: paths },
  };
  // a view in a version other than the stored one: conversion "None" changes apiVersion only,
  // after the defaults of the version the object was stored in
  def.storedIn = {
    key,
    toStorage: (o) => o,
    fromStorage: fromStorageAs(apiVersionOf(def), trees),
    fieldLabels: {},
  };
  decoded.set(key, def);
  return def;
}
