// apiextensions.k8s.io/v1 customresourcedefinitions: new kinds a cluster serves (api/custom
// turns each established one into ResourceDefs). Upstream's defaults, validation (names,
// versions, structural schemas) and table. The naming and establishing controllers' status is
// settled in the CRDs' store shard at each write (api/custom/naming.ts).

import { columnFaults, scaleFaults, schemaFaults } from "../custom/crd-checks";
import { type Crd, type CrdVersion, isEstablished, setCrdCondition } from "../custom/definition";
import { crdNames } from "../custom/naming";
import { selectableFieldFaults } from "../custom/selectable";
import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { validateMeta } from "../validation/metadata";
import { isDNS1035Label, isDNS1123Subdomain } from "../validation/names";
import { createdAtColumn, isObject, nameColumn } from "./common";

export const CRD_GROUP = "apiextensions.k8s.io";
/** Held by a CRD being deleted until its objects are gone (controllers/crd/finalizer.ts). */
export const CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io";

/**
 * Adds the storage version to status.storedVersions. The names and the NamesAccepted and
 * Established conditions are settled in the store shard, against the group's other CRDs
 * (api/custom/naming.ts).
 */
function recordStoredVersion(crd: Crd): void {
  const status = (crd.status = { ...(crd.status ?? {}) });
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
    selectable: versions.length > 0 && same(versions, (v) => v.selectableFields),
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
    if (!hoisted.selectable) causes.push(...selectableFieldFaults(v, `${at}.selectableFields`));
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
  if (hoisted.selectable) causes.push(...selectableFieldFaults(versions[0], "spec.selectableFields"));
  if (duplicate)
    causes.push(
      field.invalidShown("spec.versions", goVersions(versions, hoisted), "must contain unique version names"),
    );
  if (versions.filter((v) => v.storage).length !== 1)
    causes.push(
      field.invalidShown(
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
      // a live CRD's storage version joins the stored ones
      if (crd.status) recordStoredVersion(crd);
    },
    prepareForCreate: (obj) => {
      obj.metadata.generation = 1;
      delete obj.status;
      recordStoredVersion(obj as Crd);
    },
    allocator: crdNames,
    validate: validateCrd,
    markForDeletion: (obj) => {
      // as upstream's CRD storage does on delete: the objects go first (controllers/crd/finalizer.ts)
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
