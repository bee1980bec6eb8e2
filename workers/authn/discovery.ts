// Service account issuer discovery: /.well-known/openid-configuration and /openid/v1/jwks,
// so others can verify the cluster's service account tokens (upstream serves both; RBAC's
// system:service-account-issuer-discovery role lets system:serviceaccounts read them).
import { signingKeys } from "./keys";
import { storeObjects } from "./objects";
import { issuers } from "./serviceaccount";
import type { AuthnEnv, ObjectSource } from "./types";

export const OPENID_CONFIGURATION_PATH = "/.well-known/openid-configuration";
export const JWKS_PATH = "/openid/v1/jwks";

/** The discovery document; `externalUrl` is where this apiserver is reached (jwks_uri default). */
export async function openidConfiguration(env: AuthnEnv, externalUrl: string, objects?: ObjectSource) {
  const keys = await signingKeys(env, objects ?? storeObjects(env));
  return {
    issuer: issuers(env)[0],
    jwks_uri: env.EDGEPLANE_SA_JWKS_URI || new URL(JWKS_PATH, externalUrl).toString(),
    response_types_supported: ["id_token"],
    subject_types_supported: ["public"],
    id_token_signing_alg_values_supported: [...new Set(keys.verify.map((k) => k.alg))],
  };
}

/** The public keys that verify service account tokens. */
export async function serviceAccountJwks(env: AuthnEnv, objects?: ObjectSource) {
  const keys = await signingKeys(env, objects ?? storeObjects(env));
  return { keys: keys.verify.map((k) => k.jwk) };
}

/**
 * Where clients reach this apiserver, as https://<the host they asked for>. Upstream's
 * default jwks_uri is always https on the external address; here the request may arrive as
 * plain http (the local front door terminates TLS and hands the bytes on unchanged, Host
 * included), so the scheme is not taken from the request URL, only its host.
 */
export function externalOrigin(url: URL): string {
  return `https://${url.host}`;
}

/**
 * Answers the two discovery paths (GET), undefined for any other path. `url` is the request's
 * URL when the caller has parsed it already (every request passes here).
 */
export async function handleIssuerDiscovery(
  req: Request,
  env: AuthnEnv,
  url: URL = new URL(req.url),
): Promise<Response | undefined> {
  if (url.pathname === OPENID_CONFIGURATION_PATH) {
    const body = await openidConfiguration(env, externalOrigin(url));
    return new Response(JSON.stringify(body), {
      headers: { "content-type": "application/json", "cache-control": "public, max-age=3600" },
    });
  }
  if (url.pathname === JWKS_PATH) {
    return new Response(JSON.stringify(await serviceAccountJwks(env)), {
      headers: { "content-type": "application/jwk-set+json", "cache-control": "public, max-age=3600" },
    });
  }
  return undefined;
}
