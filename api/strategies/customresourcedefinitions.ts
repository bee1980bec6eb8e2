// apiextensions.k8s.io/v1 customresourcedefinitions: new kinds a cluster serves (api/custom
// turns each established one into ResourceDefs). Upstream's defaults, validation (names,
// versions, structural schemas) and table; the naming and establishing controllers' status,
// written here when the names are set since nothing else claims them in this cluster.

import { compile } from "../cel";
import { type Crd, type CrdVersion, isEstablished } from "../custom/definition";
import type { ValidationRule } from "../custom/rules";
import type { JSONSchemaProps } from "../custom/schema";
import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { validateMeta } from "../validation/metadata";
import { isDNS1035Label, isDNS1123Subdomain } from "../validation/names";
import { createdAtColumn, isObject, nameColumn } from "./common";

export const CRD_GROUP = "apiextensions.k8s.io";
/** Held by a CRD being deleted until its objects are gone (controllers/crd-cleanup.ts). */
export const CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io";

const SCHEMA_TYPES = ["array", "boolean", "integer", "number", "object", "string"];

function now(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, "Z");
}

function condition(type: string, status: string, reason: string, message: string) {
  return { type, status, lastTransitionTime: now(), reason, message };
}

/** The names the CRD asks for, as accepted (upstream's naming controller, without conflicts to find). */
function acceptedNames(crd: Crd): Record<string, unknown> {
  const n = isObject(crd.spec?.names) ? crd.spec.names : ({} as Crd["spec"]["names"]);
  const out: Record<string, unknown> = {
    plural: n.plural,
    singular: n.singular,
    kind: n.kind,
    listKind: n.listKind,
  };
  if (n.shortNames?.length) out.shortNames = n.shortNames;
  if (n.categories?.length) out.categories = n.categories;
  return out;
}

/** Sets (or replaces, when its status differs) one of the CRD's conditions. */
export function setCrdCondition(
  crd: Crd,
  type: string,
  status: string,
  reason: string,
  message: string,
): void {
  const conditions: any[] = [...(crd.status?.conditions ?? [])];
  const i = conditions.findIndex((x) => x.type === type);
  const c = condition(type, status, reason, message);
  if (i < 0) conditions.push(c);
  else
    conditions[i] = {
      ...c,
      lastTransitionTime:
        conditions[i].status === status ? conditions[i].lastTransitionTime : c.lastTransitionTime,
    };
  crd.status = { ...crd.status, conditions };
}

