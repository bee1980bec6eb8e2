// Shared shapes of the authenticators: the environment they read, the objects they look up,
// and how a token authenticator answers (not mine / this user / recognised but invalid).
import type { KubeObject } from "../../api/types";
import type { UserInfo } from "../../api/user";
import type { Env } from "../../durable-objects/env";

/** The authentication settings, as Worker vars or secrets (all optional). */
export interface AuthnVars {
  /**
   * Where a request with no credential at all is served, as system:anonymous: "health" (the
   * default: /healthz, /livez, /readyz, /version and the dashboard's sign-in page; anything
   * else is 401), or "all" (upstream's --anonymous-auth=true: everywhere, RBAC decides).
   */
  EDGEPLANE_ANONYMOUS?: string;
  /** Static tokens, upstream's token file format: token,user,uid,"group1,group2". */
  EDGEPLANE_TOKENS?: string;
  /** Upstream's removed password file, as text: password,user,uid,"group1,group2". Basic auth is off without it. */
  EDGEPLANE_BASIC_AUTH_FILE?: string;
  /** The service account signing key: a private JWK, or a JWKS whose first private key signs. */
  EDGEPLANE_SA_SIGNING_KEY?: string;
  /** --service-account-issuer: comma-separated; the first issues, all are accepted. */
  EDGEPLANE_SA_ISSUER?: string;
  /** --api-audiences: comma-separated; defaults to the issuers. */
  EDGEPLANE_API_AUDIENCES?: string;
  /** --service-account-max-token-expiration, in seconds (0 or unset: no cap). */
  EDGEPLANE_SA_MAX_TOKEN_EXPIRATION_SECONDS?: string;
  /** --service-account-jwks-uri: the jwks_uri the discovery document names. */
  EDGEPLANE_SA_JWKS_URI?: string;
  EDGEPLANE_OIDC_ISSUER_URL?: string;
  EDGEPLANE_OIDC_CLIENT_ID?: string;
  EDGEPLANE_OIDC_USERNAME_CLAIM?: string;
  EDGEPLANE_OIDC_USERNAME_PREFIX?: string;
  EDGEPLANE_OIDC_GROUPS_CLAIM?: string;
  EDGEPLANE_OIDC_GROUPS_PREFIX?: string;
  /** --oidc-signing-algs, comma-separated (default RS256). */
  EDGEPLANE_OIDC_SIGNING_ALGS?: string;
  /** --oidc-required-claim, as key=value pairs separated by commas. */
  EDGEPLANE_OIDC_REQUIRED_CLAIMS?: string;
  /** The issuer's JWKS document, JSON or base64 of it (nothing here fetches it from the issuer). */
  EDGEPLANE_OIDC_JWKS?: string;
  /**
   * "cloudflare": trust request.cf.tlsClientAuth (Cloudflare mTLS); "front": trust the local
   * front door's X-Edgeplane-Client-Subject when X-Edgeplane-Front-Secret matches
   * EDGEPLANE_FRONT_SECRET. Off otherwise.
   */
  EDGEPLANE_CLIENT_CERT_AUTH?: string;
  EDGEPLANE_FRONT_SECRET?: string;
  /** Optional: only client certificates whose issuer DN is exactly this are accepted. */
  EDGEPLANE_CLIENT_CA_ISSUER_DN?: string;
  /** How long a verified token is remembered per isolate (upstream: 10s); 0 turns the cache off. */
  EDGEPLANE_TOKEN_CACHE_TTL_SECONDS?: string;
  /** How long a node credential lasts, in seconds (default 3600); the agent renews it at ~80%. */
  EDGEPLANE_NODE_CREDENTIAL_SECONDS?: string;
}

export type AuthnEnv = Env & AuthnVars;

export type ObjectResource = "serviceaccounts" | "pods" | "nodes" | "secrets";

/** Reads (and for the key and bootstrap tokens, creates) the few objects authentication needs. */
export interface ObjectSource {
  get(resource: ObjectResource, namespace: string, name: string): Promise<KubeObject | undefined>;
  /** Creates the object; an existing name is an AlreadyExists StatusError. Returns the stored object. */
  create(resource: ObjectResource, obj: KubeObject): Promise<KubeObject>;
}

/** What a token authenticator is given besides the token. */
export interface TokenContext {
  env: AuthnEnv;
  objects: ObjectSource;
  /** The audiences the caller accepts (TokenReview spec.audiences); the API audiences when unset. */
  audiences?: string[];
  now?: () => number;
  /** Set by an authenticator whose answer must not be remembered (the token cache skips it). */
  uncached?: boolean;
}

/** A token that is this authenticator's kind but does not check out (-> 401). */
export class AuthnFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AuthnFailure";
  }
}

/** undefined: not this authenticator's token. Throws AuthnFailure: recognised but invalid. */
export type TokenAuthenticator = (token: string, ctx: TokenContext) => Promise<UserInfo | undefined>;

export const AUTHENTICATED = "system:authenticated";
export const UNAUTHENTICATED = "system:unauthenticated";
export const ANONYMOUS_NAME = "system:anonymous";

export const nowMs = (ctx: { now?: () => number }) => (ctx.now ? ctx.now() : Date.now());

/** Comma-separated list, trimmed, empties dropped. */
export function splitList(v: string | undefined): string[] {
  return (v ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * A copy of a user, for a cache to hand out (callers may add groups): cheaper than
 * structuredClone, which workerd runs through its serializer, on every request.
 */
export function copyUser(u: UserInfo): UserInfo {
  const out: UserInfo = { ...u, groups: Array.isArray(u.groups) ? [...u.groups] : u.groups };
  if (u.extra) out.extra = Object.fromEntries(Object.entries(u.extra).map(([k, v]) => [k, [...v]]));
  return out;
}

const utf8 = new TextEncoder();

/** Constant-time comparison of two strings (the time depends only on their lengths). */
export function safeEqual(a: string, b: string): boolean {
  const x = utf8.encode(a);
  const y = utf8.encode(b);
  let diff = x.length ^ y.length;
  const n = Math.max(x.length, y.length);
  for (let i = 0; i < n; i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

/**
 * A JSON-valued setting: the JSON itself, or base64 of it (wrangler's .dev.vars cannot carry
 * a double quote: dotenv keeps `\"` as is, so local setups pass JSON base64-encoded).
 */
export function parseJsonSetting(name: string, text: string): any {
  const t = text.trim();
  if (t.startsWith("{") || t.startsWith("[")) return JSON.parse(t);
  try {
    return JSON.parse(atob(t));
  } catch {
    throw new Error(`${name} is neither JSON nor base64-encoded JSON`);
  }
}
