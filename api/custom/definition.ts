// A CustomResourceDefinition turned into the generic registry's ResourceDefs, one per served
// version: names and scope for routing and discovery, the status subresource, the version's
// schema for pruning, defaulting and validation, its printer columns for tables, and its
// OpenAPI definitions.
import type { StatusCause } from "../errors";
import { apiVersionOf, type ResourceDef, type TableColumn } from "../resource";
import { ageColumn, column, nameColumn, translateAge } from "../strategies/common";
import { scaleDocument } from "../strategies/workloads";
import { rfc3339 } from "../time";
import type { KubeObject } from "../types";
import { validateMeta } from "../validation/metadata";
import { findAll } from "./jsonpath";
import { customKey, customViewKey } from "./key";
import { fromStorageAs, readDefaultsOf } from "./read-defaults";
import { validateRules } from "./rules";
import { applyDefaults, type JSONSchemaProps, prune, validateValue } from "./schema";
import { fieldLabel, selectableValuesOf, storedSelectablePaths } from "./selectable";

export interface CrdVersion {
  name: string;
  served?: boolean;
  storage?: boolean;
  deprecated?: boolean;
  deprecationWarning?: string;
  schema?: { openAPIV3Schema?: JSONSchemaProps };
  subresources?: {
    status?: object;
    scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
  };
  additionalPrinterColumns?: PrinterColumn[];
  selectableFields?: { jsonPath: string }[];
}

/** A column a CRD version adds to its tables. */
export interface PrinterColumn {
  name: string;
  type: string;
  format?: string;
  description?: string;
  priority?: number;
  jsonPath: string;
}

export interface Crd extends KubeObject {
  spec: {
    group: string;
    names: {
      plural: string;
      singular?: string;
      kind: string;
      listKind?: string;
      shortNames?: string[];
      categories?: string[];
    };
    scope: "Namespaced" | "Cluster";
    versions: CrdVersion[];
  };
  status?: any;
}

/**
 * The names a CRD is served by: those accepted (status.acceptedNames), as upstream serves
 * them, while a change of the requested ones waits on another CRD (naming.ts).
 */
export function servedNames(crd: Crd): Crd["spec"]["names"] {
  const a = crd.status?.acceptedNames;
  return a && typeof a.kind === "string" && typeof a.plural === "string" ? a : crd.spec.names;
}

/** Sets one of the CRD's conditions: its transition time moves only when its status does. */
export function setCrdCondition(
  crd: Crd,
  type: string,
  status: string,
  reason: string,
  message: string,
): void {
  const conditions: any[] = [...(crd.status?.conditions ?? [])];
  const i = conditions.findIndex((x) => x.type === type);
  const kept = i >= 0 && conditions[i].status === status ? conditions[i].lastTransitionTime : undefined;
  const c = { type, status, lastTransitionTime: kept ?? rfc3339(), reason, message };
  if (i < 0) conditions.push(c);
  else conditions[i] = c;
  crd.status = { ...crd.status, conditions };
}

/** The version objects are stored in. */
export const storageVersion = (crd: Crd): string =>
  crd.spec.versions.find((v) => v.storage)?.name ?? crd.spec.versions[0]?.name ?? "";

/** Whether the CRD is established (its names accepted), so that its resource is served. */
export function isEstablished(crd: Crd): boolean {
  return !!crd.status?.conditions?.some((c: any) => c.type === "Established" && c.status === "True");
}

/** "stable.example.com" -> "com.example.stable": the group as OpenAPI definition ids spell it. */
const reverseGroup = (group: string) => group.split(".").reverse().join(".");

const META = "io.k8s.apimachinery.pkg.apis.meta.v1";

