// Names the caller's priority level to the local front door, when the front door asks (see
// api/wire/priority.ts): it queues requests by credential, and learns here which credentials
// are real and which belong to node agents and the control plane (whose leases and status
// must keep a share of the engine no crowd can take). Asked with the secret the front door
// shares with this Worker (EDGEPLANE_FRONT_SECRET, made afresh at each local start; unset on
// Cloudflare, where nothing asks). A request that impersonates is not named: its credential's
// level would depend on headers the front door does not key by.
import type { MiddlewareHandler } from "hono";
import { credentialLevel, PRIORITY_ASK_HEADER, PRIORITY_LEVEL_HEADER } from "../../api/wire/priority";
import type { AppEnv } from "../app-env";
import { type AuthnEnv, safeEqual } from "../authn/types";

export function priorityLevel(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const asked = c.req.header(PRIORITY_ASK_HEADER);
    if (asked === undefined) return next();
    const secret = (c.env as AuthnEnv).EDGEPLANE_FRONT_SECRET;
    if (!secret || !safeEqual(asked, secret) || c.req.header("impersonate-user") !== undefined) return next();
    const level = credentialLevel(c.get("user"));
    await next();
    // a switch of protocols keeps its response as it is (the front door asks only ordinary requests)
    if (c.res.status !== 101) c.header(PRIORITY_LEVEL_HEADER, level);
  };
}
