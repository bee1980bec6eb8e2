// The REST operations of each served resource, in a neutral form that the
// OpenAPI v2 and v3 builders render. Follows upstream's path layout and
// x-kubernetes-action / x-kubernetes-group-version-kind extensions.

import { apiVersionOf, type ResourceDef } from "../../api/resource";
import { definitionIdFor, type GVK, META } from "./definitions";

export type Method = "get" | "put" | "post" | "patch" | "delete";

export interface Operation {
  path: string;
  method: Method;
  operationId: string;
  description: string;
  action: string;
  gvk?: GVK;
  /** definition id of the request body, when there is one */
  body?: string;
  /** definition id of the response, or "string" for text streams */
  response?: string;
  query: string[];
  pathParams: string[];
  consumes?: string[];
  produces: string[];
}

export const PATCH_TYPES = [
  "application/json-patch+json",
  "application/merge-patch+json",
  "application/strategic-merge-patch+json",
  "application/apply-patch+yaml",
];

const LIST_Q = [
  "allowWatchBookmarks",
  "continue",
  "fieldSelector",
  "labelSelector",
  "limit",
  "resourceVersion",
  "resourceVersionMatch",
  "sendInitialEvents",
  "timeoutSeconds",
  "watch",
];
const WRITE_Q = ["dryRun", "fieldManager", "fieldValidation"];
const PATCH_Q = [...WRITE_Q, "force"];
const DELETE_Q = ["dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy"];
const CONNECT_Q: Record<string, string[]> = {
  log: ["container", "follow", "previous", "sinceSeconds", "tailLines", "timestamps"],
  exec: ["command", "container", "stderr", "stdin", "stdout", "tty"],
  attach: ["container", "stderr", "stdin", "stdout", "tty"],
  portforward: ["ports"],
  proxy: ["path"],
};
/** A custom resource has no Go type to merge strategically by: kubectl apply then merge-patches it. */
const CUSTOM_PATCH_TYPES = PATCH_TYPES.filter((t) => t !== "application/strategic-merge-patch+json");
const JSON_TYPES = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"];
const WATCHABLE = [
  ...JSON_TYPES,
  "application/json;stream=watch",
  "application/vnd.kubernetes.protobuf;stream=watch",
];

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
const gvkOf = (d: ResourceDef): GVK => ({ group: d.group, version: d.version, kind: d.kind });

