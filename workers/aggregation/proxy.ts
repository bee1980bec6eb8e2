// The aggregator's proxy (upstream's kube-aggregator proxy handler): a request under
// /apis/<group>/<version>/... of a group/version this server does not serve itself, whose
// APIService names a Service, goes to one ready endpoint of that Service THROUGH THE TUNNEL of
// the node running it (durable-objects/node-tunnel/http-request.ts), over HTTPS checked with
// the APIService's caBundle (or not, with insecureSkipTLSVerify), carrying the authenticated
// user in front-proxy headers. Authentication and authorization ran before (the filters in
// workers/app.ts): a user RBAC refuses never reaches the extension server.
import {
  caBundlePEM,
  discoveryPath,
  frontProxyHeaders,
  resolveBackend,
  SERVICE_NAME_LABEL,
} from "../../api/apiservice-backend";
import { StatusError, tooLarge } from "../../api/errors";
import type { ResourceDef } from "../../api/resource";
import { type APIService, apiServiceName, apiservices, isAvailable } from "../../api/strategies/apiservices";
import { endpointslices } from "../../api/strategies/endpointslices";
import { services } from "../../api/strategies/services";
import type { KubeObject } from "../../api/types";
import type { UserInfo } from "../../api/user";
import type { Env } from "../../durable-objects/env";
import { httpThroughNode } from "../../durable-objects/node-tunnel/http-request";
import { Store } from "../../durable-objects/store/client";

/** Upstream's answer when the APIService is not available or has no endpoint (503). */
export const serviceUnavailable = () => new StatusError(503, "ServiceUnavailable", "service unavailable");

/** kube-apiserver's request body limit (3 MiB). */
const MAX_BODY = 3 * 1024 * 1024;

const GROUP_VERSION_PATH = /^\/apis\/([^/]+)\/([^/]+)(?:\/.*)?$/;

/** The group and version a path is under, when it is under /apis/<group>/<version>. */
export function groupVersionOf(path: string): { group: string; version: string } | undefined {
  const m = GROUP_VERSION_PATH.exec(path);
  return m ? { group: m[1], version: m[2] } : undefined;
}

/** The APIService that names a Service for this group/version, if there is one. */
export async function remoteAPIService(
  env: Env,
  group: string,
  version: string,
): Promise<APIService | undefined> {
  const svc = (await new Store(env, apiservices).find("", apiServiceName(group, version))) as
    | APIService
    | undefined;
  return svc?.spec?.service ? svc : undefined;
}

/** Where a request for the APIService goes now (a 503 when nowhere). */
async function backendOf(env: Env, apiService: APIService) {
  const ref = apiService.spec?.service;
  const ns = ref?.namespace ?? "";
  const service = await new Store(env, services).find(ns, ref?.name ?? "");
  const slices = service
    ? ((JSON.parse(
        await new Store(env, endpointslices).listText({
          namespace: ns,
          labelSelector: `${SERVICE_NAME_LABEL}=${ref?.name ?? ""}`,
        }),
      ).items ?? []) as KubeObject[])
    : [];
  const backend = resolveBackend(apiService, service, slices);
  if (!backend.ok) throw serviceUnavailable();
  return backend;
}

/** Sends one request to the APIService's backend as `user`; the backend's answer as it came. */
export async function forward(
  env: Env,
  apiService: APIService,
  user: UserInfo,
  req: { method: string; path: string; headers: Iterable<[string, string]>; body?: Uint8Array },
): Promise<Response> {
  const backend = await backendOf(env, apiService);
  let body: string | undefined;
  if (req.body?.length) {
    let bin = "";
    for (let i = 0; i < req.body.length; i += 0x8000)
      bin += String.fromCharCode(...req.body.subarray(i, i + 0x8000));
    body = btoa(bin);
  }
  return httpThroughNode(env, backend.node, {
    kind: "http",
    host: backend.ip,
    port: backend.port,
    method: req.method,
    path: req.path,
    headers: frontProxyHeaders(req.headers, user),
    body,
    tls: {
      serverName: backend.serverName,
      ca: caBundlePEM(apiService),
      insecureSkipTLSVerify: apiService.spec?.insecureSkipTLSVerify === true,
    },
  });
}

/**
 * Proxies the request when its group/version is an aggregated one; undefined when this server
 * serves it (or nobody does: the caller answers 404).
 */
export async function proxyAggregated(
  env: Env,
  served: ResourceDef[],
  req: Request,
  url: URL,
  user: UserInfo,
): Promise<Response | undefined> {
  const gv = groupVersionOf(url.pathname);
  if (!gv) return undefined;
  if (served.some((d) => d.group === gv.group && d.version === gv.version)) return undefined;
  const apiService = await remoteAPIService(env, gv.group, gv.version);
  if (!apiService) return undefined;
  if (!isAvailable(apiService)) throw serviceUnavailable();
  let body: Uint8Array | undefined;
  if (req.method !== "GET" && req.method !== "HEAD" && req.body) {
    const declared = Number(req.headers.get("content-length") ?? "0");
    if (declared > MAX_BODY) throw tooLarge();
    body = new Uint8Array(await req.arrayBuffer());
    if (body.length > MAX_BODY) throw tooLarge();
  }
  return forward(env, apiService, user, {
    method: req.method,
    path: url.pathname + url.search,
    headers: req.headers.entries(),
    body,
  });
}

export { discoveryPath };