function openapiOf(crd: Crd, v: CrdVersion) {
  const { group } = crd.spec;
  const names = servedNames(crd);
  const listKind = names.listKind ?? `${names.kind}List`;
  const id = `${reverseGroup(group)}.${v.name}.${names.kind}`;
  const listId = `${reverseGroup(group)}.${v.name}.${listKind}`;
  const gvk = (kind: string) => [{ group, version: v.name, kind }];
  const schema = structuredClone(v.schema?.openAPIV3Schema ?? { type: "object" }) as Record<string, any>;
  schema.properties = {
    ...schema.properties,
    apiVersion: {
      description:
        "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
      type: "string",
    },
    kind: {
      description:
        "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
      type: "string",
    },
    metadata: {
      description:
        "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
      $ref: `#/definitions/${META}.ObjectMeta`,
    },
  };
  schema.type = "object";
  schema["x-kubernetes-group-version-kind"] = gvk(names.kind);
  const list = {
    description: `${listKind} is a list of ${names.kind}`,
    type: "object",
    required: ["items"],
    properties: {
      apiVersion: schema.properties.apiVersion,
      items: {
        description: `List of ${names.plural}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md`,
        type: "array",
        items: { $ref: `#/definitions/${id}` },
      },
      kind: schema.properties.kind,
      metadata: {
        description:
          "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
        $ref: `#/definitions/${META}.ListMeta`,
      },
    },
    "x-kubernetes-group-version-kind": gvk(listKind),
  };
  return { id, listId, schemas: { [id]: schema, [listId]: list } };
}

/** A printer column's cell, as upstream's table convertor gives it. */
function printerCell(col: PrinterColumn) {
  return (o: KubeObject, now: number): unknown => {
    const found = findAll(o, col.jsonPath);
    if (!found.length || found[0] === undefined) return null;
    const v = found[0];
    switch (col.type) {
      case "date":
        if (typeof v !== "string") return null;
        return Number.isNaN(Date.parse(v)) ? "<invalid>" : translateAge(v, now);
      case "string":
        return typeof v === "string" ? v : JSON.stringify(v);
      case "integer":
        return typeof v === "number" ? Math.trunc(v) : null;
      case "number":
        return typeof v === "number" ? v : null;
      case "boolean":
        return typeof v === "boolean" ? v : null;
      default:
        return v;
    }
  };
}

function columnsOf(cols: PrinterColumn[] | undefined): TableColumn[] {
  if (!cols?.length) return [nameColumn, ageColumn];
  return [
    nameColumn,
    ...cols.map((c) =>
      column(
        c.name,
        (["integer", "number", "boolean", "date"].includes(c.type)
          ? c.type
          : "string") as TableColumn["type"],
        c.description || `Custom resource definition column (in JSONPath format): ${c.jsonPath}`,
        printerCell(c),
        c.priority ?? 0,
      ),
    ),
  ];
}

/** Everything of a custom object but its metadata: what a generation counts, as upstream's strategy does. */
function generationOf(obj: KubeObject): unknown {
  const { metadata: _m, ...rest } = obj as Record<string, unknown>;
  return rest;
}

function subresourcesOf(kind: string, v: CrdVersion): ResourceDef["subresources"] {
  const subs: NonNullable<ResourceDef["subresources"]> = {};
  const verbs = ["get", "patch", "update"];
  if (v.subresources?.status) subs.status = { kind, verbs };
  if (v.subresources?.scale) subs.scale = { kind: "Scale", group: "autoscaling", version: "v1", verbs };
  return Object.keys(subs).length ? subs : undefined;
}

const CUSTOM_VERBS = ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"];
const TERMINATING_VERBS = ["delete", "deletecollection", "get", "list", "watch"];

