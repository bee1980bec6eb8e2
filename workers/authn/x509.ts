// Client certificates, as Cloudflare's mTLS reports them in request.cf.tlsClientAuth: the
// user is the subject's CN, the groups its O values (upstream's CommonNameUserConversion).
// Only trusted when EDGEPLANE_CLIENT_CERT_AUTH=cloudflare: under wrangler dev any client can
// forge request.cf (miniflare takes it from an MF-CF-Blob request header). Locally, with
// EDGEPLANE_CLIENT_CERT_AUTH=front, the TLS-terminating front door reports the verified
// subject in X-Edgeplane-Client-Subject, believed only next to X-Edgeplane-Front-Secret
// equal to EDGEPLANE_FRONT_SECRET (a random value the front door and the Worker share).
import type { UserInfo } from "../../api/user";
import {
  CLIENT_CERT_ERROR_HEADER,
  CLIENT_CERT_NOT_BEFORE_HEADER,
  CLIENT_SUBJECT_HEADER,
  FRONT_SECRET_HEADER as SECRET_HEADER,
} from "../../api/wire/client-cert";
import { type AuthnEnv, AuthnFailure, safeEqual } from "./types";

export interface TlsClientAuth {
  certPresented?: string;
  certVerified?: string;
  certSubjectDN?: string;
  certSubjectDNRFC2253?: string;
  certIssuerDN?: string;
  certIssuerDNRFC2253?: string;
  certNotAfter?: string;
  certNotBefore?: string;
  [k: string]: unknown;
}

/** RFC 2253/4514-style DN -> attribute/value pairs, in order. Handles \, escapes, "quoted" values and + multi-valued RDNs. */
export function parseDN(dn: string): { type: string; value: string }[] {
  const out: { type: string; value: string }[] = [];
  let i = 0;
  const n = dn.length;
  while (i < n) {
    while (i < n && (dn[i] === " " || dn[i] === "," || dn[i] === ";" || dn[i] === "+" || dn[i] === "/")) i++;
    if (i >= n) break;
    let type = "";
    while (i < n && dn[i] !== "=") type += dn[i++];
    i++; // '='
    let value = "";
    if (dn[i] === '"') {
      i++;
      while (i < n && dn[i] !== '"') {
        if (dn[i] === "\\" && i + 1 < n) i++;
        value += dn[i++];
      }
      i++;
    } else {
      // spaces around a value go, unless escaped ("\\ "): kept is how much may not be trimmed
      while (i < n && dn[i] === " ") i++;
      let kept = 0;
      while (i < n && dn[i] !== "," && dn[i] !== "+" && dn[i] !== ";") {
        if (dn[i] === "\\" && i + 1 < n) {
          const hex = dn.slice(i + 1, i + 3);
          if (/^[0-9a-fA-F]{2}$/.test(hex)) {
            value += String.fromCharCode(parseInt(hex, 16));
            i += 3;
            kept = value.length;
            continue;
          }
          i++;
          value += dn[i++];
          kept = value.length;
          continue;
        }
        value += dn[i++];
      }
      value = value.slice(0, kept) + value.slice(kept).trimEnd();
    }
    out.push({ type: type.trim().toUpperCase(), value });
  }
  return out;
}

/** The user a DN stands for: CN (undefined when it has none), groups = the O values. */
export function userFromDN(dn: string): UserInfo | undefined {
  const attrs = parseDN(dn);
  const cn = attrs.find((a) => a.type === "CN" || a.type === "COMMONNAME")?.value;
  if (!cn) return undefined;
  const groups = attrs.filter((a) => a.type === "O" || a.type === "ORGANIZATIONNAME").map((a) => a.value);
  return { name: cn, uid: "", groups };
}

export function clientCertAuthEnabled(env: AuthnEnv): boolean {
  return env.EDGEPLANE_CLIENT_CERT_AUTH === "cloudflare" || env.EDGEPLANE_CLIENT_CERT_AUTH === "front";
}

export const FRONT_SECRET_HEADER = SECRET_HEADER;
export const FRONT_SUBJECT_HEADER = CLIENT_SUBJECT_HEADER;

