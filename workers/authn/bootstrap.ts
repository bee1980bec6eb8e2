// Bootstrap tokens (`<id>.<secret>`, what nodes join with): Secrets of type
// bootstrap.kubernetes.io/token named bootstrap-token-<id> in kube-system. As upstream, a
// token whose Secret is missing, deleted, expired, of the wrong type, not marked for
// authentication or holding another secret is simply not authenticated (-> 401).

import { rfc3339 } from "../../api/time";
import type { KubeObject } from "../../api/types";
import type { UserInfo } from "../../api/user";
import { storeObjects } from "./objects";
import { type AuthnEnv, nowMs, type ObjectSource, safeEqual, type TokenAuthenticator } from "./types";

export const BOOTSTRAP_NAMESPACE = "kube-system";
export const BOOTSTRAP_SECRET_PREFIX = "bootstrap-token-";
export const BOOTSTRAP_SECRET_TYPE = "bootstrap.kubernetes.io/token";
export const BOOTSTRAP_USER_PREFIX = "system:bootstrap:";
export const BOOTSTRAP_GROUP = "system:bootstrappers";
export const DEFAULT_NODE_GROUP = "system:bootstrappers:kubeadm:default-node-token";

const TOKEN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
const GROUP = /^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/;
const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

export function parseBootstrapToken(token: string): { id: string; secret: string } | undefined {
  const m = TOKEN.exec(token);
  return m ? { id: m[1], secret: m[2] } : undefined;
}

function data(secret: KubeObject, key: string): string {
  const v = secret.data?.[key];
  if (typeof v !== "string") return "";
  try {
    return atob(v);
  } catch {
    return "";
  }
}

/** The user's groups: system:bootstrappers plus auth-extra-groups, sorted and deduplicated; throws on a bad group. */
export function bootstrapGroups(secret: KubeObject): string[] {
  const groups = new Set([BOOTSTRAP_GROUP]);
  const extra = data(secret, "auth-extra-groups");
  if (extra)
    for (const g of extra.split(",")) {
      if (!GROUP.test(g)) throw new Error(`${JSON.stringify(g)} is not a valid bootstrap group name`);
      groups.add(g);
    }
  return [...groups].sort();
}

/** Expired when the expiration cannot be read or lies in the past. */
export function bootstrapExpired(secret: KubeObject, now: number): boolean {
  const exp = data(secret, "expiration");
  if (!exp) return false;
  const t = Date.parse(exp);
  return Number.isNaN(t) || now > t;
}

export const bootstrapTokens: TokenAuthenticator = async (token, ctx) => {
  const parsed = parseBootstrapToken(token);
  if (!parsed) return undefined;
  const secret = await ctx.objects.get("secrets", BOOTSTRAP_NAMESPACE, BOOTSTRAP_SECRET_PREFIX + parsed.id);
  if (!secret) return undefined;
  if (secret.metadata.deletionTimestamp) return undefined;
  if (secret.type !== BOOTSTRAP_SECRET_TYPE || !secret.data) return undefined;
  if (!safeEqual(data(secret, "token-secret"), parsed.secret)) return undefined;
  if (data(secret, "token-id") !== parsed.id) return undefined;
  if (bootstrapExpired(secret, nowMs(ctx))) return undefined;
  if (data(secret, "usage-bootstrap-authentication") !== "true") return undefined;
  let groups: string[];
  try {
    groups = bootstrapGroups(secret);
  } catch {
    return undefined;
  }
  const user: UserInfo = { name: BOOTSTRAP_USER_PREFIX + parsed.id, uid: "", groups };
  return user;
};

function randomString(n: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(n * 2));
  let out = "";
  // rejection sampling keeps the characters uniform
  for (const b of bytes) {
    if (b >= 252) continue;
    out += ALPHABET[b % 36];
    if (out.length === n) return out;
  }
  return out + randomString(n - out.length);
}

export interface BootstrapTokenOptions {
  /** lifetime; 0 or unset: 24h (kubeadm's default). Negative: already expired (tests). */
  ttlSeconds?: number;
  /** auth-extra-groups; each must start with system:bootstrappers: */
  extraGroups?: string[];
  description?: string;
  /** also mark the token for signing the cluster-info ConfigMap (kubeadm sets both) */
  signing?: boolean;
  now?: () => number;
}

/** The Secret a bootstrap token lives in (what kubeadm token create writes). */
export function bootstrapTokenSecret(id: string, secret: string, o: BootstrapTokenOptions = {}): KubeObject {
  for (const g of o.extraGroups ?? [])
    if (!GROUP.test(g)) throw new Error(`${JSON.stringify(g)} is not a valid bootstrap group name`);
  const ttl = o.ttlSeconds || 24 * 3600;
  const expiration = rfc3339(nowMs(o) + ttl * 1000);
  const d: Record<string, string> = {
    "token-id": id,
    "token-secret": secret,
    expiration,
    "usage-bootstrap-authentication": "true",
  };
  if (o.signing !== false) d["usage-bootstrap-signing"] = "true";
  if (o.extraGroups?.length) d["auth-extra-groups"] = o.extraGroups.join(",");
  if (o.description) d.description = o.description;
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: BOOTSTRAP_SECRET_PREFIX + id, namespace: BOOTSTRAP_NAMESPACE },
    type: BOOTSTRAP_SECRET_TYPE,
    data: Object.fromEntries(Object.entries(d).map(([k, v]) => [k, btoa(v)])),
  };
}

/** A fresh token's two halves (for callers outside the Worker, which then create bootstrapTokenSecret through the API). */
export function randomBootstrapToken(): { id: string; secret: string; token: string } {
  const id = randomString(6);
  const secret = randomString(16);
  return { id, secret, token: `${id}.${secret}` };
}

/** Creates a bootstrap token Secret and returns the token `<id>.<secret>`. */
export async function createBootstrapToken(
  env: AuthnEnv,
  o: BootstrapTokenOptions = {},
  deps: { objects?: ObjectSource } = {},
): Promise<string> {
  const { id, secret, token } = randomBootstrapToken();
  await (deps.objects ?? storeObjects(env)).create("secrets", bootstrapTokenSecret(id, secret, o));
  return token;
}
