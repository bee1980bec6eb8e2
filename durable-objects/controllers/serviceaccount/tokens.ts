// The tokens controller (upstream pkg/controller/serviceaccount/tokens_controller.go): a
// Secret of type kubernetes.io/service-account-token naming a ServiceAccount in its
// kubernetes.io/service-account.name annotation is filled with a legacy (non-expiring) token
// for that account, the namespace and the root CA; a token Secret whose account does not exist
// (or has another uid) is deleted, and so are an account's token Secrets when it goes. Since
// 1.24 nothing makes such Secrets on its own: users create them.
import { lookupGVR } from "../../../api/registry";
import { SA_NAME_ANNOTATION, SA_TOKEN_SECRET_TYPE, SA_UID_ANNOTATION } from "../../../api/strategies/config";
import type { KubeObject } from "../../../api/types";
import { isConflict, isNotFound } from "../lib/api-errors";
import { findLive } from "../lib/objects";
import type { Controller, ControllerContext } from "../runtime/controller";

const SECRET = lookupGVR("", "v1", "secrets")!;
const SA = lookupGVR("", "v1", "serviceaccounts")!;

export interface AccountRef {
  namespace: string;
  name: string;
  uid: string;
}

export interface TokensOptions {
  /** the root CA bundle (PEM) put in each Secret as ca.crt; none when unset */
  rootCA?: string;
  /** signs a legacy token for the account, bound to the Secret's name (issueLegacyToken) */
  generate(sa: AccountRef, secretName: string): Promise<string>;
}

/** Secret data are base64 of bytes; these hold UTF-8 text (PEM, a JWT, a namespace name). */
function b64(text: string): string {
  let s = "";
  for (const b of new TextEncoder().encode(text)) s += String.fromCharCode(b);
  return btoa(s);
}

function unb64(data: unknown): string {
  if (typeof data !== "string" || !data) return "";
  try {
    return new TextDecoder().decode(Uint8Array.from(atob(data), (c) => c.charCodeAt(0)));
  } catch {
    return "";
  }
}

/** upstream's IsServiceAccountToken: the type, the account's name, and its uid when the Secret has one. */
export function isTokenFor(secret: KubeObject, sa: { name: string; uid: string }): boolean {
  const ann = secret.metadata.annotations ?? {};
  if ((secret as { type?: string }).type !== SA_TOKEN_SECRET_TYPE || ann[SA_NAME_ANNOTATION] !== sa.name)
    return false;
  return !ann[SA_UID_ANNOTATION] || ann[SA_UID_ANNOTATION] === sa.uid;
}

// Queue keys carry what a sync needs once the object is gone (as upstream's key structs): the
// uids, and for a Secret the account it named. JSON, since an annotation may hold any text.
type SecretKey = ["secret", string, string, string, string, string];
type AccountKey = ["sa", string, string, string];

export function secretKey(s: KubeObject): string {
  const ann = s.metadata.annotations ?? {};
  const key: SecretKey = [
    "secret",
    s.metadata.namespace!,
    s.metadata.name!,
    s.metadata.uid ?? "",
    ann[SA_NAME_ANNOTATION] ?? "",
    ann[SA_UID_ANNOTATION] ?? "",
  ];
  return JSON.stringify(key);
}

export function accountKey(sa: KubeObject): string {
  const key: AccountKey = ["sa", sa.metadata.namespace!, sa.metadata.name!, sa.metadata.uid ?? ""];
  return JSON.stringify(key);
}

/** The account, from the cache or (fetchOnMiss) the apiserver, if its uid is `uid` (when given). */
async function account(ctx: ControllerContext, ns: string, name: string, uid: string, fetchOnMiss: boolean) {
  const matches = (sa: KubeObject | undefined) => (sa && (!uid || sa.metadata.uid === uid) ? sa : undefined);
  const cached = matches(ctx.informers.get("/serviceaccounts", `${ns}/${name}`));
  if (cached || !fetchOnMiss) return cached;
  return matches(await findLive(ctx.api, SA, ns, name));
}

async function deleteToken(ctx: ControllerContext, ns: string, name: string, uid: string): Promise<void> {
  try {
    await ctx.api.remove(SECRET, ns, name, uid ? { preconditions: { uid } } : {});
  } catch (e) {
    // gone already, or another Secret of that name now (the uid precondition failed)
    if (isNotFound(e) || isConflict(e)) return;
    throw e;
  }
}

/** What a token Secret lacks: the CA (or a stale one), the namespace, the token. */
function needs(s: KubeObject, rootCA: string | undefined) {
  const data = s.data ?? {};
  return {
    ca: !!rootCA && unb64(data["ca.crt"]) !== rootCA,
    namespace: !data.namespace,
    token: !data.token,
  };
}

