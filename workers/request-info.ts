// What a request is about, read from its path and method as upstream's RequestInfoFactory
// does: /api/v1/namespaces/ns/pods/name/status -> group "", version v1, namespace ns,
// resource pods, name, subresource status, verb from the method (get/list/watch/...).

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
    .map(decodeURIComponent);
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
