// Client certificates in a cluster other than the root (docs/clusters.md): each cluster has
// its own client CA (kept by its controller manager, durable-objects/controllers/certificates/
// client-ca.ts), and a certificate is a credential under /clusters/<name>/ only when that CA
// issued it. The local front door terminates TLS on one listener for every cluster: it checks
// a certificate against the root's CA, and passes one the root's CA did not issue on as it is
// (api/wire/client-cert.ts), next to the secret it shares with the Worker. Here it is checked
// against the CA of the cluster the request names, and the verdict handed to authentication
// in memory (workers/authn/x509.ts). A certificate the root's CA issued is no credential here.

import {
  CLIENT_CERT_HEADER,
  CLIENT_SUBJECT_HEADER,
  FRONT_ONLY_HEADERS,
  FRONT_SECRET_HEADER,
} from "../../api/wire/client-cert";
import { checkClientCertificate, type VerifyingCA, verifyingCA } from "../../api/x509/client-ca";
import { fromBase64 } from "../../api/x509/der";
import type { Env } from "../../durable-objects/env";
import { type AuthnEnv, safeEqual } from "../authn/types";
import { type ClusterCertVerdict, noteClusterCertificate } from "../authn/x509";

/** each cluster's CA, by cluster key (a key names one incarnation of a cluster: never stale) */
const cas = new Map<string, Promise<VerifyingCA>>();
/** verdicts on certificates already checked, by cluster key and certificate, while they hold */
const verdicts = new Map<string, { verdict: ClusterCertVerdict; until: number }>();
const MAX_VERDICTS = 10_000;
/** how long a verdict is reused (never past the certificate's end); checked again after that */
const VERDICT_MS = 60_000;

function clusterCA(root: Env, key: string): Promise<VerifyingCA> {
  let ca = cas.get(key);
  if (!ca) {
    const manager = root.CONTROLLERS.get(root.CONTROLLERS.idFromName(key));
    ca = manager.clientCACertificate().then(verifyingCA);
    ca.catch(() => cas.delete(key));
    cas.set(key, ca);
  }
  return ca;
}

/** Forgets a deleted cluster's CA and verdicts (teardown.ts). */
export function forgetClusterCA(key: string): void {
  cas.delete(key);
  for (const k of verdicts.keys()) if (k.startsWith(`${key} `)) verdicts.delete(k);
}

/** Whether the request carries a client certificate by a way this Worker does not check here. */
function otherCertificate(req: Request): boolean {
  const cf = (req as unknown as { cf?: { tlsClientAuth?: { certPresented?: string } } }).cf;
  return req.headers.has(CLIENT_SUBJECT_HEADER) || cf?.tlsClientAuth?.certPresented === "1";
}

async function judge(root: Env, key: string, certB64: string): Promise<ClusterCertVerdict> {
  const id = `${key} ${certB64}`;
  const now = Date.now();
  const known = verdicts.get(id);
  if (known && now < known.until) return known.verdict;
  let der: Uint8Array;
  try {
    der = fromBase64(certB64);
  } catch {
    return { refusal: "malformed certificate" };
  }
  const checked = await checkClientCertificate(der, await clusterCA(root, key), now);
  if ("refusal" in checked) return { refusal: checked.refusal };
  const { commonName, organizations } = checked.names;
  const verdict: ClusterCertVerdict = commonName
    ? { user: { name: commonName, uid: "", groups: organizations }, notBefore: checked.notBefore }
    : { refusal: "certificate has no common name" };
  if (verdicts.size >= MAX_VERDICTS) verdicts.delete(verdicts.keys().next().value!);
  verdicts.set(id, { verdict, until: Math.min(now + VERDICT_MS, checked.until) });
  return verdict;
}

/**
 * `req` (already re-addressed to the cluster) without the front door's certificate headers,
 * its certificate judged for cluster `key`: verified by the cluster's CA, or refused (401
 * unless a token authenticates the request, as upstream's union of authenticators).
 */
export async function withClusterCertificate(req: Request, root: Env, key: string): Promise<Request> {
  const settings = root as Env & AuthnEnv;
  const cert = req.headers.get(CLIENT_CERT_HEADER);
  const secret = req.headers.get(FRONT_SECRET_HEADER) ?? "";
  const fromFront =
    settings.EDGEPLANE_CLIENT_CERT_AUTH === "front" &&
    !!settings.EDGEPLANE_FRONT_SECRET &&
    safeEqual(secret, settings.EDGEPLANE_FRONT_SECRET);
  let verdict: ClusterCertVerdict | undefined;
  if (cert !== null)
    verdict = fromFront
      ? await judge(root, key, cert)
      : { refusal: "client certificate header not from the front door" };
  // the root's certificates (verified by the front door or Cloudflare) are nobody here
  else if (otherCertificate(req)) verdict = { refusal: "certificate signed by unknown authority" };
  if (!verdict) return req;
  const headers = new Headers(req.headers);
  for (const h of FRONT_ONLY_HEADERS) headers.delete(h);
  const out = new Request(req, { headers });
  noteClusterCertificate(out, verdict);
  return out;
}
