// Node credentials (FLOW 6.1, after kubelet's TLS bootstrap and client certificate rotation).
// A caller in system:bootstrappers asks POST /edgeplane/node-credentials {"nodeName": "n"}
// and gets a signed, short-lived credential for system:node:n (group system:nodes), so from
// then on the Node authorizer confines it to its own node. Upstream does this with a CSR and
// a client certificate; on Workers a JWT signed with the service-account key plays the
// certificate. Each exchange admits a new agent instance (node-binding.ts): the credential
// names it, and it stops authenticating once another agent joins as the node or the Node is
// deleted. An exchange for a node whose agent is alive is refused (409). The node renews its
// credential before it expires with the same call, authenticated by that credential.
import { decodeJwt, type JWTPayload } from "jose";
import { badRequest, forbidden, StatusError } from "../../api/errors";
import { rfc3339 } from "../../api/time";
import type { UserInfo } from "../../api/user";
import { isDNS1123Subdomain } from "../../api/validation/names";
import { signingKeys } from "./keys";
import { bindingAndNode, bindNodeUID, liveAgent, recordAgent } from "./node-binding";
import { storeObjects } from "./objects";
import { apiAudiences, issuers, sign, verifySignature } from "./serviceaccount";
import { type AuthnEnv, AuthnFailure, nowMs, type TokenAuthenticator } from "./types";

/** The claim that marks a node credential (and names the node). */
export const NODE_CLAIM = "edgeplane.io/node";
/** The claim naming the agent instance the credential was issued to. */
export const AGENT_CLAIM = "edgeplane.io/node-agent";
/** Where an authenticated node credential's agent shows in the user's extra (for renewal). */
export const AGENT_EXTRA = "edgeplane.io/node-agent";
export const NODE_CREDENTIAL_PATH = "/edgeplane/node-credentials";
/** Default lifetime: an hour (EDGEPLANE_NODE_CREDENTIAL_SECONDS), renewed by the agent at ~80%. */
export const DEFAULT_NODE_CREDENTIAL_SECONDS = 3600;
const NODE_USER_PREFIX = "system:node:";

export interface NodeCredential {
  nodeName: string;
  token: string;
  expirationTimestamp: string;
}

export function nodeCredentialSeconds(env: AuthnEnv): number {
  const v = env.EDGEPLANE_NODE_CREDENTIAL_SECONDS;
  const n = v === undefined || v === "" ? DEFAULT_NODE_CREDENTIAL_SECONDS : Number(v);
  return Number.isFinite(n) && n >= 1 ? Math.floor(n) : DEFAULT_NODE_CREDENTIAL_SECONDS;
}

export async function issueNodeCredential(
  env: AuthnEnv,
  nodeName: string,
  agent: string,
  seconds = nodeCredentialSeconds(env),
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
    sub: `${NODE_USER_PREFIX}${nodeName}`,
    [NODE_CLAIM]: nodeName,
    [AGENT_CLAIM]: agent,
  };
  return { nodeName, token: await sign(keys, claims), expirationTimestamp: rfc3339((now + seconds) * 1000) };
}

/**
 * Node credentials are recognised by their claim; anything else is left to the next
 * authenticator. Valid: signed, unexpired, and its agent still the node's (its record names
 * it, and the Node it registered, if any, is still there).
 */
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
  const agent = claims[AGENT_CLAIM];
  if (typeof agent !== "string" || agent === "")
    throw new AuthnFailure("node credential names no agent (issued before credentials were revocable)");
  const { binding, registered } = await bindingAndNode(ctx.objects, node);
  if (!binding || binding.agent !== agent)
    throw new AuthnFailure(
      "node credential revoked: another agent joined as this node, or its Node was deleted",
    );
  const uid = registered?.metadata?.uid ?? "";
  if (binding.nodeUID && binding.nodeUID !== uid)
    throw new AuthnFailure("node credential revoked: its Node was deleted");
  if (!binding.nodeUID) {
    // not bound to a Node yet: bound by the first check that finds it registered; until
    // then every request is checked afresh, so that a Node deleted right after it
    // registered still revokes
    if (uid) await bindNodeUID(ctx.env, binding, uid);
    else ctx.uncached = true;
  }
  return {
    name: `${NODE_USER_PREFIX}${node}`,
    uid: "",
    groups: ["system:nodes"],
    extra: { [AGENT_EXTRA]: [agent] },
  };
};

const nodeNameOf = (body: unknown) => (body as { nodeName?: unknown } | null)?.nodeName;

/**
 * POST /edgeplane/node-credentials: a bootstrap token (or a cluster admin) joins a node; a
 * node's own credential renews itself. Everyone else is 403.
 */
