// Authentication: who is calling (workers/authn: client certificates, token file, service
// account JWTs, bootstrap tokens, OIDC, basic auth), then impersonation. No credentials at
// all means system:anonymous where anonymous requests are served (authn/anonymous.ts) and 401
// elsewhere; a credential that does not check out is 401.
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../app-env";
import { checkAnonymous } from "../authn/anonymous";
import { ANONYMOUS, authenticate, handleIssuerDiscovery, impersonate } from "../authn/index";
import { authorizationModes, authorize } from "../authz/index";
import { internalUser } from "../internal";
import { traceOf } from "../trace/recorder";

export { ANONYMOUS, parseTokenFile } from "../authn/index";

export function authentication(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const internal = internalUser(c.req.raw);
    if (internal) {
      c.set("user", internal);
      traceOf(c.req.raw)?.authenticated(internal, true);
      return next();
    }
    const user = await authenticate(c.req.raw, c.env);
    if (!user) checkAnonymous(c.get("url").pathname, c.env);
    const acting = await impersonate(c.req.raw, user ?? ANONYMOUS, async (a) => {
      const r = await authorize(authorizationModes(c.env), a, c.env);
      return r.decision === "allow";
    });
    c.set("user", acting);
    traceOf(c.req.raw)?.authenticated(acting, false);
    return next();
  };
}

/** /.well-known/openid-configuration and /openid/v1/jwks (after authorization). */
export function issuerDiscovery(): MiddlewareHandler<AppEnv> {
  return async (c, next) => (await handleIssuerDiscovery(c.req.raw, c.env, c.get("url"))) ?? next();
}
