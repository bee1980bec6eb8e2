// Service account tokens: bound JWTs the control plane signs (TokenRequest, projected
// volumes) and the legacy secret-based ones; verified as upstream's JWT authenticator does:
// issuer, signature, audience, expiry with a minute's leeway, then the ServiceAccount (same
// uid) and any bound pod, secret or node must still exist.
import { CompactSign, compactVerify, decodeJwt, decodeProtectedHeader, type JWTPayload } from "jose";
import { rfc3339 } from "../../api/time";
import type { KubeObject } from "../../api/types";
import type { UserInfo } from "../../api/user";
import { type SigningKeys, signingKeys } from "./keys";
import { goQuoteList, makeGroupNames, makeUsername } from "./names";
import { storeObjects } from "./objects";
import {
  type AuthnEnv,
  AuthnFailure,
  nowMs,
  type ObjectSource,
  splitList,
  type TokenAuthenticator,
  type TokenContext,
} from "./types";

export const DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local";
export const LEGACY_ISSUER = "kubernetes/serviceaccount";
/** go-jose's DefaultLeeway: exp and nbf are checked a minute loosely. */
export const LEEWAY_SECONDS = 60;

export const EXTRA_POD_NAME = "authentication.kubernetes.io/pod-name";
export const EXTRA_POD_UID = "authentication.kubernetes.io/pod-uid";
export const EXTRA_NODE_NAME = "authentication.kubernetes.io/node-name";
export const EXTRA_NODE_UID = "authentication.kubernetes.io/node-uid";
export const EXTRA_CREDENTIAL_ID = "authentication.kubernetes.io/credential-id";

export function issuers(env: AuthnEnv): string[] {
  const list = splitList(env.EDGEPLANE_SA_ISSUER);
  return list.length ? list : [DEFAULT_ISSUER];
}

/** --api-audiences; upstream defaults them to the service account issuers. */
export function apiAudiences(env: AuthnEnv): string[] {
  const list = splitList(env.EDGEPLANE_API_AUDIENCES);
  return list.length ? list : issuers(env);
}

export interface ObjectRef {
  name: string;
  uid: string;
}

export interface BoundObject extends ObjectRef {
  kind: "Pod" | "Secret" | "Node";
}

export interface IssueOptions {
  namespace: string;
  serviceAccount: string;
  uid: string;
  audiences?: string[];
  expirationSeconds: number;
  boundObject?: BoundObject;
  /** the node a bound pod runs on (upstream puts it in pod-bound tokens too) */
  node?: ObjectRef;
  /** kubernetes.io.warnafter, seconds from now (projected tokens with extended expiry) */
  warnAfterSeconds?: number;
}

export interface IssuedToken {
  token: string;
  /** RFC 3339, seconds precision */
  expirationTimestamp: string;
  /** the jti claim */
  id: string;
  claims: JWTPayload;
}

export async function sign(keys: SigningKeys, claims: JWTPayload): Promise<string> {
  return new CompactSign(new TextEncoder().encode(JSON.stringify(claims)))
    .setProtectedHeader({ alg: keys.alg, kid: keys.kid })
    .sign(keys.privateKey);
}

/** Signs a bound service account token (upstream's claims). */
export async function issueToken(
  env: AuthnEnv,
  o: IssueOptions,
  deps: { objects?: ObjectSource; now?: () => number } = {},
): Promise<IssuedToken> {
  const keys = await signingKeys(env, deps.objects ?? storeObjects(env));
  const nowSec = Math.floor(nowMs(deps) / 1000);
  const exp = nowSec + o.expirationSeconds;
  const id = crypto.randomUUID();
  const k8s: Record<string, unknown> = {
    namespace: o.namespace,
    serviceaccount: { name: o.serviceAccount, uid: o.uid },
  };
  const bound = o.boundObject;
  if (bound?.kind === "Pod") k8s.pod = { name: bound.name, uid: bound.uid };
  if (bound?.kind === "Secret") k8s.secret = { name: bound.name, uid: bound.uid };
  if (bound?.kind === "Node") k8s.node = { name: bound.name, uid: bound.uid };
  else if (bound?.kind === "Pod" && o.node) k8s.node = { name: o.node.name, uid: o.node.uid };
  if (o.warnAfterSeconds) k8s.warnafter = nowSec + o.warnAfterSeconds;
  const claims: JWTPayload = {
    aud: o.audiences?.length ? o.audiences : apiAudiences(env),
    exp,
    iat: nowSec,
    iss: issuers(env)[0],
    jti: id,
    "kubernetes.io": k8s,
    nbf: nowSec,
    sub: makeUsername(o.namespace, o.serviceAccount),
  };
  return { token: await sign(keys, claims), expirationTimestamp: rfc3339(exp * 1000), id, claims };
}