export async function nodeCredentialRequest(
  env: AuthnEnv,
  user: UserInfo,
  body: unknown,
): Promise<NodeCredential> {
  const agent = user.extra?.[AGENT_EXTRA]?.[0];
  if (agent && user.name.startsWith(NODE_USER_PREFIX) && user.groups.includes("system:nodes"))
    return renewNodeCredential(env, user.name.slice(NODE_USER_PREFIX.length), agent, body);
  return exchangeBootstrapToken(env, user, body);
}

/** Renewal: the same node, the same agent, a fresh lifetime. */
async function renewNodeCredential(
  env: AuthnEnv,
  node: string,
  agent: string,
  body: unknown,
): Promise<NodeCredential> {
  const asked = nodeNameOf(body);
  if (asked !== undefined && asked !== node)
    throw forbidden(
      `forbidden: User "${NODE_USER_PREFIX}${node}" cannot renew the credential of node ${JSON.stringify(asked)}`,
    );
  const { binding, registered } = await currentBinding(env, node, agent);
  // not bound to a Node (it was never registered, or deleted before a request of the agent's
  // bound it): no renewal, so such a credential ends with its lifetime
  if (!binding.nodeUID && !registered?.metadata?.uid)
    throw forbidden(
      `forbidden: User "${NODE_USER_PREFIX}${node}" cannot renew its credential before its Node is registered`,
    );
  return issueNodeCredential(env, node, agent);
}

/** The exchange: only bootstrap tokens (and cluster admins) may ask, for a valid node name no live agent holds. */
export async function exchangeBootstrapToken(
  env: AuthnEnv,
  user: UserInfo,
  body: unknown,
): Promise<NodeCredential> {
  const groups = user.groups;
  if (!groups.includes("system:bootstrappers") && !groups.includes("system:masters"))
    throw forbidden(`forbidden: User "${user.name}" cannot create path "${NODE_CREDENTIAL_PATH}"`);
  const nodeName = nodeNameOf(body);
  if (typeof nodeName !== "string" || nodeName === "" || isDNS1123Subdomain(nodeName).length > 0)
    throw badRequest(`nodeName must be a DNS-1123 subdomain, got ${JSON.stringify(nodeName)}`);
  const { binding: prior, registered: node } = await bindingAndNode(storeObjects(env), nodeName);
  const live = await liveAgent(env, nodeName, node);
  if (live) throw heldByAgent(nodeName, live);
  const agent = crypto.randomUUID();
  try {
    // a Node on its way out is not bound to: the new agent registers the next one
    const bindTo = node?.metadata?.deletionTimestamp ? "" : (node?.metadata?.uid ?? "");
    await recordAgent(env, nodeName, agent, bindTo, prior);
  } catch (e) {
    if (e instanceof StatusError && (e.code === 409 || e.code === 404))
      throw heldByAgent(nodeName, "another agent joined as it at the same moment");
    throw e;
  }
  return issueNodeCredential(env, nodeName, agent);
}

/**
 * 409 Conflict, not 403: the caller may join nodes, but this name is taken for now; the same
 * request succeeds once the holder's Lease expires or its Node is deleted.
 */
function heldByAgent(node: string, why: string): StatusError {
  return new StatusError(
    409,
    "Conflict",
    `node ${JSON.stringify(node)} is held by a live agent (${why}); another agent may join as it once that agent's Lease expires or its Node is deleted`,
    { name: node, kind: "nodes" },
  );
}

/**
 * Called when a node registers its Node (a create): a credential is checked afresh here, since
 * its authentication may have been remembered from a few seconds ago, before its Node was
 * deleted; a revoked agent must not bring its Node back. 401, as its next request would get.
 */
export async function assertNodeMayRegister(env: AuthnEnv, user: UserInfo): Promise<void> {
  const agent = user.extra?.[AGENT_EXTRA]?.[0];
  if (!agent || !user.name.startsWith(NODE_USER_PREFIX)) return;
  const node = user.name.slice(NODE_USER_PREFIX.length);
  const { binding, registered } = await currentBinding(env, node, agent);
  if (binding.nodeUID && binding.nodeUID !== (registered?.metadata?.uid ?? ""))
    throw new StatusError(401, "Unauthorized", "node credential revoked: its Node was deleted");
}

/**
 * The node's record and Node read afresh (the authentication of the request may have been
 * remembered from a few seconds ago); 401 unless `agent` is still the node's.
 */
async function currentBinding(env: AuthnEnv, node: string, agent: string) {
  const { binding, registered } = await bindingAndNode(storeObjects(env), node);
  if (!binding || binding.agent !== agent)
    throw new StatusError(401, "Unauthorized", "node credential revoked: another agent joined as this node");
  return { binding, registered };
}
