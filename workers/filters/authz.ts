// Authorization: may this user do this. The configured modes (EDGEPLANE_AUTHORIZATION_MODES,
// default "Node,RBAC") run in order; the first allow or deny wins, no opinion from all is a
// 403 in upstream's words. system:masters is always allowed, as upstream.
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../app-env";
import { attributesFromRequest, authorizeRequest } from "../authz/index";
import { traceOf } from "../trace/recorder";

export function authorization(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const trace = traceOf(c.req.raw);
    const start = trace ? Date.now() : 0;
    const r = await authorizeRequest(
      attributesFromRequest(c.get("user"), c.get("info"), c.get("url")),
      c.env,
    );
    trace?.authorized(start, r);
    return next();
  };
}