/**
 * The front door's report (api/wire/client-cert.ts), only with the shared secret: the subject
 * DN (percent-encoded) of a verified certificate, or why a presented one was refused.
 */
function fromFrontDoor(req: Request, env: AuthnEnv): UserInfo | undefined {
  const subject = req.headers.get(FRONT_SUBJECT_HEADER);
  const refused = req.headers.get(CLIENT_CERT_ERROR_HEADER);
  if (subject === null && refused === null) return undefined;
  const secret = req.headers.get(FRONT_SECRET_HEADER) ?? "";
  if (!env.EDGEPLANE_FRONT_SECRET || !safeEqual(secret, env.EDGEPLANE_FRONT_SECRET))
    throw new AuthnFailure("x509: client certificate header not from the front door");
  if (refused !== null || subject === null)
    throw new AuthnFailure(`x509: ${safeDecode(refused ?? "") || "certificate refused"}`);
  let dn: string;
  try {
    dn = decodeURIComponent(subject);
  } catch {
    throw new AuthnFailure("x509: malformed client certificate subject");
  }
  return userFromDN(dn);
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return "";
  }
}

/** What a cluster other than the root made of a request's client certificate. */
export type ClusterCertVerdict = { user?: UserInfo; notBefore?: number; refusal?: string };

/**
 * Verdicts on the client certificates of requests served in a cluster other than the root,
 * by request: given by workers/clusters/route.ts, which checked the certificate against that
 * cluster's own CA. Kept in memory only: nothing a client sends can make one.
 */
const clusterVerdicts = new WeakMap<Request, ClusterCertVerdict>();

/** `req`'s client certificate, judged for the cluster it is served in (route.ts). */
export function noteClusterCertificate(req: Request, verdict: ClusterCertVerdict): void {
  clusterVerdicts.set(req, verdict);
}

/**
 * The user of the request's client certificate; undefined when there is none (or certificate
 * authentication is off); AuthnFailure when one was presented but did not verify.
 */
export function authenticateClientCert(req: Request, env: AuthnEnv): UserInfo | undefined {
  const judged = clusterVerdicts.get(req);
  if (judged) {
    if (judged.user) return judged.user;
    throw new AuthnFailure(`x509: ${judged.refusal ?? "certificate refused"}`);
  }
  if (!clientCertAuthEnabled(env)) return undefined;
  if (env.EDGEPLANE_CLIENT_CERT_AUTH === "front") return fromFrontDoor(req, env);
  const tls = (req as unknown as { cf?: { tlsClientAuth?: TlsClientAuth } }).cf?.tlsClientAuth;
  if (tls?.certPresented !== "1") return undefined;
  if (tls.certVerified !== "SUCCESS")
    throw new AuthnFailure(`x509: certificate not verified: ${tls.certVerified ?? "NONE"}`);
  const wantIssuer = env.EDGEPLANE_CLIENT_CA_ISSUER_DN;
  if (wantIssuer && tls.certIssuerDNRFC2253 !== wantIssuer && tls.certIssuerDN !== wantIssuer)
    throw new AuthnFailure("x509: certificate signed by unknown authority");
  if (tls.certNotAfter) {
    const t = Date.parse(tls.certNotAfter);
    if (!Number.isNaN(t) && t < Date.now()) throw new AuthnFailure("x509: certificate has expired");
  }
  return userFromDN(tls.certSubjectDN || tls.certSubjectDNRFC2253 || "");
}

/**
 * When the request's (already authenticated) client certificate became valid, in ms since the
 * epoch; undefined when unknown. Read after authenticateClientCert accepted the certificate.
 */
export function clientCertNotBefore(req: Request, env: AuthnEnv): number | undefined {
  const judged = clusterVerdicts.get(req);
  if (judged) return judged.notBefore;
  const text =
    env.EDGEPLANE_CLIENT_CERT_AUTH === "front"
      ? req.headers.get(CLIENT_CERT_NOT_BEFORE_HEADER)
      : (req as unknown as { cf?: { tlsClientAuth?: TlsClientAuth } }).cf?.tlsClientAuth?.certNotBefore;
  const t = Date.parse(text ?? "");
  return Number.isNaN(t) ? undefined : t;
}
