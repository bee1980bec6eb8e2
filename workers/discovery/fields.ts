// Unknown-field detection for server-side field validation
// (fieldValidation=Strict|Warn), against the generated OpenAPI definitions.

import { DEFINITIONS, definitionIdFor, resolveSchema, type Schema } from "./definitions";

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === "object" && !Array.isArray(v);
}

/**
 * Collects unknown fields under `value`. `path` holds the segments down to it ("spec",
 * "containers[0]", ...), pushed and popped on the way: a path is spelled out only for a
 * field that is unknown, not for every field walked.
 */
function walk(
  value: unknown,
  schema: Schema | undefined,
  path: string[],
  out: string[],
  prune: boolean,
): void {
  const s = resolveSchema(schema).schema;
  if (!s || s["x-kubernetes-preserve-unknown-fields"] === true) return;
  if (Array.isArray(value)) {
    if (!s.items) return;
    if (path.length === 0) path.push(""); // a list at the top: "[0].x"
    const last = path.length - 1;
    const at = path[last] ?? "";
    for (let i = 0; i < value.length; i++) {
      path[last] = `${at}[${i}]`;
      walk(value[i], s.items, path, out, prune);
    }
    path[last] = at;
    return;
  }
  if (!isPlainObject(value)) return;
  const fields = s.properties ?? (isPlainObject(s.additionalProperties) ? undefined : null);
  if (fields === null) return;
  for (const k of Object.keys(value)) {
    // (JSON Schema: keys the properties do not name are additionalProperties')
    const extra = isPlainObject(s.additionalProperties) ? (s.additionalProperties as Schema) : undefined;
    const p = fields ? (fields[k] ?? extra) : extra;
    if (!p) {
      out.push([...path, k].join("."));
      if (prune) delete value[k];
      continue;
    }
    path.push(k);
    walk(value[k], p, path, out, prune);
    path.pop();
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
  walk(obj, DEFINITIONS[id], [], out, prune);
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

/** Alias used by workers/handlers/field-validation.ts. */
export const unknownFields = knownFieldsCheck;
