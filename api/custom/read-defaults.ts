// Defaults on read. Upstream's apiextensions-apiserver fills in a custom object's schema
// defaults when it reads the object from storage, with the schema of the version the object
// was stored in, and does not write the result back: a `default` added to a CRD shows in the
// objects stored before it (gets, lists, watches, tables) while their resourceVersions stay.
//
// Here the defaults travel as a "defaults tree": the version's schema cut down to the nodes
// that hold a `default` and the nodes on the way to them, one per version that has any. The
// Worker applies it to what it reads; a watch's view key carries the trees to the store shard,
// which converts each event for the watchers in that view (api/custom/key.ts).
import type { KubeObject } from "../types";
import { applyDefaults, type JSONSchemaProps } from "./schema";

/** Trees by version name; only the versions whose schema has a default. */
export type ReadDefaults = Record<string, JSONSchemaProps>;

/** The part of a schema that defaulting walks, or undefined when it holds no default. */
export function defaultsTree(s: JSONSchemaProps | undefined): JSONSchemaProps | undefined {
  if (!s || typeof s !== "object") return undefined;
  const out: JSONSchemaProps = {};
  let any = false;
  if (s.properties) {
    const props: Record<string, JSONSchemaProps> = {};
    for (const [k, p] of Object.entries(s.properties)) {
      const t = defaultsTree(p);
      if (t) props[k] = t;
    }
    if (Object.keys(props).length) {
      out.properties = props;
      any = true;
    }
  }
  const items = defaultsTree(s.items);
  if (items) {
    out.items = items;
    any = true;
  }
  const extra = typeof s.additionalProperties === "object" ? defaultsTree(s.additionalProperties) : undefined;
  if (extra) {
    out.additionalProperties = extra;
    any = true;
  }
  if (s.default !== undefined) {
    out.default = s.default;
    any = true;
  }
  // whether a null is kept or defaulted depends on it
  if (any && s.nullable) out.nullable = true;
  return any ? out : undefined;
}

/** The trees of every version of a CRD that has defaults; undefined when none has. */
export function readDefaultsOf(
  versions: readonly { name: string; schema?: { openAPIV3Schema?: JSONSchemaProps } }[],
): ReadDefaults | undefined {
  const out: ReadDefaults = {};
  for (const v of versions) {
    const t = defaultsTree(v.schema?.openAPIV3Schema);
    if (t) out[v.name] = t;
  }
  return Object.keys(out).length ? out : undefined;
}

/** A stored object with the defaults of the version it was stored in, in place; then returned. */
export function withReadDefaults(obj: KubeObject, trees: ReadDefaults): KubeObject {
  const apiVersion = typeof obj.apiVersion === "string" ? obj.apiVersion : "";
  const version = apiVersion.slice(apiVersion.indexOf("/") + 1);
  if (Object.hasOwn(trees, version)) applyDefaults(obj, trees[version]);
  return obj;
}

/**
 * A stored object as a served version shows it, with conversion "None": the defaults of the
 * version it was stored in (when the CRD has any), then the version's apiVersion.
 */
export function fromStorageAs(
  apiVersion: string,
  trees: ReadDefaults | undefined,
): (o: KubeObject) => KubeObject {
  return trees ? (o) => ({ ...withReadDefaults(o, trees), apiVersion }) : (o) => ({ ...o, apiVersion });
}

/** The trees as a view key's suffix carries them (no ";" in it). */
export function encodeReadDefaults(trees: ReadDefaults): string {
  return encodeURIComponent(JSON.stringify(trees));
}

export function decodeReadDefaults(text: string): ReadDefaults {
  return JSON.parse(decodeURIComponent(text)) as ReadDefaults;
}
