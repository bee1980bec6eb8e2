// A custom resource's structural schema (a CRD version's openAPIV3Schema) applied to its
// objects, as upstream's apiextensions-apiserver does: pruning of the fields the schema does
// not declare, defaulting from `default`, and value validation with kube-openapi's checks,
// each failure a cause in upstream's words.
import { field, type StatusCause } from "../errors";
import { deepEqual, isObject } from "../patch/util";
import { valueAt } from "../validation/schema";

export interface JSONSchemaProps {
  type?: string;
  format?: string;
  description?: string;
  properties?: Record<string, JSONSchemaProps>;
  additionalProperties?: JSONSchemaProps | boolean;
  items?: JSONSchemaProps;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  nullable?: boolean;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  multipleOf?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minProperties?: number;
  maxProperties?: number;
  allOf?: JSONSchemaProps[];
  anyOf?: JSONSchemaProps[];
  oneOf?: JSONSchemaProps[];
  not?: JSONSchemaProps;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-embedded-resource"?: boolean;
  "x-kubernetes-list-type"?: string;
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-map-type"?: string;
}

type Json = Record<string, unknown>;

/** The fields every object keeps whatever its schema says (and an embedded resource's too). */
const TYPE_META = ["apiVersion", "kind", "metadata"];

/** ObjectMeta's fields: the rest of a custom object's metadata is pruned. */
const OBJECT_META = new Set([
  "name",
  "generateName",
  "namespace",
  "selfLink",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "labels",
  "annotations",
  "ownerReferences",
  "finalizers",
  "managedFields",
]);

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/**
 * Drops what the schema does not declare (unless it preserves unknown fields) and returns
 * the paths dropped, as upstream's pruning reports them for fieldValidation (`.spec.foo`).
 */
export function prune(obj: Json, schema: JSONSchemaProps): string[] {
  const dropped: string[] = [];
  pruneObject(obj, schema, "", true, dropped);
  return dropped;
}

function pruneValue(v: unknown, s: JSONSchemaProps | undefined, path: string, dropped: string[]): void {
  if (!s) return;
  if (Array.isArray(v)) {
    if (s.items) for (const [i, x] of v.entries()) pruneValue(x, s.items, `${path}[${i}]`, dropped);
    return;
  }
  if (isObject(v)) pruneObject(v, s, path, !!s["x-kubernetes-embedded-resource"], dropped);
}

function pruneObject(v: Json, s: JSONSchemaProps, path: string, keepMeta: boolean, dropped: string[]): void {
  const preserve = !!s["x-kubernetes-preserve-unknown-fields"];
  const extra = typeof s.additionalProperties === "object" ? s.additionalProperties : undefined;
  for (const k of Object.keys(v)) {
    if (keepMeta && TYPE_META.includes(k)) {
      // metadata is ObjectMeta: what ObjectMeta has no field for goes (an embedded object's too)
      if (k === "metadata" && isObject(v[k]))
        for (const mk of Object.keys(v[k] as Json))
          if (!OBJECT_META.has(mk)) {
            delete (v[k] as Json)[mk];
            dropped.push(`.${join(path, `metadata.${mk}`)}`);
          }
      continue;
    }
    const prop = s.properties?.[k] ?? extra;
    // a null the schema does not allow and cannot default is dropped (not reported)
    if (prop && v[k] === null && !prop.nullable && prop.default === undefined) delete v[k];
    else if (prop) pruneValue(v[k], prop, join(path, k), dropped);
    else if (!preserve && s.additionalProperties !== true) {
      delete v[k];
      dropped.push(`.${join(path, k)}`);
    }
  }
}

