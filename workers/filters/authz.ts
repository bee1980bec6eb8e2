// Authorization: may this user do this. Until the RBAC/Node/ABAC/Webhook authorizers land,
// members of system:masters may do everything, authenticated users may read discovery,
// and everybody may read health and version. Anything else is 403, as upstream words it.
import type { MiddlewareHandler } from "hono";
import { forbidden } from "../../api/errors";
import type { AppEnv, UserInfo } from "../app-env";
import type { RequestInfo } from "../request-info";

const PUBLIC = [/^\/healthz/, /^\/livez/, /^\/readyz/, /^\/version\/?$/];
const DISCOVERY = [
  /^\/api\/?$/,
  /^\/apis\/?$/,
  /^\/api\/v1\/?$/,
  /^\/apis\/[^/]+\/?$/,
  /^\/apis\/[^/]+\/[^/]+\/?$/,
  /^\/openapi\//,
];

export function allowed(user: UserInfo, info: RequestInfo): boolean {
  if (PUBLIC.some((r) => r.test(info.path))) return true;
  if (user.groups.includes("system:masters")) return true;
  if (
    user.groups.includes("system:authenticated") &&
    !info.isResourceRequest &&
    DISCOVERY.some((r) => r.test(info.path))
  )
    return true;
  return false;
}

export function forbiddenMessage(user: UserInfo, info: RequestInfo): string {
  if (!info.isResourceRequest)
    return `forbidden: User "${user.name}" cannot ${info.verb} path "${info.path}"`;
  const res = info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
  const what = info.name ? `${info.resource} "${info.name}"` : info.resource;
  const scope = info.namespace ? ` in the namespace "${info.namespace}"` : " at the cluster scope";
  return `${what} is forbidden: User "${user.name}" cannot ${info.verb} resource "${res}" in API group "${info.apiGroup}"${scope}`;
}

export function authorization(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const user = c.get("user");
    const info = c.get("info");
    if (!allowed(user, info)) {
      throw forbidden(forbiddenMessage(user, info), {
        name: info.name || undefined,
        group: info.apiGroup || undefined,
        kind: info.resource || undefined,
      });
    }
    return next();
  };
}
