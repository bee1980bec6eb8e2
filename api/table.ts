// metav1.Table for `kubectl get`: the strategy's columns, NAME first, AGE where upstream has it.
import type { ResourceDef, TableColumn } from "./resource";
import type { KubeObject } from "./types";

export type IncludeObject = "None" | "Metadata" | "Object";

/** The content type of a Table answer. */
export const TABLE_TYPE = "application/json;as=Table;v=v1;g=meta.k8s.io";

const NAME: TableColumn = {
  name: "Name",
  type: "string",
  format: "name",
  description: "Name must be unique within a namespace.",
  priority: 0,
  cell: (o) => o.metadata.name,
};

export function columnsOf(def: ResourceDef): TableColumn[] {
  const cols = def.strategy.columns ?? [];
  if (cols.some((c) => c.format === "name" || c.name === "Name")) return cols;
  return [NAME, ...cols];
}

export function columnDefinitions(def: ResourceDef) {
  return definitionsOf(columnsOf(def));
}

function definitionsOf(columns: TableColumn[]) {
  return columns.map(({ name, type, format, description, priority }) => ({
    name,
    type,
    format: format ?? "",
    description,
    priority,
  }));
}

export function tableRow(def: ResourceDef, obj: KubeObject, include: IncludeObject, now: number) {
  return rowOf(columnsOf(def), obj, include, now);
}

function rowOf(columns: TableColumn[], obj: KubeObject, include: IncludeObject, now: number) {
  const row: Record<string, unknown> = { cells: columns.map((c) => c.cell(obj, now) ?? "") };
  if (include === "Object") row.object = obj;
  else if (include === "Metadata")
    row.object = {
      kind: "PartialObjectMetadata",
      apiVersion: "meta.k8s.io/v1",
      metadata: obj.metadata,
    };
  return row;
}

/**
 * A Table of one object of a kind with no resource of its own (a subresource's: Scale),
 * carrying the object's resourceVersion as upstream's table of one object does.
 */
export function tableOfKind(columns: TableColumn[], obj: KubeObject, include: IncludeObject) {
  const rv = obj.metadata?.resourceVersion;
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: rv ? { resourceVersion: rv } : {},
    columnDefinitions: definitionsOf(columns),
    rows: [rowOf(columns, obj, include, Date.now())],
  };
}

export function table(
  def: ResourceDef,
  objs: KubeObject[],
  opts: {
    include: IncludeObject;
    headers: boolean;
    resourceVersion?: string;
    continue?: string;
    remainingItemCount?: number;
  },
) {
  const now = Date.now();
  const metadata: Record<string, string | number> = {};
  if (opts.resourceVersion) metadata.resourceVersion = opts.resourceVersion;
  if (opts.continue) metadata.continue = opts.continue;
  if (opts.remainingItemCount !== undefined) metadata.remainingItemCount = opts.remainingItemCount;
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata,
    columnDefinitions: opts.headers ? columnDefinitions(def) : [],
    rows: objs.map((o) => tableRow(def, o, opts.include, now)),
  };
}
