// A CRD schema's validation rules (x-kubernetes-validations): CEL expressions evaluated at the
// schema node that declares them, with `self` bound to the object's value there and, for a
// transition rule, `oldSelf` to the old object's value at the same place on an update. Each
// failure is a cause in upstream's words; runtime faults say what went wrong and where.
import { evaluate } from "../cel";
import { field, type StatusCause } from "../errors";
import { deepEqual, isObject } from "../patch/util";
import type { JSONSchemaProps } from "./schema";

export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
  fieldPath?: string;
  optionalOldSelf?: boolean;
}

type Json = Record<string, unknown>;
const rulesOf = (s: JSONSchemaProps) =>
  (s as { "x-kubernetes-validations"?: ValidationRule[] })["x-kubernetes-validations"] ?? [];

/** Whether any node of the schema carries rules. */
export function hasRules(s: JSONSchemaProps | undefined): boolean {
  if (!s || typeof s !== "object") return false;
  if (rulesOf(s).length) return true;
  return (
    Object.values(s.properties ?? {}).some(hasRules) ||
    hasRules(s.items) ||
    (typeof s.additionalProperties === "object" && hasRules(s.additionalProperties)) ||
    (s.allOf ?? []).some(hasRules)
  );
}

/** Schema errors that keep the rules from running at all (upstream's blocking types). */
const BLOCKING = new Set([
  "FieldValueNotSupported",
  "FieldValueRequired",
  "FieldValueTooLong",
  "FieldValueTooMany",
  "FieldValueTypeInvalid",
]);

const RESERVED = new Set(
  "true false null in as break const continue else for function if import let loop package namespace return var void while".split(
    " ",
  ),
);

