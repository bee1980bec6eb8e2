// Unknown-field detection for server-side field validation
// (fieldValidation=Strict|Warn), against the generated OpenAPI definitions.

import { DEFINITIONS, definitionIdFor, refId, type Schema } from "./definitions";

function resolve(s: Schema | undefined): Schema | undefined {
  let cur = s;
  for (let i = 0; cur && i < 8; i++) {
    if (cur.$ref) cur = DEFINITIONS[refId(cur.$ref) as string];
    else if (cur.allOf?.length) cur = cur.allOf[0];
    else return cur;
  }
  return cur;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === "object" && !Array.isArray(v);
}

function walk(value: unknown, schema: Schema | undefined, path: string, out: string[], prune = false): void {
  const s = resolve(schema);
  if (!s || s["x-kubernetes-preserve-unknown-fields"] === true) return;
  if (Array.isArray(value)) {
    if (s.items) for (let i = 0; i < value.length; i++) walk(value[i], s.items, `${path}[${i}]`, out, prune);
    return;
  }
  if (!isPlainObject(value)) return;
  const join = (k: string) => (path ? `${path}.${k}` : k);
  if (s.properties) {
    for (const [k, v] of Object.entries(value)) {
      const p = s.properties[k];
      if (!p) {
        out.push(join(k));
        if (prune) delete value[k];
      } else walk(v, p, join(k), out, prune);
    }
    return;
  }
  if (isPlainObject(s.additionalProperties)) {
    for (const [k, v] of Object.entries(value)) walk(v, s.additionalProperties, join(k), out, prune);
  }
}

/**
 * The paths of the fields of obj that its kind's schema does not know,
 * e.g. ["spec.foo", "spec.containers[0].bar"]. Empty when the kind has no
 * schema here (nothing to check against).
 */
export function knownFieldsCheck(apiVersion: string, kind: string, obj: unknown, prune = false): string[] {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/", 2) : ["", apiVersion];
  const id = definitionIdFor({ group, version, kind });
  if (!id) return [];
  const out: string[] = [];
  walk(obj, DEFINITIONS[id], "", out, prune);
  return out;
}

/** Drops the fields the schema does not know, as decoding into upstream's types does; returns their paths. */
export function pruneUnknownFields(apiVersion: string, kind: string, obj: unknown): string[] {
  return knownFieldsCheck(apiVersion, kind, obj, true);
}

/** Upstream's per-field message: unknown field "spec.foo". */
export function unknownFieldMessages(paths: string[]): string[] {
  return paths.map((p) => `unknown field "${p}"`);
}

/**
 * The message of the 400 BadRequest for fieldValidation=Strict, as upstream
 * words it: strict decoding error: unknown field "a", unknown field "b".
 */
export function strictDecodingMessage(paths: string[]): string {
  return `strict decoding error: ${unknownFieldMessages(paths).join(", ")}`;
}

/** Alias used by workers/handlers/field-validation.ts. */
export const unknownFields = knownFieldsCheck;
