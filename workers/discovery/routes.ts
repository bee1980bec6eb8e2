// One entry point for every discovery and OpenAPI path, framework-free: the
// apiserver calls handleDiscovery() for GET/HEAD requests before its resource
// routes and sends the result as is. Bodies are built once per defs array.

import { notAcceptable } from "../../api/errors";
import { hashText } from "../../api/hash";
import type { ResourceDef } from "../../api/resource";
import { versionBody } from "../../api/version";
import {
  aggregatedDiscoveryBody,
  apiGroupBody,
  apiGroupListBody,
  apiResourceListBody,
  apiVersionsBody,
  negotiateDiscovery,
  parseAccept,
} from "./discovery";
import { openapiV2Document } from "./openapi-v2";
import { encodeOpenapiV2, OPENAPI_V2_PROTO_ACCEPT, OPENAPI_V2_PROTO_CONTENT_TYPE } from "./openapi-v2-proto";
import { openapiV3Entries, openapiV3Index } from "./openapi-v3";

export interface DiscoveryRequest {
  method: string;
  /** URL path without the query, e.g. /openapi/v3/apis/apps/v1 */
  path: string;
  query?: URLSearchParams;
  accept?: string | null;
  ifNoneMatch?: string | null;
  /** host:port the client reached, for /api serverAddressByClientCIDRs */
  host?: string;
}

export interface DiscoveryResponse {
  status: number;
  headers: Record<string, string>;
  /** null for 304 and redirects */
  body: string | Uint8Array | null;
}

/** The paths handleDiscovery answers (Hono-style patterns), for mounting. */
export function openapiRoutes(): { path: string; what: string }[] {
  return [
    { path: "/version", what: "version.Info JSON" },
    { path: "/api", what: "APIVersions, or APIGroupDiscoveryList (core) when Accept asks for it" },
    { path: "/api/v1", what: "APIResourceList" },
    { path: "/apis", what: "APIGroupList, or APIGroupDiscoveryList when Accept asks for it" },
    { path: "/apis/:group", what: "APIGroup" },
    { path: "/apis/:group/:version", what: "APIResourceList" },
    { path: "/openapi/v2", what: "Swagger 2.0: gnostic protobuf or JSON by Accept" },
    { path: "/openapi/v3", what: "index of group-version documents" },
    { path: "/openapi/v3/*", what: "OpenAPI 3.0 document of one group-version (?hash=)" },
  ];
}

const JSON_TYPE = "application/json";
const NO_CACHE = "no-cache, private";

function accepts(accept: string | null | undefined, ...types: string[]): string | undefined {
  const ranges = parseAccept(accept);
  if (!ranges.length) return types[0];
  for (const r of ranges) {
    if (r.type === "*/*" || r.type === "application/*") return types[0];
    const hit = types.find((t) => t === r.type);
    if (hit) return hit;
  }
  return undefined;
}

function etagMatches(ifNoneMatch: string | null | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(",").some((t) => t.trim() === etag || t.trim() === "*");
}

function withEtag(
  req: DiscoveryRequest,
  body: string | Uint8Array,
  contentType: string,
  extra: Record<string, string> = {},
  hash?: string,
): DiscoveryResponse {
  const etag = `"${hash ?? hashText(typeof body === "string" ? body : String.fromCharCode(...body.subarray(0, 4096)) + body.length)}"`;
  const headers: Record<string, string> = { "Cache-Control": NO_CACHE, ...extra, ETag: etag, Vary: "Accept" };
  if (etagMatches(req.ifNoneMatch, etag)) return { status: 304, headers, body: null };
  headers["Content-Type"] = contentType;
  return { status: 200, headers, body };
}

function json(body: unknown): DiscoveryResponse {
  return {
    status: 200,
    headers: { "Content-Type": JSON_TYPE, "Cache-Control": NO_CACHE },
    body: JSON.stringify(body),
  };
}

interface Built {
  aggregated: Map<string, string>;
  v2json?: string;
  v2proto?: Uint8Array;
  v2hash?: string;
}

const built = new WeakMap<ResourceDef[], Built>();

function cached(defs: ResourceDef[]): Built {
  let b = built.get(defs);
  if (!b) {
    b = { aggregated: new Map() };
    built.set(defs, b);
  }
  return b;
}