/** The ResourceDef of one served version of an established CRD. */
export function customDef(crd: Crd, v: CrdVersion): ResourceDef {
  const { group, scope } = crd.spec;
  const names = servedNames(crd);
  const namespaced = scope !== "Cluster";
  const listKind = names.listKind ?? `${names.kind}List`;
  const stored = storageVersion(crd);
  // the store computes every version's selectable fields; this version accepts its own
  const selectable = storedSelectablePaths(crd.spec.versions);
  const fields = selectableValuesOf(selectable);
  const storeKey = customKey({
    group,
    resource: names.plural,
    kind: names.kind,
    listKind,
    version: stored,
    namespaced,
    stamp: /^\d+$/.test(crd.metadata.resourceVersion ?? "") ? crd.metadata.resourceVersion : "0",
    selectable,
  });
  const schema = v.schema?.openAPIV3Schema ?? {
    type: "object",
    "x-kubernetes-preserve-unknown-fields": true,
  };
  const def: ResourceDef = {
    group,
    version: v.name,
    resource: names.plural,
    kind: names.kind,
    listKind,
    singular: names.singular ?? names.kind.toLowerCase(),
    namespaced,
    shortNames: names.shortNames,
    categories: names.categories,
    // in the order upstream's CRD discovery lists them; fewer while the CRD is being deleted
    verbs: crd.metadata.deletionTimestamp ? TERMINATING_VERBS : CUSTOM_VERBS,
    subresources: subresourcesOf(names.kind, v),
    custom: {
      storeKey,
      openapi: openapiOf(crd, v),
      columns: v.additionalPrinterColumns ?? [],
      terminating: !!crd.metadata.deletionTimestamp,
      scale: v.subresources?.scale,
      selectable,
      fieldLabels: (v.selectableFields ?? []).map((f) => fieldLabel(f.jsonPath)),
    },
    strategy: {
      generation: true,
      generationOf,
      prune: (obj) => prune(obj as Record<string, unknown>, schema),
      defaults: (obj) => applyDefaults(obj, schema),
      validate: (obj, old, warn): StatusCause[] => {
        const causes = [...validateMeta(obj, old, { namespaced }), ...validateValue(obj, schema, old)];
        return [...causes, ...validateRules(obj, old, schema, causes, warn)];
      },
      columns: columnsOf(v.additionalPrinterColumns),
      ...(fields ? { fields } : {}),
    },
  };
  if (v.deprecated)
    def.deprecation = v.deprecationWarning ?? `${apiVersionOf(def)} ${names.kind} is deprecated`;
  // objects are read with the defaults of the version they were stored in (read-defaults.ts)
  const trees = readDefaultsOf(crd.spec.versions);
  if (v.name !== stored || trees) {
    // conversion "None": the stored object in another served version differs in apiVersion only
    const storedVersion = `${group}/${stored}`;
    def.storedIn = {
      key: storeKey,
      toStorage: (o) => ({ ...o, apiVersion: storedVersion }),
      fromStorage: fromStorageAs(apiVersionOf(def), trees),
      fieldLabels: {},
      redraws: !!trees,
    };
    def.custom!.viewKey = customViewKey(storeKey, v.name, trees);
  }
  return def;
}

/** The defs of every served version of the CRD (none while it is not established). */
export function customDefsOf(crd: Crd): ResourceDef[] {
  if (!isEstablished(crd)) return [];
  return crd.spec.versions.filter((v) => v.served).map((v) => customDef(crd, v));
}

const withColumns = new Map<string, ResourceDef>();

/**
 * The def with a custom resource's printer columns, for the tables a store shard writes: the
 * shard knows the resource from its key alone, so the Worker sends the columns with the query.
 */
export function tableDef(def: ResourceDef, columns: PrinterColumn[] | undefined): ResourceDef {
  if (!columns) return def;
  const key = `${def.group}/${def.resource}|${JSON.stringify(columns)}`;
  let d = withColumns.get(key);
  if (!d) {
    d = { ...def, strategy: { ...def.strategy, columns: columnsOf(columns) } };
    withColumns.set(key, d);
  }
  return d;
}

/** Sets the value at a simple JSON path, making the objects on the way. */
export function setAtPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.replace(/^\./, "").split(".");
  let x = obj;
  for (const k of keys.slice(0, -1)) {
    const next = x[k];
    const child = typeof next === "object" && next !== null && !Array.isArray(next) ? next : {};
    x[k] = child;
    x = child as Record<string, unknown>;
  }
  x[keys[keys.length - 1]] = value;
}

/** A custom object's Scale, read at its CRD's paths (a missing replica count is 0). */
export function customScaleOf(
  obj: KubeObject,
  paths: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string },
): KubeObject {
  const int = (v: unknown) => (typeof v === "number" ? Math.trunc(v) : 0);
  const selector = paths.labelSelectorPath ? findAll(obj, paths.labelSelectorPath)[0] : undefined;
  return scaleDocument(
    obj,
    int(findAll(obj, paths.specReplicasPath)[0]),
    int(findAll(obj, paths.statusReplicasPath)[0]),
    typeof selector === "string" ? selector : "",
  );
}