const nothing = (n: ReturnType<typeof needs>) => !n.ca && !n.namespace && !n.token;

async function fill(ctx: ControllerContext, o: TokensOptions, sa: KubeObject, cached: KubeObject) {
  if (nothing(needs(cached, o.rootCA))) return;
  // fill a fresh copy, and only if the cache is current: a newer version's event comes back here
  const live = await findLive(ctx.api, SECRET, cached.metadata.namespace!, cached.metadata.name!);
  if (!live || live.metadata.resourceVersion !== cached.metadata.resourceVersion) return;
  const n = needs(live, o.rootCA);
  if (nothing(n)) return;
  const data: Record<string, string> = { ...(live.data ?? {}) };
  if (n.ca) data["ca.crt"] = b64(o.rootCA!);
  if (n.namespace) data.namespace = b64(live.metadata.namespace!);
  if (n.token) {
    const ref = { namespace: sa.metadata.namespace!, name: sa.metadata.name!, uid: sa.metadata.uid! };
    data.token = b64(await o.generate(ref, live.metadata.name!));
  }
  live.data = data;
  live.metadata.annotations = {
    ...live.metadata.annotations,
    [SA_NAME_ANNOTATION]: sa.metadata.name!,
    [SA_UID_ANNOTATION]: sa.metadata.uid!,
  };
  try {
    await ctx.api.update(SECRET, live);
  } catch (e) {
    // changed meanwhile (its event brings the key back) or deleted: nothing to fill
    if (isConflict(e) || isNotFound(e)) return;
    throw e;
  }
}

/** A deleted token Secret leaves its account's secrets list (upstream's removeSecretReference). */
async function dropReference(
  ctx: ControllerContext,
  ns: string,
  saName: string,
  saUID: string,
  name: string,
) {
  const cached = await account(ctx, ns, saName, saUID, false);
  if (!cached?.secrets?.some((r: { name?: string }) => r?.name === name)) return;
  const live = await findLive(ctx.api, SA, ns, saName);
  if (!live || (saUID && live.metadata.uid !== saUID)) return;
  const refs: { name?: string }[] = live.secrets ?? [];
  if (!refs.some((r) => r?.name === name)) return;
  live.secrets = refs.filter((r) => r?.name !== name);
  try {
    await ctx.api.update(SA, live);
  } catch (e) {
    if (!isNotFound(e)) throw e; // a conflict is retried by the queue, as upstream retries it
  }
}

async function syncSecret(key: SecretKey, ctx: ControllerContext, o: TokensOptions): Promise<void> {
  const [, ns, name, uid, saName, saUID] = key;
  if (!saName) return;
  const cachedSecret = ctx.informers.get("/secrets", `${ns}/${name}`);
  const secret = cachedSecret && (!uid || cachedSecret.metadata.uid === uid) ? cachedSecret : undefined;
  if (!secret) return dropReference(ctx, ns, saName, saUID, name);
  const sa = await account(ctx, ns, saName, saUID, true);
  if (!sa) return deleteToken(ctx, ns, name, uid);
  return fill(ctx, o, sa, secret);
}

async function syncAccount(key: AccountKey, ctx: ControllerContext): Promise<void> {
  const [, ns, name, uid] = key;
  if (await account(ctx, ns, name, uid, false)) return;
  // the account is gone: so are its tokens
  for (const s of ctx.informers.list("/secrets", ns))
    if (isTokenFor(s, { name, uid })) await deleteToken(ctx, ns, s.metadata.name!, s.metadata.uid ?? "");
}

export function createTokensController(o: TokensOptions): Controller {
  return {
    name: "serviceaccount-token-controller",
    workers: 2,
    watches: {
      "/serviceaccounts": (sa) => [accountKey(sa)],
      "/secrets": (s) =>
        (s as { type?: string }).type === SA_TOKEN_SECRET_TYPE && s.metadata.annotations?.[SA_NAME_ANNOTATION]
          ? [secretKey(s)]
          : [],
    },
    // a token Secret whose account went while nobody watched is found on this pass
    resync: (ctx) =>
      ctx.informers
        .list("/secrets")
        .filter((s) => (s as { type?: string }).type === SA_TOKEN_SECRET_TYPE)
        .map(secretKey),
    sync(key, ctx) {
      const k = JSON.parse(key) as SecretKey | AccountKey;
      return k[0] === "secret" ? syncSecret(k as SecretKey, ctx, o) : syncAccount(k as AccountKey, ctx);
    },
  };
}
