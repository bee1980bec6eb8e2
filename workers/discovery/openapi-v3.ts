// OpenAPI v3: the /openapi/v3 index and one document per group-version
// (upstream's layout: components.schemas with allOf-wrapped references,
// operations with x-kubernetes-action and x-kubernetes-group-version-kind).

import { hashText } from "../../api/hash";
import type { ResourceDef } from "../../api/resource";
import { closure, DEFINITIONS, META, mapRefs, type Schema } from "./definitions";
import { groupVersionsOf, type Operation, operationsFor, rootIdsFor } from "./operations";
import { QUERY_PARAMS } from "./query-params";

const V3_REF = "#/components/schemas/";

/** Converts one Swagger 2.0 definition to its v3 form. */
export function toV3Schema(def: Schema): Schema {
  const s = mapRefs(def, (id) => V3_REF + id);
  if (s.properties) {
    for (const [name, p] of Object.entries(s.properties)) {
      if (p.$ref) {
        const { $ref, ...rest } = p;
        s.properties[name] = { ...rest, allOf: [{ $ref }] };
      }
    }
  }
  return s;
}

function parameter(name: string, inPath: boolean): Record<string, unknown> {
  if (inPath) {
    const description =
      name === "namespace"
        ? "object name and auth scope, such as for teams and projects"
        : `name of the resource`;
    return { name, in: "path", description, required: true, schema: { type: "string", uniqueItems: true } };
  }
  const q = QUERY_PARAMS[name] ?? { type: "string", description: name };
  return { name, in: "query", description: q.description, schema: { type: q.type, uniqueItems: true } };
}

function responseContent(o: Operation): Record<string, unknown> {
  const schema = o.response === "string" || !o.response ? { type: "string" } : { $ref: V3_REF + o.response };
  return Object.fromEntries(o.produces.map((t) => [t, { schema }]));
}

/** Upstream-style tag from the path: core_v1, apps_v1, rbacAuthorization_v1. */
export function tagOf(path: string): string {
  const parts = path.split("/");
  if (parts[1] === "api") return `core_${parts[2]}`;
  const group = parts[2].replace(/\.k8s\.io$/, "").replace(/\.(\w)/g, (_, c: string) => c.toUpperCase());
  return `${group}_${parts[3]}`;
}

function renderOperation(o: Operation): Record<string, unknown> {
  const op: Record<string, unknown> = {
    tags: [tagOf(o.path)],
    description: o.description,
    operationId: o.operationId,
    parameters: o.query.map((q) => parameter(q, false)),
    responses: {
      "200": { description: "OK", content: responseContent(o) },
      "401": { description: "Unauthorized" },
    },
    "x-kubernetes-action": o.action,
  };
  if (o.method === "post") {
    (op.responses as Record<string, unknown>)["201"] = {
      description: "Created",
      content: responseContent(o),
    };
    (op.responses as Record<string, unknown>)["202"] = {
      description: "Accepted",
      content: responseContent(o),
    };
  }
  if (o.body) {
    const types = o.consumes && o.consumes[0] !== "*/*" ? o.consumes : ["*/*"];
    op.requestBody = {
      content: Object.fromEntries(types.map((t) => [t, { schema: { $ref: V3_REF + o.body } }])),
      required: o.method !== "delete",
    };
  }
  if (o.gvk) op["x-kubernetes-group-version-kind"] = o.gvk;
  return op;
}

/** The OpenAPI v3 document for one group-version ("" group = core). */
export function openapiV3Document(
  defs: ResourceDef[],
  group: string,
  version: string,
): Record<string, unknown> | undefined {
  const ops = operationsFor(defs, group, version);
  if (!ops.length) return undefined;
  const paths: Record<string, Record<string, unknown>> = {};
  for (const o of ops) {
    const entry = (paths[o.path] ??= { parameters: [] });
    entry[o.method] = renderOperation(o);
    if (!(entry.parameters as unknown[]).length) {
      entry.parameters = [...o.pathParams.map((p) => parameter(p, true)), parameter("pretty", false)];
    }
  }
  const schemas: Record<string, Schema> = {};
  const custom = defs.filter((d) => d.group === group && d.version === version && d.custom?.openapi);
  const roots = rootIdsFor(ops);
  // a custom kind's schema refers to ObjectMeta and ListMeta, which bring their own
  if (custom.length) roots.push(`${META}.ObjectMeta`, `${META}.ListMeta`);
  for (const id of closure(roots)) schemas[id] = toV3Schema(DEFINITIONS[id]);
  for (const d of custom)
    for (const [id, schema] of Object.entries(d.custom!.openapi!.schemas))
      schemas[id] = toV3Schema(schema as Schema);
  return {
    openapi: "3.0.0",
    info: { title: "Kubernetes", version: "v1.32.0" },
    paths,
    components: {
      schemas,
      securitySchemes: {
        BearerToken: {
          type: "apiKey",
          description: "Bearer Token authentication",
          name: "authorization",
          in: "header",
        },
      },
    },
    security: [{ BearerToken: [] }],
  };
}

export interface V3Entry {
  /** e.g. "api/v1", "apis/apps/v1" */
  key: string;
  body: string;
  hash: string;
}

const cache = new WeakMap<ResourceDef[], Map<string, V3Entry>>();

/** Serialized v3 documents keyed by their index path, built once per defs array. */
export function openapiV3Entries(defs: ResourceDef[]): Map<string, V3Entry> {
  let m = cache.get(defs);
  if (m) return m;
  m = new Map();
  for (const gv of groupVersionsOf(defs)) {
    const doc = openapiV3Document(defs, gv.group, gv.version);
    if (!doc) continue;
    const body = JSON.stringify(doc);
    m.set(gv.key, { key: gv.key, body, hash: hashText(body) });
  }
  cache.set(defs, m);
  return m;
}

/** /openapi/v3: {"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}, ...}} */
export function openapiV3Index(defs: ResourceDef[]): Record<string, unknown> {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const e of openapiV3Entries(defs).values()) {
    paths[e.key] = { serverRelativeURL: `/openapi/v3/${e.key}?hash=${e.hash}` };
  }
  return { paths };
}