/** Sets the status the naming and establishing controllers would: names accepted, established. */
function establish(crd: Crd, old?: Crd): void {
  const status = (crd.status = { ...(old?.status ?? crd.status ?? {}) });
  status.acceptedNames = acceptedNames(crd);
  const conditions: any[] = [...(status.conditions ?? [])];
  const put = (c: ReturnType<typeof condition>) => {
    const i = conditions.findIndex((x) => x.type === c.type);
    if (i < 0) conditions.push(c);
    else if (conditions[i].status !== c.status) conditions[i] = c;
  };
  put(condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"));
  put(condition("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"));
  status.conditions = conditions;
  const stored = versionsOf(crd).find((v) => v.storage)?.name;
  const versions: string[] = [...(status.storedVersions ?? [])];
  if (stored && !versions.includes(stored)) versions.push(stored);
  status.storedVersions = versions;
}

/** Go's %#v of the versions, as upstream's messages print the list (pointers as addresses). */
function goVersions(
  versions: CrdVersion[],
  hoisted: { schema: boolean; columns: boolean; subresources: boolean },
): string {
  const ptr = (type: string, set: boolean) => `(*${type})(${set ? "0xc000100000" : "nil"})`;
  const one = (v: CrdVersion) =>
    `apiextensions.CustomResourceDefinitionVersion{Name:${JSON.stringify(v.name ?? "")}, Served:${!!v.served}, ` +
    `Storage:${!!v.storage}, Deprecated:${!!v.deprecated}, DeprecationWarning:${ptr("string", v.deprecationWarning !== undefined)}, ` +
    `Schema:${ptr("apiextensions.CustomResourceValidation", !!v.schema && !hoisted.schema)}, ` +
    `Subresources:${ptr("apiextensions.CustomResourceSubresources", !!v.subresources && !hoisted.subresources)}, ` +
    `AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition${v.additionalPrinterColumns && !hoisted.columns ? "{...}" : "(nil)"}, ` +
    "SelectableFields:[]apiextensions.SelectableField(nil)}";
  if (!versions.length) return "[]apiextensions.CustomResourceDefinitionVersion(nil)";
  return `[]apiextensions.CustomResourceDefinitionVersion{${versions.map(one).join(", ")}}`;
}

const invalidRaw = (path: string, shown: string, detail: string): StatusCause => ({
  type: "FieldValueInvalid",
  field: path,
  message: `Invalid value: ${shown}: ${detail}`,
});

const LIST_TYPES = ["atomic", "set", "map"];

/** A structural schema's own faults, in upstream's words (sorted by their text, as upstream sorts them). */
function schemaFaults(root: JSONSchemaProps, path: string): StatusCause[] {
  const out: StatusCause[] = [];
  const walk = (given: JSONSchemaProps | null, at: string, where: "root" | "field" | "items") => {
    // a null schema decodes as an empty one, which then lacks its type
    const s = isObject(given) ? given : ({} as JSONSchemaProps);
    const preserve = s["x-kubernetes-preserve-unknown-fields"];
    if (preserve === false)
      out.push(
        invalidRaw(`${at}.x-kubernetes-preserve-unknown-fields`, "false", "must be true or undefined"),
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
    out.push(...ruleFaults(s, at));
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
function ruleFaults(s: JSONSchemaProps, at: string): StatusCause[] {
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
    if (typeof compiled !== "function")
      out.push({
        type: "FieldValueInvalid",
        field: `${rp}.rule`,
        message: `Invalid value: ${goRule(r)}: ${compiled.error}`,
      });
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

function columnFaults(cols: CrdVersion["additionalPrinterColumns"], path: string): StatusCause[] {
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
function scaleFaults(scale: NonNullable<CrdVersion["subresources"]>["scale"], path: string): StatusCause[] {
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

/** Whether every version carries the same value (upstream then reports it once, at the top level). */
function same<T>(versions: CrdVersion[], pick: (v: CrdVersion) => T | undefined): boolean {
  const first = JSON.stringify(pick(versions[0]));
  return first !== undefined && versions.every((v) => JSON.stringify(pick(v)) === first);
}

/** The CRD's versions, each an object (a null one is read as empty, as Go decodes it). */
function versionsOf(crd: Crd): CrdVersion[] {
  const list = isObject(crd.spec) && Array.isArray(crd.spec.versions) ? crd.spec.versions : [];
  return list.map((v) => (isObject(v) ? v : ({} as CrdVersion)));
}

function validateVersions(crd: Crd): StatusCause[] {
  const causes: StatusCause[] = [];
  const versions = versionsOf(crd);
  // what all versions share is converted to the top-level field first, and reported there
  const hoisted = {
    schema: versions.length > 0 && same(versions, (v) => v.schema),
    columns: versions.length > 0 && same(versions, (v) => v.additionalPrinterColumns),
    subresources: versions.length > 0 && same(versions, (v) => v.subresources),
  };
  const seen = new Set<string>();
  let duplicate = false;
  versions.forEach((v, i) => {
    const at = `spec.versions[${i}]`;
    if (!v.name) causes.push(field.required(`${at}.name`));
    else {
      const errs = isDNS1035Label(v.name);
      if (errs.length) causes.push(field.invalid(`${at}.name`, v.name, errs.join(",")));
      if (seen.has(v.name)) duplicate = true;
      seen.add(v.name);
    }
    if (!hoisted.schema) {
      const schema = v.schema?.openAPIV3Schema;
      if (!schema) causes.push(field.required(`${at}.schema.openAPIV3Schema`, "schemas are required"));
      else causes.push(...schemaFaults(schema, `${at}.schema.openAPIV3Schema`));
    }
    if (!hoisted.columns)
      causes.push(...columnFaults(v.additionalPrinterColumns, `${at}.additionalPrinterColumns`));
    if (!hoisted.subresources) causes.push(...scaleFaults(v.subresources?.scale, `${at}.subresources.scale`));
  });
  if (hoisted.schema) {
    const schema = versions[0].schema?.openAPIV3Schema;
    if (!schema)
      for (let i = 0; i < versions.length; i++)
        causes.push(field.required(`spec.versions[${i}].schema.openAPIV3Schema`, "schemas are required"));
    else causes.push(...schemaFaults(schema, "spec.validation.openAPIV3Schema"));
  }
  if (hoisted.columns)
    causes.push(...columnFaults(versions[0].additionalPrinterColumns, "spec.additionalPrinterColumns"));
  if (hoisted.subresources)
    causes.push(...scaleFaults(versions[0].subresources?.scale, "spec.subresources.scale"));
  if (duplicate)
    causes.push(
      invalidRaw("spec.versions", goVersions(versions, hoisted), "must contain unique version names"),
    );
  if (versions.filter((v) => v.storage).length !== 1)
    causes.push(
      invalidRaw(
        "spec.versions",
        goVersions(versions, hoisted),
        "must have exactly one version marked as storage version",
      ),
    );
  return causes;
}

const PROTECTED = /(^|\.)(k8s\.io|kubernetes\.io)$/;
const APPROVAL = "api-approved.kubernetes.io";

export function validateCrd(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const crd = obj as Crd;
  const causes = validateMeta(obj, old, { namespaced: false });
  const spec = isObject(crd.spec) ? crd.spec : ({} as Crd["spec"]);
  const names = isObject(spec.names) ? spec.names : ({} as Crd["spec"]["names"]);
  const group = spec.group ?? "";
  if (crd.metadata.name && crd.metadata.name !== `${names.plural}.${group}`)
    causes.push(
      field.invalid("metadata.name", crd.metadata.name, 'must be spec.names.plural+"."+spec.group'),
    );
  if (!group) causes.push(field.required("spec.group"));
  else {
    const errs = isDNS1123Subdomain(group);
    if (errs.length) causes.push(field.invalid("spec.group", group, errs.join(",")));
    if (group.split(".").length < 2)
      causes.push(field.invalid("spec.group", group, "should be a domain with at least one dot"));
    if (PROTECTED.test(group) && !crd.metadata.annotations?.[APPROVAL])
      causes.push(
        field.required(
          `metadata.annotations[${APPROVAL}]`,
          `protected groups must have approval annotation "${APPROVAL}", see https://github.com/kubernetes/enhancements/pull/1111`,
        ),
      );
  }
  if (!spec.scope) causes.push(field.required("spec.scope"));
  else if (spec.scope !== "Cluster" && spec.scope !== "Namespaced")
    causes.push(field.notSupported("spec.scope", spec.scope, ["Cluster", "Namespaced"]));
  const label = (path: string, v: string | undefined, required: boolean) => {
    if (!v) {
      if (required) causes.push(field.required(path));
      return;
    }
    const errs = isDNS1035Label(v);
    if (errs.length) causes.push(field.invalid(path, v, errs.join(",")));
  };
  label("spec.names.plural", names.plural, true);
  label("spec.names.singular", names.singular, true);
  for (const [i, s] of (names.shortNames ?? []).entries()) label(`spec.names.shortNames[${i}]`, s, true);
  for (const [i, s] of (names.categories ?? []).entries()) label(`spec.names.categories[${i}]`, s, true);
  const kind = (path: string, v: string | undefined) => {
    if (!v) {
      causes.push(field.required(path));
      return;
    }
    const errs = isDNS1035Label(v.toLowerCase());
    if (errs.length)
      causes.push(
        field.invalid(path, v, `may have mixed case, but should otherwise match: ${errs.join(",")}`),
      );
  };
  kind("spec.names.kind", names.kind);
  kind("spec.names.listKind", names.listKind);
  if (names.kind && names.kind === names.listKind)
    causes.push(
      field.invalid("spec.names.listKind", names.listKind, "kind and listKind may not be the same"),
    );
  causes.push(...validateVersions(crd));
  if (old) {
    const was = isObject((old as Crd).spec) ? (old as Crd).spec : ({} as Crd["spec"]);
    if (group !== was.group) causes.push(field.invalid("spec.group", group, "field is immutable"));
    if (names.plural !== was.names?.plural)
      causes.push(field.invalid("spec.names.plural", names.plural, "field is immutable"));
    // scope and kind are settled once the resource has been served
    if (isEstablished(old as Crd)) {
      if (spec.scope !== was.scope)
        causes.push(field.invalid("spec.scope", spec.scope, "field is immutable"));
      if (names.kind !== was.names?.kind)
        causes.push(field.invalid("spec.names.kind", names.kind, "field is immutable"));
    }
  }
  return causes;
}

export const customresourcedefinitions: ResourceDef = {
  group: CRD_GROUP,
  version: "v1",
  resource: "customresourcedefinitions",
  kind: "CustomResourceDefinition",
  listKind: "CustomResourceDefinitionList",
  singular: "customresourcedefinition",
  namespaced: false,
  shortNames: ["crd", "crds"],
  categories: ["api-extensions"],
  verbs: STANDARD_VERBS,
  subresources: { status: { kind: "CustomResourceDefinition", verbs: ["get", "patch", "update"] } },
  strategy: {
    generation: true,
    defaults: (obj) => {
      const crd = obj as Crd;
      const names = crd.spec?.names;
      if (names?.kind) {
        names.singular ||= names.kind.toLowerCase();
        names.listKind ||= `${names.kind}List`;
      }
      const spec = crd.spec as any;
      if (spec) spec.conversion ??= { strategy: "None" };
      // names changed on a live CRD are accepted again, as the naming controller would
      if (crd.status?.acceptedNames && names) establish(crd, crd);
    },
    prepareForCreate: (obj) => {
      obj.metadata.generation = 1;
      delete obj.status;
      establish(obj as Crd);
    },
    validate: validateCrd,
    markForDeletion: (obj) => {
      // as upstream's CRD storage does on delete: the objects go first (controllers/crd-finalizer.ts)
      const meta = obj.metadata;
      if (!meta.finalizers?.includes(CRD_CLEANUP_FINALIZER))
        meta.finalizers = [...(meta.finalizers ?? []), CRD_CLEANUP_FINALIZER];
      setCrdCondition(
        obj as Crd,
        "Terminating",
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
      );
    },
    columns: [nameColumn, createdAtColumn],
  },
};
