// A cluster's admin credential (docs/clusters.md): what `edgeplane cluster create` puts in
// the kubeconfig it writes. A JWT signed with that cluster's own service-account key, whose
// claim names the cluster: user kubernetes-admin in system:masters there, as kind's admin
// certificate is; every other cluster has another key and another name, so it is 401 there.
// Issued by the root cluster's clusters/<name>/token subresource (workers/clusters/token.ts).
import { decodeJwt, type JWTPayload } from "jose";
import { clusterNameOf } from "../../durable-objects/clusters";
import type { Env } from "../../durable-objects/env";
import { signingKeys } from "./keys";
import { storeObjects } from "./objects";
import { apiAudiences, issuers, sign, verifySignature } from "./serviceaccount";
import { type AuthnEnv, AuthnFailure, nowMs, type TokenAuthenticator } from "./types";

/** The claim that marks an admin credential, naming its cluster. */
export const CLUSTER_ADMIN_CLAIM = "edgeplane.dev/cluster-admin";
export const CLUSTER_ADMIN_USER = "kubernetes-admin";
export const DEFAULT_ADMIN_SECONDS = 365 * 24 * 3600;

/** An admin credential for the cluster `env` serves (a child cluster's environment). */
export async function issueClusterAdminToken(
  env: Env,
  seconds = DEFAULT_ADMIN_SECONDS,
): Promise<{ token: string; expiresAt: number }> {
  const name = clusterNameOf(env);
  if (!name) throw new Error("admin credentials are issued for child clusters only");
  const authn = env as unknown as AuthnEnv;
  const keys = await signingKeys(authn, storeObjects(env));
  const now = Math.floor(Date.now() / 1000);
  const claims: JWTPayload = {
    aud: apiAudiences(authn),
    exp: now + seconds,
    iat: now,
    nbf: now,
    iss: issuers(authn)[0],
    jti: crypto.randomUUID(),
    sub: CLUSTER_ADMIN_USER,
    [CLUSTER_ADMIN_CLAIM]: name,
  };
  return { token: await sign(keys, claims), expiresAt: (now + seconds) * 1000 };
}

/** Recognised by its claim; anything else is left to the next authenticator. */
export const clusterAdminCredentials: TokenAuthenticator = async (token, ctx) => {
  let claims: JWTPayload;
  try {
    claims = decodeJwt(token);
  } catch {
    return undefined;
  }
  const cluster = claims[CLUSTER_ADMIN_CLAIM];
  if (typeof cluster !== "string") return undefined;
  // another cluster's credential: refused before any key is read
  if (cluster !== clusterNameOf(ctx.env as unknown as Env))
    throw new AuthnFailure("credential of another cluster");
  await verifySignature(token, await signingKeys(ctx.env, ctx.objects));
  if (!issuers(ctx.env).includes(String(claims.iss)))
    throw new AuthnFailure("credential from another issuer");
  if (typeof claims.exp !== "number" || claims.exp * 1000 < nowMs(ctx))
    throw new AuthnFailure("credential has expired");
  return { name: CLUSTER_ADMIN_USER, uid: "", groups: ["system:masters"] };
};
