// OpenID Connect ID tokens (upstream's --oidc-* flags). The issuer's keys come from
// EDGEPLANE_OIDC_JWKS rather than its discovery endpoint. A token whose iss is not the
// configured issuer is not this authenticator's; one that is must verify (signature, aud
// holding the client id, exp, nbf) and carry the username claim.
import { createLocalJWKSet, decodeJwt, type JSONWebKeySet, type JWTPayload, jwtVerify } from "jose";
import type { UserInfo } from "../../api/user";
import {
  type AuthnEnv,
  AuthnFailure,
  nowMs,
  parseJsonSetting,
  splitList,
  type TokenAuthenticator,
} from "./types";

export interface OidcConfig {
  issuer: string;
  clientId: string;
  usernameClaim: string;
  usernamePrefix: string;
  groupsClaim?: string;
  groupsPrefix: string;
  algorithms: string[];
  requiredClaims: Record<string, string>;
  jwks: ReturnType<typeof createLocalJWKSet>;
}

let cached: { key: string; config: OidcConfig | undefined } | undefined;

/** The OIDC settings, or undefined when OIDC is off (no issuer URL). */
export function oidcConfig(env: AuthnEnv): OidcConfig | undefined {
  const issuer = env.EDGEPLANE_OIDC_ISSUER_URL?.trim();
  const key = JSON.stringify([
    issuer,
    env.EDGEPLANE_OIDC_CLIENT_ID,
    env.EDGEPLANE_OIDC_USERNAME_CLAIM,
    env.EDGEPLANE_OIDC_USERNAME_PREFIX,
    env.EDGEPLANE_OIDC_GROUPS_CLAIM,
    env.EDGEPLANE_OIDC_GROUPS_PREFIX,
    env.EDGEPLANE_OIDC_SIGNING_ALGS,
    env.EDGEPLANE_OIDC_REQUIRED_CLAIMS,
    env.EDGEPLANE_OIDC_JWKS,
  ]);
  if (cached?.key === key) return cached.config;
  let config: OidcConfig | undefined;
  if (issuer) {
    const clientId = env.EDGEPLANE_OIDC_CLIENT_ID?.trim();
    if (!clientId) throw new Error("EDGEPLANE_OIDC_CLIENT_ID is required with EDGEPLANE_OIDC_ISSUER_URL");
    if (!env.EDGEPLANE_OIDC_JWKS)
      throw new Error("EDGEPLANE_OIDC_JWKS is required with EDGEPLANE_OIDC_ISSUER_URL");
    const usernameClaim = env.EDGEPLANE_OIDC_USERNAME_CLAIM?.trim() || "sub";
    // upstream: no prefix given -> claims other than email get "<issuer>#"; "-" means none
    let usernamePrefix = env.EDGEPLANE_OIDC_USERNAME_PREFIX ?? "";
    if (!usernamePrefix && usernameClaim !== "email") usernamePrefix = `${issuer}#`;
    if (usernamePrefix === "-") usernamePrefix = "";
    const requiredClaims: Record<string, string> = {};
    for (const pair of splitList(env.EDGEPLANE_OIDC_REQUIRED_CLAIMS)) {
      const i = pair.indexOf("=");
      if (i > 0) requiredClaims[pair.slice(0, i)] = pair.slice(i + 1);
    }
    const algs = splitList(env.EDGEPLANE_OIDC_SIGNING_ALGS);
    config = {
      issuer,
      clientId,
      usernameClaim,
      usernamePrefix,
      groupsClaim: env.EDGEPLANE_OIDC_GROUPS_CLAIM?.trim() || undefined,
      groupsPrefix: env.EDGEPLANE_OIDC_GROUPS_PREFIX ?? "",
      algorithms: algs.length ? algs : ["RS256"],
      requiredClaims,
      jwks: createLocalJWKSet(
        parseJsonSetting("EDGEPLANE_OIDC_JWKS", env.EDGEPLANE_OIDC_JWKS) as JSONWebKeySet,
      ),
    };
  }
  cached = { key, config };
  return config;
}

function groupsOf(claims: JWTPayload, name: string): string[] {
  const v = claims[name];
  if (v === undefined) return [];
  if (typeof v === "string") return [v];
  if (Array.isArray(v) && v.every((g) => typeof g === "string")) return v as string[];
  throw new AuthnFailure(`oidc: parse groups claim "${name}": not a string or a list of strings`);
}

export const oidcTokens: TokenAuthenticator = async (token, ctx) => {
  const cfg = oidcConfig(ctx.env);
  if (!cfg) return undefined;
  let unverified: JWTPayload;
  try {
    unverified = decodeJwt(token);
  } catch {
    return undefined;
  }
  if (unverified.iss !== cfg.issuer) return undefined;
  let claims: JWTPayload;
  try {
    ({ payload: claims } = await jwtVerify(token, cfg.jwks, {
      issuer: cfg.issuer,
      audience: cfg.clientId,
      algorithms: cfg.algorithms,
      currentDate: new Date(nowMs(ctx)),
      requiredClaims: ["exp"],
    }));
  } catch (e) {
    throw new AuthnFailure(`oidc: verify token: ${(e as Error).message}`);
  }
  const raw = claims[cfg.usernameClaim];
  if (raw === undefined)
    throw new AuthnFailure(`oidc: parse username claims "${cfg.usernameClaim}": claim not present`);
  if (typeof raw !== "string")
    throw new AuthnFailure(`oidc: parse username claims "${cfg.usernameClaim}": not a string`);
  if (cfg.usernameClaim === "email" && "email_verified" in claims) {
    // present: it has to say true; absent: the email is taken as verified
    if (typeof claims.email_verified !== "boolean")
      throw new AuthnFailure("oidc: parse 'email_verified' claim: not a boolean");
    if (!claims.email_verified) throw new AuthnFailure("oidc: email not verified");
  }
  for (const [k, want] of Object.entries(cfg.requiredClaims)) {
    if (!(k in claims)) throw new AuthnFailure(`oidc: required claim ${k} not present in ID token`);
    if (claims[k] !== want)
      throw new AuthnFailure(`oidc: required claim ${k}'s value did not match expected value`);
  }
  const groups = cfg.groupsClaim ? groupsOf(claims, cfg.groupsClaim).map((g) => cfg.groupsPrefix + g) : [];
  const user: UserInfo = { name: cfg.usernamePrefix + raw, uid: "", groups };
  return user;
};