/** A property name as rules see it: `x-prop` is `x__dash__prop`, `namespace` is `__namespace__`. */
export function escapeName(name: string): string | undefined {
  if (RESERVED.has(name)) return `__${name}__`;
  if (!/^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*$/.test(name)) return undefined;
  return name
    .replace(/__/g, "__underscores__")
    .replace(/\./g, "__dot__")
    .replace(/-/g, "__dash__")
    .replace(/\//g, "__slash__");
}

/** A value as a rule sees it: integers as ints, numbers as doubles, declared fields by their escaped names. */
function toRuleValue(v: unknown, s: JSONSchemaProps | undefined): unknown {
  if (v === null || v === undefined) return v;
  if (typeof v === "number") {
    if (s?.type === "number") return v;
    return Number.isInteger(v) ? BigInt(v) : v;
  }
  if (Array.isArray(v)) return v.map((x) => toRuleValue(x, s?.items));
  if (!isObject(v)) return v;
  const out: Json = {};
  if (s?.properties) {
    for (const [k, p] of Object.entries(s.properties)) {
      const name = escapeName(k);
      if (name !== undefined && k in v && v[k] !== null) out[name] = toRuleValue(v[k], p);
    }
    return out;
  }
  const extra = typeof s?.additionalProperties === "object" ? s.additionalProperties : undefined;
  for (const [k, x] of Object.entries(v)) out[k] = toRuleValue(x, extra);
  return out;
}

/** A node's value for `self`: at the object's root also its apiVersion, kind and metadata's names. */
function bind(v: unknown, s: JSONSchemaProps, root: boolean): unknown {
  const out = toRuleValue(v, s);
  if (!root || !isObject(v) || !isObject(out)) return out;
  const meta = isObject(v.metadata) ? v.metadata : {};
  out.apiVersion = v.apiVersion;
  out.kind = v.kind;
  out.metadata = Object.fromEntries(
    ["name", "generateName"].filter((k) => typeof meta[k] === "string").map((k) => [k, meta[k]]),
  );
  return out;
}

/** cel-go's words for the runtime faults the evaluator here words its own way. */
function celGoWords(message: string): string {
  const missing = /^field not found: (.*)$/.exec(message);
  if (missing) return `no such key: ${missing[1]}`;
  return message.replace(/^found no matching overload/, "no such overload");
}

interface Walk {
  out: StatusCause[];
  /** where a rule failing on a value the update leaves as it was is said instead (ratcheting) */
  warn?: (message: string) => void;
}

const typeShown = (s: JSONSchemaProps) => JSON.stringify(s.type ?? "");

function ruleText(r: ValidationRule): string {
  return r.message?.trim() || r.rule.trim();
}

/** The cause of a rule that did not hold, by its reason, at its node (or its fieldPath below it). */
function failed(r: ValidationRule, s: JSONSchemaProps, path: string, detail: string): StatusCause {
  let at = path;
  if (r.fieldPath) {
    const rel = r.fieldPath
      .replace(/\['([^']*)'\]/g, ".$1")
      .replace(/^\./, "")
      .trim();
    at = path === "<nil>" ? rel : `${path}.${rel}`;
  }
  switch (r.reason) {
    case "FieldValueForbidden":
      return field.forbidden(at, detail);
    case "FieldValueRequired":
      return field.required(at, detail);
    case "FieldValueDuplicate":
      return field.duplicate(at, s.type ?? "");
    default:
      return field.invalidShown(at, typeShown(s), detail);
  }
}

function runRules(v: unknown, old: unknown, s: JSONSchemaProps, path: string, w: Walk): void {
  const rules = rulesOf(s);
  if (!rules.length) return;
  const root = path === "<nil>";
  const self = bind(v, s, root);
  const oldSelf = old === undefined || old === null ? undefined : bind(old, s, root);
  for (const r of rules) {
    if (!r.rule?.trim()) continue;
    const transition = /\boldSelf\b/.test(r.rule);
    if (transition && oldSelf === undefined) continue; // a transition rule needs an old value here
    const bindings: Record<string, unknown> = transition ? { self, oldSelf } : { self };
    const res = evaluate(r.rule, bindings);
    if ("error" in res) {
      const why = celGoWords(res.error);
      const detail = why.startsWith("no such overload")
        ? `'${why}': call arguments did not match a supported operator, function or macro signature for rule: ${ruleText(r)}`
        : `${why} evaluating rule: ${ruleText(r)}`;
      w.out.push(field.invalidShown(path, typeShown(s), detail));
      continue;
    }
    if (res.value === true) continue;
    let detail = r.message?.trim() ? r.message.trim() : `failed rule: ${r.rule.trim()}`;
    if (r.messageExpression) {
      const m = evaluate(r.messageExpression, bindings);
      if (!("error" in m) && typeof m.value === "string" && m.value.trim() && !/\n/.test(m.value))
        detail = m.value.trim();
    }
    const cause = failed(r, s, path, detail);
    // ratcheting, on by default upstream: a rule that fails on a value the update did not
    // change (and is not about the change) lets the update through with a warning
    if (w.warn && !transition && old !== undefined && deepEqual(v, old))
      w.warn(`${cause.field}: ${cause.message}`);
    else w.out.push(cause);
  }
}

/** The old value of a list item that the schema lets correlate (list-type map, by its keys). */
function oldItem(item: unknown, oldList: unknown, s: JSONSchemaProps): unknown {
  const keys = s["x-kubernetes-list-map-keys"];
  if (s["x-kubernetes-list-type"] !== "map" || !keys?.length || !Array.isArray(oldList) || !isObject(item))
    return undefined;
  return oldList.find((o) => isObject(o) && keys.every((k) => o[k] === item[k]));
}

function walk(v: unknown, old: unknown, s: JSONSchemaProps | undefined, path: string, w: Walk): void {
  if (!s || v === undefined || v === null) return;
  runRules(v, old, s, path, w);
  for (const sub of s.allOf ?? []) runRules(v, old, sub, path, w);
  const child = (k: string) => (path === "<nil>" ? k : `${path}.${k}`);
  if (Array.isArray(v)) {
    if (s.items) for (const [i, x] of v.entries()) walk(x, oldItem(x, old, s), s.items, `${path}[${i}]`, w);
    return;
  }
  if (!isObject(v)) return;
  const oldObj = isObject(old) ? old : undefined;
  if (typeof s.additionalProperties === "object")
    for (const [k, x] of Object.entries(v))
      if (!s.properties?.[k]) walk(x, oldObj?.[k], s.additionalProperties, `${path}[${k}]`, w);
  for (const [k, p] of Object.entries(s.properties ?? {})) walk(v[k], oldObj?.[k], p, child(k), w);
}

/**
 * The causes of the rules that do not hold, after the schema's own causes: none run when one
 * of those is of a blocking type, which is then said once at `<nil>`, as upstream says it. On
 * an update, a rule failing where nothing changed goes to `warn` instead (ratcheting).
 */
export function validateRules(
  obj: unknown,
  old: unknown,
  schema: JSONSchemaProps,
  schemaCauses: StatusCause[],
  warn?: (message: string) => void,
): StatusCause[] {
  if (!hasRules(schema)) return [];
  if (schemaCauses.some((c) => BLOCKING.has(c.type ?? "")))
    return [
      {
        type: "FieldValueInvalid",
        field: "<nil>",
        message:
          'Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
      },
    ];
  const w: Walk = { out: [], warn };
  walk(obj, old, schema, "<nil>", w);
  return w.out;
}
