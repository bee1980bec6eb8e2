// OpenAPI v2 (Swagger 2.0) document for /openapi/v2, from the same
// definitions and operations as v3. kubectl fetches it as protobuf (see
// openapi-v2-proto.ts) for client-side validation when a kind has no
// server-side fieldValidation (e.g. `kind: List` input) and as a fallback
// for apply's patch metadata.

import type { ResourceDef } from "../../api/resource";
import { closure, DEFINITIONS, type Schema, V2_REF } from "./definitions";
import { tagOf } from "./openapi-v3";
import { groupVersionsOf, type Operation, operationsFor, rootIdsFor } from "./operations";
import { QUERY_PARAMS } from "./query-params";

function pathParameter(name: string): Record<string, unknown> {
  const description =
    name === "namespace"
      ? "object name and auth scope, such as for teams and projects"
      : "name of the resource";
  return { uniqueItems: true, type: "string", description, name, in: "path", required: true };
}

function queryParameter(name: string): Record<string, unknown> {
  const q = QUERY_PARAMS[name] ?? { type: "string", description: name };
  return { uniqueItems: true, type: q.type, description: q.description, name, in: "query" };
}

function renderOperation(o: Operation): Record<string, unknown> {
  const params: Record<string, unknown>[] = [];
  if (o.body)
    params.push({
      name: "body",
      in: "body",
      required: o.method !== "delete",
      schema: { $ref: V2_REF + o.body },
    });
  params.push(...o.query.map(queryParameter));
  const schema = !o.response || o.response === "string" ? { type: "string" } : { $ref: V2_REF + o.response };
  const responses: Record<string, unknown> = { "200": { description: "OK", schema } };
  if (o.method === "post") {
    responses["201"] = { description: "Created", schema };
    responses["202"] = { description: "Accepted", schema };
  }
  responses["401"] = { description: "Unauthorized" };
  const op: Record<string, unknown> = {
    description: o.description,
    consumes: o.consumes ?? ["*/*"],
    produces: o.produces,
    schemes: ["https"],
    tags: [tagOf(o.path)],
    operationId: o.operationId,
    parameters: params,
    responses,
    "x-kubernetes-action": o.action,
  };
  if (o.gvk) op["x-kubernetes-group-version-kind"] = o.gvk;
  return op;
}

/** The whole Swagger 2.0 document for every served group-version. */
export function openapiV2Document(defs: ResourceDef[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const roots = new Set<string>();
  for (const gv of groupVersionsOf(defs)) {
    const ops = operationsFor(defs, gv.group, gv.version);
    for (const id of rootIdsFor(ops)) roots.add(id);
    for (const o of ops) {
      const entry = (paths[o.path] ??= {});
      entry[o.method] = renderOperation(o);
      entry.parameters ??= [...o.pathParams.map(pathParameter), queryParameter("pretty")];
    }
  }
  const definitions: Record<string, Schema> = {};
  for (const id of closure(roots)) definitions[id] = DEFINITIONS[id];
  // a custom kind appears by name only: its OpenAPI v3 schema (nullable, int-or-string, ...) has
  // no Swagger 2.0 form, and kubectl reads custom kinds from v3
  for (const d of defs) {
    const o = d.custom?.openapi;
    if (!o) continue;
    for (const [id, schema] of Object.entries(o.schemas))
      definitions[id] = {
        type: "object",
        "x-kubernetes-group-version-kind": schema["x-kubernetes-group-version-kind"],
      } as Schema;
  }
  return {
    swagger: "2.0",
    info: { title: "Kubernetes", version: "v1.32.0" },
    paths,
    definitions,
    securityDefinitions: {
      BearerToken: {
        description: "Bearer Token authentication",
        type: "apiKey",
        name: "authorization",
        in: "header",
      },
    },
    security: [{ BearerToken: [] }],
  };
}