/** Fills in `default`s where a field is missing (or null and not nullable), top down. */
export function applyDefaults(v: unknown, s: JSONSchemaProps | undefined): void {
  if (!s) return;
  if (Array.isArray(v)) {
    if (s.items) for (const x of v) applyDefaults(x, s.items);
    return;
  }
  if (!isObject(v)) return;
  if (s.properties) {
    for (const [k, p] of Object.entries(s.properties)) {
      if (p.default !== undefined && (!(k in v) || (v[k] === null && !p.nullable)))
        v[k] = structuredClone(p.default);
    }
  }
  for (const [k, x] of Object.entries(v)) {
    const p =
      s.properties?.[k] ?? (typeof s.additionalProperties === "object" ? s.additionalProperties : undefined);
    applyDefaults(x, p);
  }
}

// kube-openapi's words for a value that fails a check: "<path> in body <what>"
const inBody = (path: string, what: string) => `${path} in body ${what}`;

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

function hasType(v: unknown, s: JSONSchemaProps): boolean {
  if (v === null) return !!s.nullable;
  if (s["x-kubernetes-int-or-string"]) return typeof v === "string" || Number.isInteger(v);
  switch (s.type) {
    case undefined:
    case "":
      return true;
    case "integer":
      return typeof v === "number" && Number.isInteger(v);
    case "number":
      return typeof v === "number";
    case "string":
      return typeof v === "string";
    case "boolean":
      return typeof v === "boolean";
    case "array":
      return Array.isArray(v);
    case "object":
      return isObject(v);
    default:
      return true;
  }
}

/** Go's %v of a number bound, %q of a string. */
const goValue = (v: unknown) => (typeof v === "string" ? JSON.stringify(v) : String(v));

const patterns = new Map<string, RegExp | null>();
function regex(p: string): RegExp | null {
  let r = patterns.get(p);
  if (r === undefined) {
    try {
      r = new RegExp(p, "u");
    } catch {
      r = null;
    }
    patterns.set(p, r);
  }
  return r;
}

/** Value validation of an object against its schema: one cause per failing check. */
export function validateValue(obj: unknown, schema: JSONSchemaProps, old?: unknown): StatusCause[] {
  const causes: StatusCause[] = [];
  check(obj, schema, "", causes, true);
  if (old === undefined) return causes;
  // ratcheting, on by default upstream: on an update, a fault in a value the update leaves as
  // it was does not refuse the update (a missing field is judged by the object holding it)
  return causes.filter((c) => {
    const path = pathSegments(c.field ?? "");
    const at = c.type === "FieldValueRequired" ? path.slice(0, -1) : path;
    return !deepEqual(valueAt(obj, at), valueAt(old, at));
  });
}

/** "spec.items[0].name" -> ["spec", "items", "0", "name"] (an index or a map key, in brackets). */
function pathSegments(field: string): string[] {
  if (field === "<root>") return [];
  return [...field.matchAll(/([^.[\]]+)|\[([^\]]*)\]/g)].map((m) => m[1] ?? m[2]);
}

