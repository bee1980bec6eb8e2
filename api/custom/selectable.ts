// A CustomResourceDefinition version's selectable fields (spec.versions[].selectableFields):
// simple JSON paths into the object whose values field selectors may name, as
// `--field-selector spec.color=red`. The label is the path without its leading dot; the value
// is the field's string, integer or boolean as text, and "" when the object lacks the field.
import { field, type StatusCause } from "../errors";
import { isObject } from "../strategies/common";
import type { KubeObject } from "../types";
import type { CrdVersion } from "./definition";
import type { JSONSchemaProps } from "./schema";

/** Upstream's cap on a version's selectable fields. */
export const MAX_SELECTABLE_FIELDS = 8;

/** ".spec.color" -> "spec.color": the name a field selector uses. */
export const fieldLabel = (jsonPath: string) => (jsonPath.startsWith(".") ? jsonPath.slice(1) : jsonPath);

/**
 * The property names of a simple path: `.a.b` and `['a.b']` steps, no array notation. An
 * error text when it is not one.
 */
export function pathSteps(path: string): string[] | string {
  if (!path.startsWith(".") && !path.startsWith("[")) return "must start with '.' or '['";
  const steps: string[] = [];
  let i = 0;
  while (i < path.length) {
    if (path[i] === ".") {
      const m = /^\.([A-Za-z_$][A-Za-z0-9_$-]*)/.exec(path.slice(i));
      if (!m) return `unexpected character at position ${i}`;
      steps.push(m[1]);
      i += m[0].length;
    } else if (path[i] === "[") {
      const m = /^\[(['"])((?:(?!\1).)*)\1\]/.exec(path.slice(i));
      if (!m) return "array notation is not allowed";
      steps.push(m[2]);
      i += m[0].length;
    } else return `unexpected character at position ${i}`;
  }
  return steps.length ? steps : "must name a field";
}

/** The schema of the field a path's steps reach, if the schema declares it. */
function schemaAt(root: JSONSchemaProps | undefined, steps: string[]): JSONSchemaProps | undefined {
  let s: JSONSchemaProps | undefined = root;
  for (const step of steps) {
    if (s?.type !== "object") return undefined;
    const props = s.properties as Record<string, JSONSchemaProps> | undefined;
    const extra = s.additionalProperties;
    s = props?.[step] ?? (isObject(extra) ? (extra as JSONSchemaProps) : undefined);
  }
  return s;
}

/** A version's selectableFields checked as upstream checks them, at `at` (its path). */
export function selectableFieldFaults(v: CrdVersion, at: string): StatusCause[] {
  const fields = v.selectableFields;
  if (!fields?.length) return [];
  const schema = v.schema?.openAPIV3Schema;
  if (!schema)
    return [
      field.invalidShown(
        at,
        '""',
        "selectableFields may only be set when version.schema.openAPIV3Schema is not included",
      ),
    ];
  const out: StatusCause[] = [];
  const unique = new Set<string>();
  for (const [i, f] of fields.entries()) {
    const fp = `${at}[${i}].jsonPath`;
    const path = f?.jsonPath;
    if (!path) {
      out.push(field.required(fp));
      continue;
    }
    const steps = pathSteps(path);
    const found = typeof steps === "string" ? undefined : schemaAt(schema, steps);
    if (typeof steps === "string" || !found) {
      const why = typeof steps === "string" ? steps : "does not refer to a declared field";
      out.push(field.invalid(fp, path, `is an invalid path: ${why}`));
      continue;
    }
    if (steps[0] === "metadata") out.push(field.invalid(fp, path, "must not point to fields in metadata"));
    if (!["string", "boolean", "integer"].includes(found.type ?? ""))
      out.push(
        field.invalid(
          fp,
          path,
          "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
        ),
      );
    const key = steps.join("\u0000");
    if (unique.has(key)) out.push(field.duplicate(fp, path));
    else unique.add(key);
  }
  if (unique.size > MAX_SELECTABLE_FIELDS) out.push(field.tooMany(at, unique.size, MAX_SELECTABLE_FIELDS));
  return out;
}

/** The value a field selector compares: upstream prints it as Go's fmt.Sprint would. */
function selectorValue(v: unknown): string {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return JSON.stringify(v);
}

/**
 * The function giving an object's selectable field values, by label, for these paths (parsed
 * once here, not at each write); undefined when there are none.
 */
export function selectableValuesOf(
  paths: readonly string[],
): ((obj: KubeObject) => Record<string, string>) | undefined {
  if (!paths.length) return undefined;
  const fields = paths.map((path) => {
    const steps = pathSteps(path);
    return { label: fieldLabel(path), steps: typeof steps === "string" ? undefined : steps };
  });
  return (obj) => {
    const out: Record<string, string> = {};
    for (const { label, steps } of fields) {
      let x: unknown = steps ? obj : undefined;
      for (const s of steps ?? []) x = isObject(x) ? (x as Record<string, unknown>)[s] : undefined;
      out[label] = selectorValue(x);
    }
    return out;
  };
}

/**
 * Every version's selectable paths, each once and sorted: what the store computes for each
 * object (one shard serves all the versions); a request may use its own version's only.
 */
export function storedSelectablePaths(versions: readonly CrdVersion[]): string[] {
  const all = new Set<string>();
  for (const v of versions)
    for (const f of v.selectableFields ?? [])
      if (f?.jsonPath && typeof pathSteps(f.jsonPath) !== "string") all.add(f.jsonPath);
  return [...all].sort();
}
