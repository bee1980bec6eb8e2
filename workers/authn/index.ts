// Authentication of a request, as upstream's filter chain does it: client certificate, then
// the Authorization header (Bearer token, or Basic when a password file is configured), then
// a WebSocket subprotocol token. No credentials: anonymous (null). Bad credentials: 401.
// Then impersonation, which the lead's filter runs after authentication.
import { unauthorized } from "../../api/errors";
import type { UserInfo } from "../../api/user";
import { authenticateBasic } from "./basic";
import { checkNodeCertificate } from "./node-certificates";
import { storeObjects } from "./objects";
import { authenticateToken, withAuthenticatedGroup } from "./tokens";
import { type AuthnEnv, AuthnFailure, type ObjectSource, type TokenContext } from "./types";
import { authenticateClientCert, clientCertNotBefore } from "./x509";

export { bootstrapTokenSecret, randomBootstrapToken } from "../../api/bootstrap-token";
export { createBootstrapToken } from "./bootstrap";
export { handleIssuerDiscovery, openidConfiguration, serviceAccountJwks } from "./discovery";
export { type Authorize, type Decision, type ImpersonationAttributes, impersonate } from "./impersonate";
export { resetSigningKeys } from "./keys";
export { apiUserInfo, selfSubjectReview, tokenReview } from "./review";
export { apiAudiences, issueLegacyToken, issuers, issueToken } from "./serviceaccount";

export { tokenRequest } from "./token-request";
export { parseTokenFile } from "./tokenfile";
export { clearTokenCache } from "./tokens";
export type { AuthnEnv, AuthnVars, ObjectSource } from "./types";

export const ANONYMOUS: UserInfo = { name: "system:anonymous", uid: "", groups: ["system:unauthenticated"] };

const WS_TOKEN_PREFIX = "base64url.bearer.authorization.k8s.io.";

/** The bearer token of an Authorization header, as upstream reads it (undefined: none). */
export function bearerToken(header: string | null): string | undefined {
  const auth = (header ?? "").trim();
  if (!auth) return undefined;
  const parts = auth.split(" ");
  if (parts.length < 2 || parts[0].toLowerCase() !== "bearer") return undefined;
  return parts[1] || undefined;
}

/** A token carried in Sec-WebSocket-Protocol (browsers cannot set Authorization on a WebSocket). */
export function webSocketToken(req: Request): string | undefined {
  if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") return undefined;
  for (const p of (req.headers.get("sec-websocket-protocol") ?? "").split(",")) {
    const proto = p.trim();
    if (!proto.startsWith(WS_TOKEN_PREFIX)) continue;
    try {
      const b64 = proto.slice(WS_TOKEN_PREFIX.length).replace(/-/g, "+").replace(/_/g, "/");
      const token = atob(b64.padEnd(Math.ceil(b64.length / 4) * 4, "="));
      return token || undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

export interface AuthenticateOptions {
  objects?: ObjectSource;
  now?: () => number;
}

/**
 * Who sent `req`: the user, or null for anonymous (no credentials at all). Throws a 401
 * StatusError when credentials were given and do not check out.
 */
export async function authenticate(
  req: Request,
  env: AuthnEnv,
  opts: AuthenticateOptions = {},
): Promise<UserInfo | null> {
  let failed = false;
  const ctx: TokenContext = { env, objects: opts.objects ?? storeObjects(env), now: opts.now };
  try {
    const user = authenticateClientCert(req, env);
    if (user) {
      await checkNodeCertificate(user, clientCertNotBefore(req, env), ctx);
      return withAuthenticatedGroup(user);
    }
  } catch (e) {
    if (!(e instanceof AuthnFailure)) throw e;
    failed = true;
  }
  const header = req.headers.get("authorization");
  const token = bearerToken(header);
  if (token) return authenticateToken(token, ctx);
  if (header) {
    try {
      const user = authenticateBasic(header, env);
      if (user) return withAuthenticatedGroup(user);
    } catch (e) {
      if (!(e instanceof AuthnFailure)) throw e;
      throw unauthorized();
    }
  }
  const wsToken = webSocketToken(req);
  if (wsToken) return authenticateToken(wsToken, ctx);
  if (failed) throw unauthorized();
  return null;
}
