// The checks of a CustomResourceDefinition's per-version parts, in upstream's words: a
// structural schema's faults, its validation rules (they must compile), printer columns and
// scale paths. api/strategies/customresourcedefinitions.ts runs them where upstream reports
// them (at spec.validation... when the versions share a part).
import { compile } from "../cel";
import { field, type StatusCause } from "../errors";
import { isObject } from "../strategies/common";
import type { CrdVersion } from "./definition";
import { undefinedFieldError } from "./rule-fields";
import type { ValidationRule } from "./rules";
import type { JSONSchemaProps } from "./schema";

const SCHEMA_TYPES = ["array", "boolean", "integer", "number", "object", "string"];

const LIST_TYPES = ["atomic", "set", "map"];

/** A structural schema's own faults, in upstream's words (sorted by their text, as upstream sorts them). */
export function schemaFaults(root: JSONSchemaProps, path: string): StatusCause[] {
  const out: StatusCause[] = [];
  const walk = (given: JSONSchemaProps | null, at: string, where: "root" | "field" | "items") => {
    // a null schema decodes as an empty one, which then lacks its type
    const s = isObject(given) ? given : ({} as JSONSchemaProps);
    const preserve = s["x-kubernetes-preserve-unknown-fields"];
    if (preserve === false)
      out.push(
        field.invalidShown(
          `${at}.x-kubernetes-preserve-unknown-fields`,
          "false",
          "must be true or undefined",
        ),
      );
    if (!s.type && preserve !== true && s["x-kubernetes-int-or-string"] !== true)
      out.push(
        field.required(
          `${at}.type`,
          where === "root"
            ? "must not be empty at the root"
            : where === "items"
              ? "must not be empty for specified array items"
              : "must not be empty for specified object fields",
        ),
      );
    if (s.type && !SCHEMA_TYPES.includes(s.type))
      out.push(field.notSupported(`${at}.type`, s.type, SCHEMA_TYPES));
    if (where === "root") {
      if (s.type && s.type !== "object")
        out.push(field.invalid(`${at}.type`, s.type, "must be object at the root"));
      if (s.nullable) out.push(field.forbidden(`${at}.nullable`, "nullable cannot be true at the root"));
      if (s.additionalProperties !== undefined)
        out.push(field.forbidden(`${at}.additionalProperties`, "must not be used at the root"));
      const meta = s.properties?.metadata as Record<string, unknown> | undefined;
      if (meta && Object.keys(meta).some((k) => k !== "type" && k !== "properties"))
        out.push(
          field.forbidden(
            `${at}.properties[metadata]`,
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
          ),
        );
    }
    if (s.type === "array" && !s.items) out.push(field.required(`${at}.items`, "must be specified"));
    if (s.uniqueItems)
      out.push(
        field.forbidden(
          `${at}.uniqueItems`,
          "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ),
      );
    if (s.additionalProperties !== undefined && s.properties && where !== "root")
      out.push(
        field.forbidden(
          `${at}.additionalProperties`,
          "additionalProperties and properties are mutual exclusive",
        ),
      );
    const lt = s["x-kubernetes-list-type"];
    if (lt !== undefined && !LIST_TYPES.includes(lt))
      out.push(field.notSupported(`${at}.x-kubernetes-list-type`, lt, LIST_TYPES));
    if (lt === "map" && !s["x-kubernetes-list-map-keys"]?.length)
      out.push(
        field.required(
          `${at}.x-kubernetes-list-map-keys`,
          "must not be empty if x-kubernetes-list-type is map",
        ),
      );
    if (s.pattern !== undefined) {
      try {
        new RegExp(s.pattern, "u");
      } catch (e) {
        out.push(
          field.invalid(
            `${at}.pattern`,
            s.pattern,
            `must be a valid regular expression, but isn't: ${(e as Error).message}`,
          ),
        );
      }
    }
    out.push(...ruleFaults(s, at, where === "root"));
    for (const [k, p] of Object.entries(s.properties ?? {})) walk(p, `${at}.properties[${k}]`, "field");
    if (s.items && !Array.isArray(s.items)) walk(s.items, `${at}.items`, "items");
    else if (Array.isArray(s.items))
      out.push(field.forbidden(`${at}.items`, "items must be a schema object and not an array"));
    if (typeof s.additionalProperties === "object")
      walk(s.additionalProperties, `${at}.additionalProperties`, "field");
  };
  walk(root, path, "root");
  const text = (c: StatusCause) => `${c.field}: ${c.message}`;
  return out.sort((a, b) => (text(a) < text(b) ? -1 : text(a) > text(b) ? 1 : 0));
}

const RULE_REASONS = [
  "FieldValueDuplicate",
  "FieldValueForbidden",
  "FieldValueInvalid",
  "FieldValueRequired",
];

/** Go's %#v of a rule, as upstream prints the rule a compile error is about. */
function goRule(r: ValidationRule): string {
  const ptr = (type: string, set: boolean) => `(*${type})(${set ? "0xc000100000" : "nil"})`;
  return (
    `apiextensions.ValidationRule{Rule:${JSON.stringify(r.rule ?? "")}, Message:${JSON.stringify(r.message ?? "")}, ` +
    `MessageExpression:${JSON.stringify(r.messageExpression ?? "")}, Reason:${ptr("apiextensions.FieldValueErrorReason", r.reason !== undefined)}, ` +
    `FieldPath:${JSON.stringify(r.fieldPath ?? "")}, OptionalOldSelf:${ptr("bool", r.optionalOldSelf !== undefined)}}`
  );
}

/** The faults of one node's x-kubernetes-validations, as upstream's CRD validation words them. */
function ruleFaults(s: JSONSchemaProps, at: string, root: boolean): StatusCause[] {
  const out: StatusCause[] = [];
  const listed = (s as { "x-kubernetes-validations"?: unknown })["x-kubernetes-validations"];
  const rules = (Array.isArray(listed) ? listed : []).map((r) => (isObject(r) ? r : {})) as ValidationRule[];
  for (const [i, r] of rules.entries()) {
    const rp = `${at}.x-kubernetes-validations[${i}]`;
    if (!r.rule?.trim()) out.push(field.required(`${rp}.rule`, "rule is not specified"));
    else if (r.message !== undefined && !r.message.trim())
      out.push(field.invalid(`${rp}.message`, r.message, "message must be non-empty if specified"));
    else if (r.message !== undefined && /[\r\n]/.test(r.message))
      out.push(field.invalid(`${rp}.message`, r.message, "message must not contain line breaks"));
    else if (/[\r\n]/.test(r.rule) && r.message === undefined)
      out.push(field.required(`${rp}.message`, "message must be specified if rule contains line breaks"));
    if (r.reason !== undefined && !RULE_REASONS.includes(r.reason))
      out.push(field.notSupported(`${rp}.reason`, r.reason, RULE_REASONS));
    if (r.fieldPath !== undefined && !r.fieldPath.trim())
      out.push(field.invalid(`${rp}.fieldPath`, r.fieldPath, "fieldPath must be non-empty if specified"));
    if (out.length || !r.rule?.trim()) continue;
    const compiled = compile(r.rule);
    const undefinedField = typeof compiled === "function" && undefinedFieldError(r.rule, s, root);
    if (typeof compiled !== "function") out.push(field.invalidShown(`${rp}.rule`, goRule(r), compiled.error));
    else if (undefinedField)
      out.push(field.invalidShown(`${rp}.rule`, goRule(r), `compilation failed: ${undefinedField}`));
    if (r.optionalOldSelf !== undefined && !/\boldSelf\b/.test(r.rule))
      out.push(
        field.invalid(
          `${rp}.optionalOldSelf`,
          r.optionalOldSelf,
          "may not be set if oldSelf is not used in rule",
        ),
      );
  }
  return out;
}

const COLUMN_TYPES = "boolean,date,integer,number,string";
const COLUMN_FORMATS = ["byte", "date", "date-time", "double", "float", "int32", "int64", "password"];

export function columnFaults(cols: CrdVersion["additionalPrinterColumns"], path: string): StatusCause[] {
  const out: StatusCause[] = [];
  (cols ?? []).forEach((c, j) => {
    const cp = `${path}[${j}]`;
    if (!c.name) out.push(field.required(`${cp}.name`));
    if (!c.type) out.push(field.required(`${cp}.type`, `must be one of ${COLUMN_TYPES}`));
    else if (!COLUMN_TYPES.split(",").includes(c.type))
      out.push(field.invalid(`${cp}.type`, c.type, `must be one of ${COLUMN_TYPES}`));
    if (c.format && !COLUMN_FORMATS.includes(c.format))
      out.push(field.invalid(`${cp}.format`, c.format, `must be one of ${COLUMN_FORMATS.join(",")}`));
    if (!c.jsonPath) out.push(field.required(`${cp}.JSONPath`));
    else if (!c.jsonPath.startsWith("."))
      out.push(field.invalid(`${cp}.JSONPath`, c.jsonPath, "must be a simple json path starting with ."));
  });
  return out;
}

/** A scale subresource's paths, each under the part of the object it must read. */
export function scaleFaults(
  scale: NonNullable<CrdVersion["subresources"]>["scale"],
  path: string,
): StatusCause[] {
  if (!scale) return [];
  const out: StatusCause[] = [];
  const check = (
    name: string,
    value: string | undefined,
    under: string[],
    words: string,
    required: boolean,
  ) => {
    if (!value) {
      if (required) out.push(field.required(`${path}.${name}`));
      return;
    }
    if (!under.some((u) => value.startsWith(`${u}.`) && value.length > u.length + 1))
      out.push(field.invalid(`${path}.${name}`, value, words));
  };
  check("specReplicasPath", scale.specReplicasPath, [".spec"], "should be a json path under .spec", true);
  check(
    "statusReplicasPath",
    scale.statusReplicasPath,
    [".status"],
    "should be a json path under .status",
    true,
  );
  check(
    "labelSelectorPath",
    scale.labelSelectorPath,
    [".spec", ".status"],
    "should be a json path under either .spec or .status",
    false,
  );
  return out;
}