/** A legacy (non-expiring, secret-bound) token, as the token controller puts in kubernetes.io/service-account-token Secrets. */
export async function issueLegacyToken(
  env: AuthnEnv,
  sa: { namespace: string; name: string; uid: string },
  secretName: string,
  deps: { objects?: ObjectSource } = {},
): Promise<string> {
  const keys = await signingKeys(env, deps.objects ?? storeObjects(env));
  return sign(keys, {
    iss: LEGACY_ISSUER,
    "kubernetes.io/serviceaccount/namespace": sa.namespace,
    "kubernetes.io/serviceaccount/secret.name": secretName,
    "kubernetes.io/serviceaccount/service-account.name": sa.name,
    "kubernetes.io/serviceaccount/service-account.uid": sa.uid,
    sub: makeUsername(sa.namespace, sa.name),
  });
}

/** Checks the signature against the key with the token's kid, or against every key. */
export async function verifySignature(token: string, keys: SigningKeys): Promise<void> {
  let kid: string | undefined;
  try {
    kid = decodeProtectedHeader(token).kid;
  } catch {
    throw new AuthnFailure("invalid signature");
  }
  const candidates = keys.verify.filter((k) => !kid || k.kid === kid);
  for (const k of candidates.length ? candidates : keys.verify) {
    try {
      await compactVerify(token, k.key, { algorithms: [k.alg] });
      return;
    } catch {
      // next key
    }
  }
  throw new AuthnFailure("invalid signature");
}

const deletedLongAgo = (o: KubeObject, nowSec: number) => {
  const ts = o.metadata?.deletionTimestamp;
  return typeof ts === "string" && Date.parse(ts) / 1000 < nowSec - LEEWAY_SECONDS;
};

function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

function ref(v: unknown): ObjectRef | undefined {
  if (!v || typeof v !== "object") return undefined;
  const r = v as Record<string, unknown>;
  return { name: str(r.name), uid: str(r.uid) };
}

/** upstream's claims validator for bound tokens: times, then the objects the token names. */
async function validateBound(claims: JWTPayload, objects: ObjectSource, nowSec: number): Promise<UserInfo> {
  if (typeof claims.exp === "number" && nowSec - LEEWAY_SECONDS > claims.exp)
    throw new AuthnFailure("service account token has expired");
  if (typeof claims.nbf === "number" && nowSec + LEEWAY_SECONDS < claims.nbf)
    throw new AuthnFailure("service account token is not valid yet");
  if (typeof claims.iat === "number" && nowSec + LEEWAY_SECONDS < claims.iat)
    throw new AuthnFailure("service account token is issued in the future");
  const k8s = (claims["kubernetes.io"] ?? {}) as Record<string, unknown>;
  const namespace = str(k8s.namespace);
  const saRef = ref(k8s.serviceaccount) ?? { name: "", uid: "" };
  const sa = saRef.name ? await objects.get("serviceaccounts", namespace, saRef.name) : undefined;
  if (!sa) throw new AuthnFailure(`serviceaccounts "${saRef.name}" not found`);
  if (deletedLongAgo(sa, nowSec))
    throw new AuthnFailure(`service account ${namespace}/${saRef.name} has been deleted`);
  if (sa.metadata.uid !== saRef.uid)
    throw new AuthnFailure(`service account UID (${sa.metadata.uid}) does not match claim (${saRef.uid})`);
  const extra: Record<string, string[]> = {};
  const secretRef = ref(k8s.secret);
  if (secretRef) {
    const secret = await objects.get("secrets", namespace, secretRef.name);
    if (!secret || deletedLongAgo(secret, nowSec))
      throw new AuthnFailure("service account token has been invalidated");
    if (secret.metadata.uid !== secretRef.uid)
      throw new AuthnFailure(
        `secret UID (${secret.metadata.uid}) does not match service account secret ref claim (${secretRef.uid})`,
      );
  }
  const podRef = ref(k8s.pod);
  if (podRef) {
    const pod = await objects.get("pods", namespace, podRef.name);
    if (!pod || deletedLongAgo(pod, nowSec))
      throw new AuthnFailure("service account token has been invalidated");
    if (pod.metadata.uid !== podRef.uid)
      throw new AuthnFailure(
        `pod UID (${pod.metadata.uid}) does not match service account pod ref claim (${podRef.uid})`,
      );
    extra[EXTRA_POD_NAME] = [podRef.name];
    extra[EXTRA_POD_UID] = [podRef.uid];
  }
  const nodeRef = ref(k8s.node);
  if (nodeRef && !podRef) {
    // a token bound to the node itself: the node must still be there
    const node = await objects.get("nodes", "", nodeRef.name);
    if (!node || deletedLongAgo(node, nowSec))
      throw new AuthnFailure("service account token has been invalidated");
    if (node.metadata.uid !== nodeRef.uid)
      throw new AuthnFailure(
        `node UID (${node.metadata.uid}) does not match service account node ref claim (${nodeRef.uid})`,
      );
  }
  if (nodeRef?.name) {
    extra[EXTRA_NODE_NAME] = [nodeRef.name];
    if (nodeRef.uid) extra[EXTRA_NODE_UID] = [nodeRef.uid];
  }
  if (typeof claims.jti === "string" && claims.jti) extra[EXTRA_CREDENTIAL_ID] = [`JTI=${claims.jti}`];
  const user: UserInfo = {
    name: makeUsername(namespace, saRef.name),
    uid: saRef.uid,
    groups: makeGroupNames(namespace),
  };
  if (Object.keys(extra).length) user.extra = extra;
  return user;
}

