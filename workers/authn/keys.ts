// The service account token signing key. From EDGEPLANE_SA_SIGNING_KEY (a private JWK, or a
// JWKS: its first private key signs, every key verifies; JSON or base64 of it) when set; otherwise generated once
// per cluster (ES256) and kept as the Secret kube-system/edgeplane-sa-signing-key, so every
// isolate signs and verifies with the same key. Key ids are upstream's: base64url(SHA-256 of
// the public key's DER SubjectPublicKeyInfo).
import { exportJWK, generateKeyPair, importJWK, type JWK } from "jose";
import { StatusError } from "../../api/errors";
import type { KubeObject } from "../../api/types";
import { type AuthnEnv, type ObjectSource, parseJsonSetting } from "./types";

export const KEY_SECRET_NAMESPACE = "kube-system";
export const KEY_SECRET_NAME = "edgeplane-sa-signing-key";
export const KEY_SECRET_TYPE = "edgeplane.io/signing-key";
const KEY_FIELD = "key.jwk";

export interface VerifyKey {
  kid: string;
  alg: string;
  key: CryptoKey;
  /** the public JWK as /openid/v1/jwks serves it */
  jwk: JWK;
}

export interface SigningKeys {
  kid: string;
  alg: string;
  privateKey: CryptoKey;
  /** the signing key's public half first */
  verify: VerifyKey[];
}

const PRIVATE_PARTS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

export function algOf(jwk: JWK): string {
  if (jwk.alg) return jwk.alg;
  if (jwk.kty === "RSA") return "RS256";
  if (jwk.kty === "EC")
    return (
      ({ "P-256": "ES256", "P-384": "ES384", "P-521": "ES512" } as Record<string, string>)[jwk.crv ?? ""] ??
      "ES256"
    );
  throw new Error(`unsupported signing key type ${jwk.kty}`);
}

export function publicJwk(jwk: JWK): JWK {
  const pub: JWK = {};
  for (const [k, v] of Object.entries(jwk))
    if (!PRIVATE_PARTS.includes(k) && k !== "key_ops" && k !== "ext") (pub as any)[k] = v;
  return pub;
}

function base64url(bytes: ArrayBuffer): string {
  let s = "";
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Upstream's key id: base64url(sha256(DER PKIX public key)). */
export async function keyId(publicKey: CryptoKey): Promise<string> {
  const der = (await crypto.subtle.exportKey("spki", publicKey)) as ArrayBuffer;
  return base64url(await crypto.subtle.digest("SHA-256", der));
}

async function verifyKey(jwk: JWK): Promise<VerifyKey> {
  const alg = algOf(jwk);
  const pub = publicJwk(jwk);
  const key = (await importJWK({ ...pub, ext: true }, alg, { extractable: true })) as CryptoKey;
  const kid = await keyId(key);
  return { kid, alg, key, jwk: { ...pub, kid, alg, use: "sig" } };
}

/** Builds the key set from JWK text: one private JWK, or a JWKS. */
export async function keysFromJwkText(text: string): Promise<SigningKeys> {
  const parsed = parseJsonSetting("EDGEPLANE_SA_SIGNING_KEY", text);
  const jwks: JWK[] = Array.isArray(parsed?.keys) ? parsed.keys : [parsed];
  const signer = jwks.find((k) => typeof k.d === "string");
  if (!signer) throw new Error("EDGEPLANE_SA_SIGNING_KEY holds no private key");
  const verify = await Promise.all([signer, ...jwks.filter((k) => k !== signer)].map(verifyKey));
  const alg = algOf(signer);
  const privateKey = (await importJWK(signer, alg)) as CryptoKey;
  return { kid: verify[0].kid, alg, privateKey, verify };
}

/** A fresh private JWK (ES256), as stored in the Secret or given in EDGEPLANE_SA_SIGNING_KEY. */
export async function generateSigningJwk(alg = "ES256"): Promise<JWK> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  return { ...(await exportJWK(privateKey)), alg };
}

function secretJwk(secret: KubeObject): string | undefined {
  const b64 = secret.data?.[KEY_FIELD];
  return typeof b64 === "string" ? atob(b64) : undefined;
}

async function persistedKeyText(objects: ObjectSource): Promise<string> {
  const found = await objects.get("secrets", KEY_SECRET_NAMESPACE, KEY_SECRET_NAME);
  const text = found && secretJwk(found);
  if (text) return text;
  const jwk = JSON.stringify(await generateSigningJwk());
  const secret: KubeObject = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: KEY_SECRET_NAME,
      namespace: KEY_SECRET_NAMESPACE,
      labels: { "app.kubernetes.io/managed-by": "edgeplane" },
    },
    type: KEY_SECRET_TYPE,
    data: { [KEY_FIELD]: btoa(jwk) },
  };
  try {
    await objects.create("secrets", secret);
    return jwk;
  } catch (e) {
    // another isolate won the race: use its key
    if (!(e instanceof StatusError && e.reason === "AlreadyExists")) throw e;
    const again = await objects.get("secrets", KEY_SECRET_NAMESPACE, KEY_SECRET_NAME);
    const t = again && secretJwk(again);
    if (!t) throw e;
    return t;
  }
}

/**
 * Loaded key sets, per isolate. Only settled ones: a request never awaits another request's
 * pending load, because workerd cancels that load when its own request goes away, and a
 * kept promise would then never settle for anyone. Concurrent first loads each read the
 * Secret (its creation races settle on AlreadyExists); the first to finish is kept.
 */
const cache = new Map<string, SigningKeys>();

/** The cluster's signing keys, loaded once per isolate. */
export async function signingKeys(env: AuthnEnv, objects: ObjectSource): Promise<SigningKeys> {
  const configured = env.EDGEPLANE_SA_SIGNING_KEY;
  const cacheKey = configured ? `env:${configured}` : `secret:${env.EDGEPLANE_CLUSTER}`;
  const have = cache.get(cacheKey);
  if (have) return have;
  const keys = await keysFromJwkText(configured ?? (await persistedKeyText(objects)));
  const first = cache.get(cacheKey);
  if (first) return first;
  cache.set(cacheKey, keys);
  return keys;
}

/** Forgets loaded keys (tests; after the key Secret was replaced). */
export function resetSigningKeys(): void {
  cache.clear();
}
