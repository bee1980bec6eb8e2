// Bootstrap tokens (`<id>.<secret>`, what nodes join with) and the Secrets they live in:
// type bootstrap.kubernetes.io/token, named bootstrap-token-<id> in kube-system. The format,
// shared by the apiserver's authenticator and by whoever makes tokens (npm start, tests).
import { rfc3339 } from "./time";
import type { KubeObject } from "./types";

export const BOOTSTRAP_NAMESPACE = "kube-system";
export const BOOTSTRAP_SECRET_PREFIX = "bootstrap-token-";
export const BOOTSTRAP_SECRET_TYPE = "bootstrap.kubernetes.io/token";
export const BOOTSTRAP_USER_PREFIX = "system:bootstrap:";
export const BOOTSTRAP_GROUP = "system:bootstrappers";

const TOKEN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
const GROUP = /^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/;
const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

export function parseBootstrapToken(token: string): { id: string; secret: string } | undefined {
  const m = TOKEN.exec(token);
  return m ? { id: m[1], secret: m[2] } : undefined;
}

/** A field of a bootstrap token Secret's data, decoded; "" when absent or not base64. */
export function tokenSecretField(secret: KubeObject, key: string): string {
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
  const extra = tokenSecretField(secret, "auth-extra-groups");
  if (extra)
    for (const g of extra.split(",")) {
      if (!GROUP.test(g)) throw new Error(`${JSON.stringify(g)} is not a valid bootstrap group name`);
      groups.add(g);
    }
  return [...groups].sort();
}

/** Expired when the expiration cannot be read or lies in the past. */
export function bootstrapExpired(secret: KubeObject, now: number): boolean {
  const exp = tokenSecretField(secret, "expiration");
  if (!exp) return false;
  const t = Date.parse(exp);
  return Number.isNaN(t) || now > t;
}

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
  const expiration = rfc3339((o.now ? o.now() : Date.now()) + ttl * 1000);
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