async function validateLegacy(token: string, claims: JWTPayload, objects: ObjectSource): Promise<UserInfo> {
  const namespace = str(claims["kubernetes.io/serviceaccount/namespace"]);
  const secretName = str(claims["kubernetes.io/serviceaccount/secret.name"]);
  const saName = str(claims["kubernetes.io/serviceaccount/service-account.name"]);
  const saUid = str(claims["kubernetes.io/serviceaccount/service-account.uid"]);
  if (!namespace || !secretName || !saName || !saUid)
    throw new AuthnFailure("service account token claims are incomplete");
  const secret = await objects.get("secrets", namespace, secretName);
  if (!secret || secret.metadata.deletionTimestamp) throw new AuthnFailure("token has been invalidated");
  if (secret.metadata.labels?.["kubernetes.io/legacy-token-invalid-since"])
    throw new AuthnFailure("token has been invalidated");
  const stored = typeof secret.data?.token === "string" ? atob(secret.data.token) : "";
  if (stored !== token) throw new AuthnFailure("token does not match server's copy");
  const sa = await objects.get("serviceaccounts", namespace, saName);
  if (!sa || sa.metadata.deletionTimestamp)
    throw new AuthnFailure(`ServiceAccount ${namespace}/${saName} has been deleted`);
  if (sa.metadata.uid !== saUid)
    throw new AuthnFailure(`ServiceAccount UID (${sa.metadata.uid}) does not match claim (${saUid})`);
  return { name: makeUsername(namespace, saName), uid: saUid, groups: makeGroupNames(namespace) };
}

/** The service account JWT authenticator: tokens whose iss is one of ours (or the legacy issuer). */
export const serviceAccountTokens: TokenAuthenticator = async (token: string, ctx: TokenContext) => {
  let claims: JWTPayload;
  try {
    claims = decodeJwt(token);
  } catch {
    return undefined;
  }
  const legacy = claims.iss === LEGACY_ISSUER;
  if (!legacy && !issuers(ctx.env).includes(str(claims.iss))) return undefined;
  await verifySignature(token, await signingKeys(ctx.env, ctx.objects));
  const implicit = apiAudiences(ctx.env);
  const tokenAuds =
    typeof claims.aud === "string" ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud : [];
  const own = tokenAuds.length ? tokenAuds : implicit;
  const requested = ctx.audiences?.length ? ctx.audiences : implicit;
  if (!own.some((a) => requested.includes(a)))
    throw new AuthnFailure(
      `token audiences ${goQuoteList(own)} is invalid for the target audiences ${goQuoteList(requested)}`,
    );
  const nowSec = Math.floor(nowMs(ctx) / 1000);
  return legacy ? validateLegacy(token, claims, ctx.objects) : validateBound(claims, ctx.objects, nowSec);
};