function check(v: unknown, s: JSONSchemaProps, path: string, out: StatusCause[], root = false): void {
  const at = path || "<root>";
  if (!hasType(v, s)) {
    const want = s["x-kubernetes-int-or-string"] ? "integer,string" : (s.type ?? "");
    out.push({
      type: "FieldValueTypeInvalid",
      field: at,
      message: `Invalid value: "${typeName(v)}": ${inBody(at, `must be of type ${want}: "${typeName(v)}"`)}`,
    });
    return;
  }
  if (v === null) return;
  if (s.enum && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v)))
    out.push(
      field.notSupported(
        at,
        v,
        s.enum.map((e) => (typeof e === "string" ? e : JSON.stringify(e))),
      ),
    );
  if (typeof v === "number") {
    if (s.maximum !== undefined && (s.exclusiveMaximum ? v >= s.maximum : v > s.maximum))
      out.push(
        field.invalid(
          at,
          v,
          inBody(at, `should be less than ${s.exclusiveMaximum ? "" : "or equal to "}${goValue(s.maximum)}`),
        ),
      );
    if (s.minimum !== undefined && (s.exclusiveMinimum ? v <= s.minimum : v < s.minimum))
      out.push(
        field.invalid(
          at,
          v,
          inBody(
            at,
            `should be greater than ${s.exclusiveMinimum ? "" : "or equal to "}${goValue(s.minimum)}`,
          ),
        ),
      );
    if (s.multipleOf && Math.abs(v / s.multipleOf - Math.round(v / s.multipleOf)) > 1e-9)
      out.push(field.invalid(at, v, inBody(at, `should be a multiple of ${goValue(s.multipleOf)}`)));
  }
  if (typeof v === "string") {
    const length = [...v].length;
    if (s.maxLength !== undefined && length > s.maxLength) out.push(field.tooLong(at, s.maxLength));
    if (s.minLength !== undefined && length < s.minLength)
      out.push(field.invalid(at, v, inBody(at, `should be at least ${s.minLength} chars long`)));
    if (s.pattern !== undefined && regex(s.pattern) && !regex(s.pattern)!.test(v))
      out.push(field.invalid(at, v, inBody(at, `should match '${s.pattern}'`)));
  }
  if (Array.isArray(v)) {
    if (s.maxItems !== undefined && v.length > s.maxItems) out.push(field.tooMany(at, v.length, s.maxItems));
    if (s.minItems !== undefined && v.length < s.minItems)
      out.push(field.invalid(at, v.length, inBody(at, `should have at least ${s.minItems} items`)));
    if (s.uniqueItems || s["x-kubernetes-list-type"] === "set") {
      const seen = new Set<string>();
      v.forEach((x, i) => {
        const k = JSON.stringify(x);
        if (seen.has(k)) out.push(field.duplicate(`${at}[${i}]`, x));
        seen.add(k);
      });
    }
    if (s["x-kubernetes-list-type"] === "map" && s["x-kubernetes-list-map-keys"]?.length) {
      const keys = s["x-kubernetes-list-map-keys"];
      const seen = new Set<string>();
      v.forEach((x, i) => {
        if (!isObject(x)) return;
        const k = JSON.stringify(keys.map((key) => x[key]));
        if (seen.has(k))
          out.push(field.duplicate(`${at}[${i}]`, Object.fromEntries(keys.map((key) => [key, x[key]]))));
        seen.add(k);
      });
    }
    if (s.items) for (const [i, x] of v.entries()) check(x, s.items, `${path}[${i}]`, out);
  }
  if (isObject(v)) {
    const n = Object.keys(v).length;
    if (s.maxProperties !== undefined && n > s.maxProperties) out.push(field.tooMany(at, n, s.maxProperties));
    if (s.minProperties !== undefined && n < s.minProperties)
      out.push(field.invalid(at, n, inBody(at, `should have at least ${s.minProperties} properties`)));
    for (const r of s.required ?? [])
      if (!(r in v) && !(root && r === "metadata")) out.push(field.required(join(path, r)));
    for (const [k, x] of Object.entries(v)) {
      if (root && TYPE_META.includes(k)) continue;
      if (s["x-kubernetes-embedded-resource"] && TYPE_META.includes(k)) continue;
      const p =
        s.properties?.[k] ??
        (typeof s.additionalProperties === "object" ? s.additionalProperties : undefined);
      if (p) check(x, p, join(path, k), out);
    }
  }
  for (const sub of s.allOf ?? []) check(v, { ...sub, type: sub.type }, path, out);
  if (s.anyOf && !s.anyOf.some((sub) => validateValueAt(v, sub, path)))
    out.push(field.invalid(at, v, inBody(at, "must validate at least one schema (anyOf)")));
  if (s.oneOf && s.oneOf.filter((sub) => validateValueAt(v, sub, path)).length !== 1)
    out.push(field.invalid(at, v, inBody(at, "must validate one and only one schema (oneOf)")));
  if (s.not && validateValueAt(v, s.not, path))
    out.push(field.invalid(at, v, inBody(at, "must not validate the schema (not)")));
}

function validateValueAt(v: unknown, s: JSONSchemaProps, path: string): boolean {
  const out: StatusCause[] = [];
  check(v, s, path, out);
  return out.length === 0;
}
