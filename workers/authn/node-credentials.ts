// Joining a node with a bootstrap token (FLOW 6.1, after kubelet's TLS bootstrap): a caller
// in system:bootstrappers asks POST /edgeplane/node-credentials {"nodeName": "n"} and gets
// a signed, expiring credential for system:node:n (group system:nodes), so from then on the
// Node authorizer confines it to its own node. Upstream does this with a CSR and a client
// certificate; on Workers a JWT signed with the service-account key plays the certificate.
import { decodeJwt, type JWTPayload } from "jose";
import { badRequest, forbidden } from "../../api/errors";
import { rfc3339 } from "../../api/time";
import type { UserInfo } from "../../api/user";
import { isDNS1123Subdomain } from "../../api/validation/names";
import { signingKeys } from "./keys";
import { storeObjects } from "./objects";
import { apiAudiences, issuers, sign, verifySignature } from "./serviceaccount";
import { type AuthnEnv, AuthnFailure, nowMs, type TokenAuthenticator } from "./types";

/** The claim that marks a node credential (and names the node). */
export const NODE_CLAIM = "edgeplane.io/node";
export const NODE_CREDENTIAL_PATH = "/edgeplane/node-credentials";
const DEFAULT_SECONDS = 365 * 24 * 3600;

export interface NodeCredential {
  nodeName: string;
  token: string;
  expirationTimestamp: string;
}

export async function issueNodeCredential(
  env: AuthnEnv,
  nodeName: string,
  seconds = DEFAULT_SECONDS,
): Promise<NodeCredential> {
  const keys = await signingKeys(env, storeObjects(env));
  const now = Math.floor(Date.now() / 1000);
  const claims: JWTPayload = {
    aud: apiAudiences(env),
    exp: now + seconds,
    iat: now,
    nbf: now,
    iss: issuers(env)[0],
    jti: crypto.randomUUID(),
    sub: `system:node:${nodeName}`,
    [NODE_CLAIM]: nodeName,
  };
  return { nodeName, token: await sign(keys, claims), expirationTimestamp: rfc3339((now + seconds) * 1000) };
}

/** Node credentials are recognised by their claim; anything else is left to the next authenticator. */
export const nodeCredentials: TokenAuthenticator = async (token, ctx) => {
  let claims: JWTPayload;
  try {
    claims = decodeJwt(token);
  } catch {
    return undefined;
  }
  const node = claims[NODE_CLAIM];
  if (typeof node !== "string") return undefined;
  await verifySignature(token, await signingKeys(ctx.env, ctx.objects));
  if (!issuers(ctx.env).includes(String(claims.iss)))
    throw new AuthnFailure("node credential from another issuer");
  if (typeof claims.exp !== "number" || claims.exp * 1000 < nowMs(ctx))
    throw new AuthnFailure("node credential has expired");
  return { name: `system:node:${node}`, uid: "", groups: ["system:nodes"] };
};

/** The exchange: only bootstrap tokens (and cluster admins) may ask, for a valid node name. */
export async function exchangeBootstrapToken(
  env: AuthnEnv,
  user: UserInfo,
  body: unknown,
): Promise<NodeCredential> {
  const groups = user.groups;
  if (!groups.includes("system:bootstrappers") && !groups.includes("system:masters"))
    throw forbidden(`forbidden: User "${user.name}" cannot create path "${NODE_CREDENTIAL_PATH}"`);
  const nodeName = (body as { nodeName?: unknown } | null)?.nodeName;
  if (typeof nodeName !== "string" || nodeName === "" || isDNS1123Subdomain(nodeName).length > 0)
    throw badRequest(`nodeName must be a DNS-1123 subdomain, got ${JSON.stringify(nodeName)}`);
  return issueNodeCredential(env, nodeName);
}
