// Client certificates at the local front door, as Cloudflare's mTLS gives them to a Worker
// (api/wire/client-cert.ts). The TLS side asks every client for a certificate, optionally
// (token clients send none and are unaffected), and accepts any in the handshake; the
// certificate is judged here, once per connection, as upstream's x509 authenticator judges
// it: issued and signed by one of the client CAs, within its own and the CA's validity, and
// for client authentication when it names its usages. CN is the user, O the groups. One the
// root's CAs refuse is passed on as it is, for the Worker to check against the CA of the
// cluster a request names (another cluster's certificates, docs/clusters.md). Each
// request on the connection then carries the verdict to the Worker, and the fair queue keys
// the connection by its subject (the credential a token would be).
import { X509Certificate } from "node:crypto";
import type tls from "node:tls";
import {
  CLIENT_CERT_ERROR_HEADER,
  CLIENT_CERT_HEADER,
  CLIENT_CERT_NOT_BEFORE_HEADER,
  CLIENT_SUBJECT_HEADER,
  FRONT_ONLY_HEADERS,
  FRONT_SECRET_HEADER,
  subjectDN,
} from "../api/wire/client-cert";

/** What a connection's client certificate says, on every request of the connection. */
export interface ClientIdentity {
  /** the credential the fair queue knows the connection by ("x509 <DN>"), when it verified */
  credential?: string;
  /** the headers to add, as [name, value, ...] */
  headers: string[];
  /** the same, as HTTP/1.1 header lines */
  lines: Buffer;
}

/** certificates whose verdict is kept (the oldest goes first) */
const MAX_VERIFIED = 10_000;
const CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";
const ANY_USAGE = "2.5.29.37.0";

/** The PEM certificates in `pem`. */
export function pemCertificates(pem: string): X509Certificate[] {
  return (pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map(
    (c) => new X509Certificate(c),
  );
}

/** Why `peer` is not a client certificate of one of `cas` at `now`; undefined when it is. */
export function refusal(peer: X509Certificate, cas: X509Certificate[], now = Date.now()): string | undefined {
  const ca = cas.find((c) => peer.checkIssued(c) && peer.verify(c.publicKey));
  if (!ca) return "certificate signed by unknown authority";
  for (const c of [peer, ca]) {
    const from = Date.parse(c.validFrom);
    const to = Date.parse(c.validTo);
    if (now < from || now > to)
      return `certificate has expired or is not yet valid: current time ${new Date(now).toISOString()} is ${
        now < from ? `before ${new Date(from).toISOString()}` : `after ${new Date(to).toISOString()}`
      }`;
  }
  const usages = peer.keyUsage; // the extended key usages, when named
  if (usages?.length && !usages.includes(CLIENT_AUTH) && !usages.includes(ANY_USAGE))
    return "certificate specifies an incompatible key usage";
  return undefined;
}

/** A subject value as Node gives it: one string, or a list when the attribute repeats. */
const values = (v: string | string[] | undefined): string[] => (v === undefined ? [] : [v].flat());

/**
 * Judges the client certificates of connections against the CA bundle `caPem`, and words the
 * verdict for the Worker with the shared `secret`.
 */
export function clientCertJudge(caPem: string, secret: string) {
  const cas = pemCertificates(caPem);
  const identity = (headers: string[], credential?: string): ClientIdentity => {
    let text = "";
    for (let i = 0; i < headers.length; i += 2) text += `${headers[i]}: ${headers[i + 1]}\r\n`;
    return { credential, headers, lines: Buffer.from(text, "latin1") };
  };
  // certificates verified before (by their SHA-256 fingerprint), and when their verdict holds:
  // a client's next connections skip the signature check, not the dates
  const verified = new Map<string, { id: ClientIdentity; from: number; to: number }>();
  /** The identity of a TLS connection's client certificate; undefined when it sent none. */
  return (socket: tls.TLSSocket): ClientIdentity | undefined => {
    const peer = socket.getPeerCertificate();
    if (!peer?.raw) return undefined;
    const now = Date.now();
    const fingerprint = peer.fingerprint256;
    const known = fingerprint ? verified.get(fingerprint) : undefined;
    if (known && now >= known.from && now <= known.to) return known.id;
    let why: string | undefined;
    let x: X509Certificate | undefined;
    try {
      x = new X509Certificate(peer.raw);
      why = refusal(x, cas, now);
    } catch (e) {
      why = `malformed certificate: ${(e as Error).message}`;
    }
    if (why || !x)
      // (known to the fair queue by its fingerprint: a level is learned for it only once the
      // Worker has authenticated it)
      return identity(
        [
          FRONT_SECRET_HEADER,
          secret,
          CLIENT_CERT_ERROR_HEADER,
          encodeURIComponent(why ?? ""),
          CLIENT_CERT_HEADER,
          peer.raw.toString("base64"),
        ],
        fingerprint ? `x509 certificate ${fingerprint}` : undefined,
      );
    // upstream takes the last CN (Go's pkix.Name keeps the last one it reads)
    const cn = values(peer.subject?.CN).at(-1) ?? "";
    const dn = subjectDN(cn, values(peer.subject?.O));
    const id = identity(
      [
        FRONT_SECRET_HEADER,
        secret,
        CLIENT_SUBJECT_HEADER,
        encodeURIComponent(dn),
        CLIENT_CERT_NOT_BEFORE_HEADER,
        new Date(Date.parse(x.validFrom)).toISOString(),
      ],
      `x509 ${dn}`,
    );
    const ca = cas.find((c) => x.checkIssued(c));
    const dates = [x, ...(ca ? [ca] : [])];
    if (!fingerprint) return id;
    if (verified.size >= MAX_VERIFIED) verified.delete(verified.keys().next().value!);
    verified.set(fingerprint, {
      id,
      from: Math.max(...dates.map((c) => Date.parse(c.validFrom))),
      to: Math.min(...dates.map((c) => Date.parse(c.validTo))),
    });
    return id;
  };
}

const FRONT_ONLY_LINE = new RegExp(`\r?\n(?:${FRONT_ONLY_HEADERS.join("|")})[ \t]*:[^\r\n]*`, "gi");

/**
 * A request head (`chunk` up to `end`, the offset past its blank line) without any header a
 * client may not send (they are the front door's alone), and with `identity`'s after its
 * request line. Returns the chunk and where its head now ends.
 */
export function rewriteHead(
  chunk: Buffer,
  end: number,
  lowerHead: string,
  identity: ClientIdentity | undefined,
): { chunk: Buffer; end: number } {
  const forged = FRONT_ONLY_HEADERS.some((h) => lowerHead.includes(h));
  if (!forged && !identity) return { chunk, end };
  let head = chunk.subarray(0, end);
  if (forged) head = Buffer.from(head.toString("latin1").replace(FRONT_ONLY_LINE, ""), "latin1");
  const at = head.indexOf("\n") + 1;
  const parts = identity ? [head.subarray(0, at), identity.lines, head.subarray(at)] : [head];
  const next = Buffer.concat([...parts, chunk.subarray(end)]);
  return { chunk: next, end: head.length + (identity?.lines.length ?? 0) };
}
