// core/v1 limitranges and resourcequotas.

import { field, type StatusCause } from "../errors";
import { parseQuantity, QUANTITY_FORMAT_MESSAGE } from "../quantity";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { validateMeta } from "../validation/metadata";
import { ageColumn, column, createdAtColumn, isObject, nameColumn } from "./common";

const LIMIT_TYPES = ["Container", "Pod", "PersistentVolumeClaim"];

function quantities(map: unknown, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  for (const [k, v] of Object.entries(isObject(map) ? map : {})) {
    const q = parseQuantity(v);
    if (q === undefined) causes.push(field.invalid(`${path}[${k}]`, v, QUANTITY_FORMAT_MESSAGE));
    else if (q < 0) causes.push(field.invalid(`${path}[${k}]`, v, "must be greater than or equal to 0"));
  }
  return causes;
}

/** SetDefaults_LimitRangeItem: container defaults come from max, default requests from default or min. */
function defaultLimitRange(obj: KubeObject): void {
  const limits = Array.isArray(obj.spec?.limits) ? obj.spec.limits : [];
  for (const item of limits) {
    if (!isObject(item) || item.type !== "Container") continue;
    const def: Record<string, unknown> = isObject(item.default) ? item.default : {};
    const req: Record<string, unknown> = isObject(item.defaultRequest) ? item.defaultRequest : {};
    for (const [k, v] of Object.entries(isObject(item.max) ? item.max : {})) if (!(k in def)) def[k] = v;
    for (const [k, v] of Object.entries(def)) if (!(k in req)) req[k] = v;
    for (const [k, v] of Object.entries(isObject(item.min) ? item.min : {})) if (!(k in req)) req[k] = v;
    item.default = def;
    item.defaultRequest = req;
  }
}

export const limitranges: ResourceDef = {
  group: "",
  version: "v1",
  resource: "limitranges",
  kind: "LimitRange",
  listKind: "LimitRangeList",
  singular: "limitrange",
  namespaced: true,
  shortNames: ["limits"],
  verbs: STANDARD_VERBS,
  strategy: {
    defaults: defaultLimitRange,
    validate: (obj, old) => {
      const causes = validateMeta(obj, old, { namespaced: true });
      const limits = Array.isArray(obj.spec?.limits) ? obj.spec.limits : [];
      limits.forEach((item: any, i: number) => {
        const p = `spec.limits[${i}]`;
        if (!item?.type) causes.push(field.required(`${p}.type`));
        else if (!LIMIT_TYPES.includes(item.type))
          causes.push(field.notSupported(`${p}.type`, item.type, LIMIT_TYPES));
        for (const part of ["max", "min", "default", "defaultRequest", "maxLimitRequestRatio"])
          causes.push(...quantities(item?.[part], `${p}.${part}`));
      });
      return causes;
    },
    columns: [nameColumn, createdAtColumn],
    generation: false,
  },
};

function quotaColumns(o: KubeObject): { request: string; limit: string } {
  const hard = isObject(o.status?.hard) ? o.status.hard : {};
  const used = isObject(o.status?.used) ? o.status.used : {};
  const request: string[] = [];
  const limit: string[] = [];
  for (const r of Object.keys(hard).sort()) {
    const text = `${r}: ${used[r] ?? "0"}/${hard[r]}`;
    const parts = r.split(".");
    (parts.length > 1 && parts[0] === "limits" ? limit : request).push(text);
  }
  return { request: request.join(", "), limit: limit.join(", ") };
}

export const resourcequotas: ResourceDef = {
  group: "",
  version: "v1",
  resource: "resourcequotas",
  kind: "ResourceQuota",
  listKind: "ResourceQuotaList",
  singular: "resourcequota",
  namespaced: true,
  shortNames: ["quota"],
  verbs: STANDARD_VERBS,
  subresources: { status: { kind: "ResourceQuota", verbs: ["get", "patch", "update"] } },
  strategy: {
    prepareForCreate: (obj) => {
      obj.status = {};
    },
    validate: (obj, old) => [
      ...validateMeta(obj, old, { namespaced: true }),
      ...quantities(obj.spec?.hard, "spec.hard"),
    ],
    columns: [
      nameColumn,
      ageColumn,
      column(
        "Request",
        "string",
        "Request represents a minimum amount of cpu/memory that a container may consume.",
        (o) => quotaColumns(o).request,
      ),
      column(
        "Limit",
        "string",
        "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
        (o) => quotaColumns(o).limit,
      ),
    ],
    generation: false,
  },
};
