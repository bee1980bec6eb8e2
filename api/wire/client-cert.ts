// How the local front door tells the Worker who a verified client certificate names, as
// Cloudflare's mTLS does in request.cf.tlsClientAuth. The front door terminates TLS, asks each
// client for an optional certificate, and verifies it against the cluster's client CA; on each
// request of that connection it adds the subject (CLIENT_SUBJECT_HEADER: an RFC 4514 DN,
// percent-encoded) or why the certificate was refused (CLIENT_CERT_ERROR_HEADER), each next to
// the secret it shares with the Worker (FRONT_SECRET_HEADER: EDGEPLANE_FRONT_SECRET), and when
// the certificate's validity began (CLIENT_CERT_NOT_BEFORE_HEADER, RFC 3339: a node's
// certificates from before its agent was replaced are revoked by it). A certificate the root's
// CA did not issue may be another cluster's (docs/clusters.md): the front door then also passes
// the certificate itself (CLIENT_CERT_HEADER, base64 DER; TLS has proven the client holds its
// key), and the Worker checks it against the CA of the cluster the request names. Any
// header of these names a client sent is removed before (stripped by the front door), and the
// Worker believes them only with the secret (workers/authn/x509.ts).

export const FRONT_SECRET_HEADER = "x-edgeplane-front-secret";
export const CLIENT_SUBJECT_HEADER = "x-edgeplane-client-subject";
export const CLIENT_CERT_ERROR_HEADER = "x-edgeplane-client-cert-error";
export const CLIENT_CERT_NOT_BEFORE_HEADER = "x-edgeplane-client-cert-not-before";
export const CLIENT_CERT_HEADER = "x-edgeplane-client-cert";
/** every header name the front door alone may send (lowercase) */
export const FRONT_ONLY_HEADERS = [
  FRONT_SECRET_HEADER,
  CLIENT_SUBJECT_HEADER,
  CLIENT_CERT_ERROR_HEADER,
  CLIENT_CERT_NOT_BEFORE_HEADER,
  CLIENT_CERT_HEADER,
];

/** A DN attribute value with RFC 4514's escapes: a name cannot smuggle in another attribute. */
export function escapeDNValue(v: string): string {
  let out = v.replace(/[\\,+"<>;=]/g, (c) => `\\${c}`);
  if (out.startsWith("#") || out.startsWith(" ")) out = `\\${out}`;
  // (a value of one space was escaped as leading)
  if (v.endsWith(" ") && v.length > 1) out = `${out.slice(0, -1)}\\ `;
  return out;
}

/** "CN=<user>,O=<group>,..." with every value escaped. */
export function subjectDN(cn: string, groups: readonly string[]): string {
  return [`CN=${escapeDNValue(cn)}`, ...groups.map((g) => `O=${escapeDNValue(g)}`)].join(",");
}