function discoveryRoot(defs: ResourceDef[], req: DiscoveryRequest, legacy: boolean): DiscoveryResponse {
  const n = negotiateDiscovery(req.accept);
  if (n.kind === "notAcceptable") {
    throw notAcceptable(
      "only the following media types are accepted: application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList, application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
    );
  }
  if (n.kind === "legacy") {
    const res = json(legacy ? apiVersionsBody(req.host ?? "") : apiGroupListBody(defs));
    res.headers.Vary = "Accept";
    return res;
  }
  const b = cached(defs);
  const key = `${legacy}/${n.version}`;
  let body = b.aggregated.get(key);
  if (!body) {
    body = JSON.stringify(aggregatedDiscoveryBody(defs, legacy, n.version));
    b.aggregated.set(key, body);
  }
  return withEtag(req, body, n.contentType);
}

function openapiV2(defs: ResourceDef[], req: DiscoveryRequest): DiscoveryResponse {
  const type = accepts(req.accept, JSON_TYPE, OPENAPI_V2_PROTO_ACCEPT, OPENAPI_V2_PROTO_CONTENT_TYPE);
  if (!type)
    throw notAcceptable(
      `only the following media types are accepted: ${JSON_TYPE}, ${OPENAPI_V2_PROTO_ACCEPT}`,
    );
  const b = cached(defs);
  if (!b.v2json) {
    b.v2json = JSON.stringify(openapiV2Document(defs));
    b.v2hash = hashText(b.v2json);
  }
  if (type === JSON_TYPE) return withEtag(req, b.v2json, JSON_TYPE, {}, b.v2hash);
  b.v2proto ??= encodeOpenapiV2(JSON.parse(b.v2json) as Record<string, unknown>);
  return withEtag(req, b.v2proto, OPENAPI_V2_PROTO_CONTENT_TYPE, {}, `${b.v2hash}-pb`);
}

function openapiV3(defs: ResourceDef[], req: DiscoveryRequest, rest: string): DiscoveryResponse | undefined {
  if (!accepts(req.accept, JSON_TYPE))
    throw notAcceptable(`only the following media types are accepted: ${JSON_TYPE}`);
  if (rest === "") return withEtag(req, JSON.stringify(openapiV3Index(defs)), JSON_TYPE);
  const entry = openapiV3Entries(defs).get(rest);
  if (!entry) return undefined;
  const asked = req.query?.get("hash");
  if (asked && asked !== entry.hash) {
    return {
      status: 301,
      headers: { Location: `/openapi/v3/${entry.key}?hash=${entry.hash}`, "Cache-Control": NO_CACHE },
      body: null,
    };
  }
  const extra: Record<string, string> = asked
    ? { "Cache-Control": "public, immutable", Expires: new Date(Date.now() + 365 * 86400_000).toUTCString() }
    : {};
  return withEtag(req, entry.body, JSON_TYPE, extra, entry.hash);
}

/**
 * Answers a discovery or OpenAPI request, or returns undefined when the path
 * is not one of these (or names a group/version that is not served), so the
 * caller goes on to its own routes / 404. Throws StatusError 406 when the
 * Accept header allows no form served here.
 */
export function handleDiscovery(defs: ResourceDef[], req: DiscoveryRequest): DiscoveryResponse | undefined {
  if (req.method !== "GET" && req.method !== "HEAD") return undefined;
  const path = req.path.length > 1 ? req.path.replace(/\/+$/, "") : req.path;
  if (path === "/version") return json(versionBody());
  if (path === "/api") return discoveryRoot(defs, req, true);
  if (path === "/apis") return discoveryRoot(defs, req, false);
  if (path === "/openapi/v2") return openapiV2(defs, req);
  if (path === "/openapi/v3") return openapiV3(defs, req, "");
  if (path.startsWith("/openapi/v3/")) return openapiV3(defs, req, path.slice("/openapi/v3/".length));
  const parts = path.split("/").filter(Boolean);
  if (parts[0] === "api" && parts.length === 2) {
    const body = apiResourceListBody(defs, "", parts[1]);
    return body ? json(body) : undefined;
  }
  if (parts[0] === "apis" && parts.length === 2) {
    const body = apiGroupBody(defs, parts[1]);
    return body ? json(body) : undefined;
  }
  if (parts[0] === "apis" && parts.length === 3) {
    const body = apiResourceListBody(defs, parts[1], parts[2]);
    return body ? json(body) : undefined;
  }
  return undefined;
}
