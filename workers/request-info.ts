// What a request is about, read from its path and method as upstream's RequestInfoFactory
// does: /api/v1/namespaces/ns/pods/name/status -> group "", version v1, namespace ns,
// resource pods, name, subresource status, verb from the method (get/list/watch/...).
import { badRequest } from "../api/errors";

export interface RequestInfo {
  isResourceRequest: boolean;
  path: string;
  verb: string;
  apiPrefix: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
}

const METHOD_VERBS: Record<string, string> = {
  POST: "create",
  GET: "get",
  HEAD: "get",
  PUT: "update",
  PATCH: "patch",
  DELETE: "delete",
};

const NAMESPACE_SUBRESOURCES = new Set(["status", "finalize"]);

/** The first `%` not followed by two hex digits, or undefined. */
const BAD_ESCAPE = /%(?![0-9A-Fa-f]{2})/;

/**
 * One path segment, percent-decoded; a 400 (metav1.Status) when it cannot be: an escape that is
 * not `%` and two hex digits (Go's url package refuses these too: `invalid URL escape`), or
 * escaped bytes that are not UTF-8 (`%FF`, the overlong `%C0%AF`), which no name can hold.
 */
export function decodeSegment(segment: string): string {
  if (!segment.includes("%")) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    const bad = BAD_ESCAPE.exec(segment);
    if (bad)
      throw badRequest(`invalid URL escape ${JSON.stringify(segment.slice(bad.index, bad.index + 3))}`);
    const run = /(?:%[0-9A-Fa-f]{2})+/g;
    for (const m of segment.matchAll(run)) {
      try {
        decodeURIComponent(m[0]);
      } catch {
        throw badRequest(`invalid URL escape ${JSON.stringify(m[0])}: not UTF-8`);
      }
    }
    throw badRequest(`invalid URL escape in ${JSON.stringify(segment)}`);
  }
}

/** Throws the 400 of the first segment of `path` that does not percent-decode (see decodeSegment). */
export function checkPathEncoding(path: string): void {
  if (path.includes("%")) for (const segment of path.split("/")) decodeSegment(segment);
}

export function requestInfo(method: string, url: URL): RequestInfo {
  const path = url.pathname;
  const info: RequestInfo = {
    isResourceRequest: false,
    path,
    verb: METHOD_VERBS[method] ?? method.toLowerCase(),
    apiPrefix: "",
    apiGroup: "",
    apiVersion: "",
    namespace: "",
    resource: "",
    subresource: "",
    name: "",
  };
  const parts = path
    .split("/")
    .filter((p) => p !== "")
    .map(decodeSegment);
  if (parts[0] !== "api" && parts[0] !== "apis") return info;
  info.apiPrefix = parts[0];
  let rest = parts.slice(1);
  if (info.apiPrefix === "apis") {
    if (rest.length < 2) return info;
    info.apiGroup = rest[0];
    rest = rest.slice(1);
  }
  if (rest.length < 2) {
    info.apiVersion = rest[0] ?? "";
    return info;
  }
  info.apiVersion = rest[0];
  rest = rest.slice(1);
  info.isResourceRequest = true;
  // The deprecated /watch/ path prefix means a watch.
  let watchPrefix = false;
  if (rest[0] === "watch") {
    watchPrefix = true;
    rest = rest.slice(1);
  }
  if (rest[0] === "namespaces" && rest.length >= 2) {
    info.namespace = rest[1];
    // /namespaces/<name>[/status|/finalize] is the namespace object itself; anything else
    // after the name is a namespaced resource
    if (rest.length >= 3 && !NAMESPACE_SUBRESOURCES.has(rest[2])) rest = rest.slice(2);
  }
  info.resource = rest[0] ?? "";
  info.name = rest[1] ?? "";
  info.subresource = rest[2] ?? "";
  if (rest.length > 3) info.isResourceRequest = false;

  if (info.verb === "get" && !info.name) {
    info.verb = watchPrefix || isTrue(url.searchParams.get("watch")) ? "watch" : "list";
  } else if (info.verb === "get" && watchPrefix) {
    info.verb = "watch";
  }
  if (info.verb === "delete" && !info.name) info.verb = "deletecollection";
  return info;
}

export function isTrue(v: string | null): boolean {
  return v === "true" || v === "1" || v === "True";
}