/** All operations of one group-version, upstream-style paths. */
export function operationsFor(defs: ResourceDef[], group: string, version: string): Operation[] {
  const ops: Operation[] = [];
  const prefix = group ? `/apis/${group}/${version}` : `/api/${version}`;
  const tag = (group ? group.split(".")[0] : "core") + cap(version);
  for (const d of defs.filter((x) => x.group === group && x.version === version)) {
    const custom = d.custom?.openapi;
    const id = custom?.id ?? definitionIdFor(gvkOf(d));
    const listId =
      custom?.listId ?? definitionIdFor({ group: d.group, version: d.version, kind: d.listKind });
    const gvk = gvkOf(d);
    const ns = d.namespaced ? "/namespaces/{namespace}" : "";
    const nsParams = d.namespaced ? ["namespace"] : [];
    const coll = `${prefix}${ns}/${d.resource}`;
    const item = `${coll}/{name}`;
    const kindName = d.kind;
    const scope = d.namespaced ? "Namespaced" : "";
    const has = (v: string) => d.verbs.includes(v);
    const op = (o: Omit<Operation, "operationId" | "produces"> & { produces?: string[] }, verb: string) =>
      ops.push({ produces: JSON_TYPES, ...o, operationId: `${verb}${cap(tag)}${scope}${kindName}` });
    if (has("list")) {
      op(
        {
          path: coll,
          method: "get",
          description: `list or watch objects of kind ${kindName}`,
          action: "list",
          gvk,
          response: listId,
          query: LIST_Q,
          pathParams: nsParams,
          produces: WATCHABLE,
        },
        "list",
      );
      if (d.namespaced) {
        ops.push({
          path: `${prefix}/${d.resource}`,
          method: "get",
          operationId: `list${cap(tag)}${kindName}ForAllNamespaces`,
          description: `list or watch objects of kind ${kindName}`,
          action: "list",
          gvk,
          response: listId,
          query: LIST_Q,
          pathParams: [],
          produces: WATCHABLE,
        });
      }
    }
    if (has("create")) {
      op(
        {
          path: coll,
          method: "post",
          description: `create a ${kindName}`,
          action: "post",
          gvk,
          body: id,
          response: id,
          query: WRITE_Q,
          pathParams: nsParams,
          consumes: ["*/*"],
        },
        "create",
      );
    }
    if (has("deletecollection")) {
      op(
        {
          path: coll,
          method: "delete",
          description: `delete collection of ${kindName}`,
          action: "deletecollection",
          gvk,
          body: `${META}.DeleteOptions`,
          response: `${META}.Status`,
          query: [...LIST_Q.filter((q) => q !== "watch" && q !== "allowWatchBookmarks"), ...DELETE_Q],
          pathParams: nsParams,
          consumes: ["*/*"],
        },
        "deleteCollection",
      );
    }
    const itemParams = ["name", ...nsParams];
    if (has("get"))
      op(
        {
          path: item,
          method: "get",
          description: `read the specified ${kindName}`,
          action: "get",
          gvk,
          response: id,
          query: [],
          pathParams: itemParams,
        },
        "read",
      );
    if (has("update"))
      op(
        {
          path: item,
          method: "put",
          description: `replace the specified ${kindName}`,
          action: "put",
          gvk,
          body: id,
          response: id,
          query: WRITE_Q,
          pathParams: itemParams,
          consumes: ["*/*"],
        },
        "replace",
      );
    if (has("patch"))
      op(
        {
          path: item,
          method: "patch",
          description: `partially update the specified ${kindName}`,
          action: "patch",
          gvk,
          body: `${META}.Patch`,
          response: id,
          query: PATCH_Q,
          pathParams: itemParams,
          consumes: custom ? CUSTOM_PATCH_TYPES : PATCH_TYPES,
        },
        "patch",
      );
    if (has("delete"))
      op(
        {
          path: item,
          method: "delete",
          description: `delete a ${kindName}`,
          action: "delete",
          gvk,
          body: `${META}.DeleteOptions`,
          response: `${META}.Status`,
          query: DELETE_Q,
          pathParams: itemParams,
          consumes: ["*/*"],
        },
        "delete",
      );

    for (const [sub, s] of Object.entries(d.subresources ?? {})) {
      const path = `${item}/${sub}`;
      const subName = sub.split("/").map(cap).join("");
      const suffix = `${subName}`;
      if (CONNECT_Q[sub]) {
        const methods: Method[] =
          sub === "log"
            ? ["get"]
            : sub === "proxy"
              ? ["get", "put", "post", "patch", "delete"]
              : ["get", "post"];
        for (const m of methods) {
          ops.push({
            path,
            method: m,
            operationId: `connect${cap(m)}${cap(tag)}${scope}${kindName}${suffix}`,
            description:
              sub === "log"
                ? `read log of the specified ${kindName}`
                : `connect ${m.toUpperCase()} requests to ${sub} of ${kindName}`,
            action: sub === "log" ? "get" : "connect",
            gvk: sub === "log" ? gvk : undefined,
            response: "string",
            query: CONNECT_Q[sub],
            pathParams: itemParams,
            produces: sub === "log" ? ["text/plain", "application/json", "application/yaml"] : ["*/*"],
          });
        }
        continue;
      }
      const subGvk: GVK = { group: s.group ?? d.group, version: s.version ?? d.version, kind: s.kind };
      // a custom resource's status is the object itself
      const subId = custom && s.kind === d.kind ? custom.id : definitionIdFor(subGvk);
      const sverb = (v: string) => s.verbs.includes(v);
      const base = { gvk: subGvk, pathParams: itemParams };
      if (sverb("get"))
        ops.push({
          ...base,
          path,
          method: "get",
          operationId: `read${cap(tag)}${scope}${kindName}${suffix}`,
          description: `read ${sub} of the specified ${kindName}`,
          action: "get",
          response: subId,
          query: [],
          produces: JSON_TYPES,
        });
      if (sverb("update"))
        ops.push({
          ...base,
          path,
          method: "put",
          operationId: `replace${cap(tag)}${scope}${kindName}${suffix}`,
          description: `replace ${sub} of the specified ${kindName}`,
          action: "put",
          body: subId,
          response: subId,
          query: WRITE_Q,
          consumes: ["*/*"],
          produces: JSON_TYPES,
        });
      if (sverb("patch"))
        ops.push({
          ...base,
          path,
          method: "patch",
          operationId: `patch${cap(tag)}${scope}${kindName}${suffix}`,
          description: `partially update ${sub} of the specified ${kindName}`,
          action: "patch",
          body: `${META}.Patch`,
          response: subId,
          query: PATCH_Q,
          consumes: custom ? CUSTOM_PATCH_TYPES : PATCH_TYPES,
          produces: JSON_TYPES,
        });
      if (sverb("create"))
        ops.push({
          ...base,
          path,
          method: "post",
          operationId: `create${cap(tag)}${scope}${kindName}${suffix}`,
          description: `create ${sub} of a ${kindName}`,
          action: "post",
          body: subId,
          response: subId,
          query: WRITE_Q,
          consumes: ["*/*"],
          produces: JSON_TYPES,
        });
    }
  }
  return ops;
}

/** The definition ids a group-version's document must carry. */
export function rootIdsFor(ops: Operation[]): string[] {
  const ids = new Set<string>([
    `${META}.Status`,
    `${META}.DeleteOptions`,
    `${META}.Patch`,
    `${META}.WatchEvent`,
  ]);
  for (const o of ops) {
    if (o.body && o.body !== "string") ids.add(o.body);
    if (o.response && o.response !== "string") ids.add(o.response);
  }
  return [...ids];
}

export function groupVersionsOf(defs: ResourceDef[]): { group: string; version: string; key: string }[] {
  const seen = new Map<string, { group: string; version: string; key: string }>();
  for (const d of defs) {
    const key = d.group ? `apis/${apiVersionOf(d)}` : `api/${d.version}`;
    if (!seen.has(key)) seen.set(key, { group: d.group, version: d.version, key });
  }
  return [...seen.values()];
}
