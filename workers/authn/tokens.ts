// The bearer token union, in upstream's order: token file, service account JWTs, bootstrap
// tokens, OIDC. The first that recognises the token decides; one that recognises it but
// finds it invalid, or none recognising it at all, is 401. Successes are remembered for
// a few seconds per isolate (upstream's token cache: 10s), keyed by the token's hash.
import { unauthorized } from "../../api/errors";
import type { UserInfo } from "../../api/user";
import { bootstrapTokens } from "./bootstrap";
import { clusterAdminCredentials } from "./cluster-admin";
import { nodeCredentials } from "./node-credentials";
import { oidcTokens } from "./oidc";
import { serviceAccountTokens } from "./serviceaccount";
import { staticTokens } from "./tokenfile";
import {
  AUTHENTICATED,
  AuthnFailure,
  copyUser,
  nowMs,
  type TokenAuthenticator,
  type TokenContext,
  UNAUTHENTICATED,
} from "./types";

export const TOKEN_AUTHENTICATORS: readonly { name: string; authenticate: TokenAuthenticator }[] = [
  { name: "token-file", authenticate: staticTokens },
  // node credentials share the service-account signing key: recognised (by their claim) first
  { name: "node", authenticate: nodeCredentials },
  // a child cluster's admin credential (docs/clusters.md), signed with the same key
  { name: "cluster-admin", authenticate: clusterAdminCredentials },
  { name: "serviceaccount", authenticate: serviceAccountTokens },
  { name: "bootstrap", authenticate: bootstrapTokens },
  { name: "oidc", authenticate: oidcTokens },
];

/** upstream's AuthenticatedGroupAdder: system:authenticated unless already (un)authenticated or anonymous. */
export function withAuthenticatedGroup(user: UserInfo): UserInfo {
  if (user.name === "system:anonymous") return user;
  if (user.groups.includes(AUTHENTICATED) || user.groups.includes(UNAUTHENTICATED)) return user;
  return { ...user, groups: [...user.groups, AUTHENTICATED] };
}

export type TokenResult = { ok: true; user: UserInfo; by: string } | { ok: false; error: string };

/** Runs the union; never throws for a bad token (the error says why, for logs and TokenReview). */
export async function checkToken(token: string, ctx: TokenContext): Promise<TokenResult> {
  for (const a of TOKEN_AUTHENTICATORS) {
    try {
      const user = await a.authenticate(token, ctx);
      if (user) return { ok: true, user: withAuthenticatedGroup(user), by: a.name };
    } catch (e) {
      if (e instanceof AuthnFailure) return { ok: false, error: `[${e.message}]` };
      // an outage (store unreachable, bad configuration): not the caller's fault, but no user either
      console.error(`authentication: ${a.name} failed`, e);
      return { ok: false, error: `[${a.name}: ${(e as Error).message}]` };
    }
  }
  return { ok: false, error: "[invalid bearer token]" };
}

const MAX_CACHED = 2048;
/**
 * Tokens checked in the last few seconds, keyed by the token itself (with the cluster and
 * audiences): an exact string match, no hashing on the hot path; the memory is the isolate's
 * own, where the request that carried the token lives as well, and nothing here is logged.
 */
const cache = new Map<string, { user: UserInfo; until: number }>();

function cacheTtlMs(ctx: TokenContext): number {
  const v = ctx.env.EDGEPLANE_TOKEN_CACHE_TTL_SECONDS;
  const n = v === undefined || v === "" ? 10 : Number(v);
  return Number.isFinite(n) && n > 0 ? n * 1000 : 0;
}

/** The user a bearer token stands for; 401 Unauthorized when it stands for nobody. */
export async function authenticateToken(token: string, ctx: TokenContext): Promise<UserInfo> {
  const ttl = cacheTtlMs(ctx);
  const now = nowMs(ctx);
  let key = "";
  if (ttl) {
    key = `${ctx.env.EDGEPLANE_CLUSTER}\n${(ctx.audiences ?? []).join(",")}\n${token}`;
    const hit = cache.get(key);
    if (hit && hit.until > now) return copyUser(hit.user);
    if (hit) cache.delete(key);
  }
  const r = await checkToken(token, ctx);
  if (!r.ok) throw unauthorized();
  if (ttl && !ctx.uncached) {
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value as string);
    cache.set(key, { user: copyUser(r.user), until: now + ttl });
  }
  return r.user;
}

/** Forgets remembered tokens (tests). */
export function clearTokenCache(): void {
  cache.clear();
}
