// What a CertificateSigningRequest's spec.request and status.certificate must hold, checked as
// upstream's validation checks them with Go's encoding/pem and crypto/x509: a PEM block of the
// right type whose DER parses as a PKCS#10 request (or as certificates), with the words those
// packages fail in. The structure is checked, and that the signature's algorithm is one x509
// knows and fits the key; the signature itself is not verified (validation here is
// synchronous, and the Workers runtime verifies only asynchronously).

/** JSON []byte fields are base64 (Go's StdEncoding); undefined and the decoder's error when not. */
export function decodeBase64(text: string): { bytes?: Uint8Array; error?: string } {
  const clean = text.replace(/[\r\n]/g, "");
  const bad = clean.search(/[^A-Za-z0-9+/=]|=[^=]/);
  if (bad >= 0) return { error: `illegal base64 data at input byte ${clean[bad] === "=" ? bad + 1 : bad}` };
  if (clean.length % 4 !== 0 || /={3}$/.test(clean))
    return { error: `illegal base64 data at input byte ${clean.length - (clean.length % 4 || 4)}` };
  let binary: string;
  try {
    binary = atob(clean);
  } catch {
    return { error: `illegal base64 data at input byte ${clean.indexOf("=")}` };
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return { bytes };
}

/** A []byte as Go's %#v prints it (what field.Invalid shows for one): []byte{0x2d, 0x2d}. */
export function goBytes(bytes: Uint8Array | undefined): string {
  if (!bytes) return "[]byte(nil)";
  return `[]byte{${Array.from(bytes, (b) => `0x${b.toString(16)}`).join(", ")}}`;
}

export interface PemBlock {
  type: string;
  headers: Record<string, string>;
  bytes: Uint8Array;
  /** what follows the block */
  rest: Uint8Array;
}

function latin1(b: Uint8Array): string {
  let out = "";
  for (let i = 0; i < b.length; i += 8192) out += String.fromCharCode(...b.subarray(i, i + 8192));
  return out;
}

/** The first PEM block in `data`, as Go's pem.Decode finds it (a block that does not decode is skipped). */
export function pemDecode(data: Uint8Array): PemBlock | undefined {
  const text = latin1(data);
  let from = 0;
  for (;;) {
    const begin = text.indexOf("-----BEGIN ", from);
    if (begin < 0) return undefined;
    // the BEGIN line must start a line
    if (begin > 0 && text[begin - 1] !== "\n") {
      from = begin + 1;
      continue;
    }
    const lineEnd = text.indexOf("\n", begin);
    const line = text.slice(begin, lineEnd < 0 ? undefined : lineEnd).replace(/\r$/, "");
    const m = /^-----BEGIN ([^-]*)-----\s*$/.exec(line);
    if (!m || lineEnd < 0) {
      from = begin + 1;
      continue;
    }
    const type = m[1];
    const endMarker = `\n-----END ${type}-----`;
    const end = text.indexOf(endMarker, lineEnd);
    if (end < 0) {
      from = begin + 1;
      continue;
    }
    let body = text.slice(lineEnd + 1, end + 1);
    const headers: Record<string, string> = {};
    const lines = body.split("\n");
    let i = 0;
    for (; i < lines.length; i++) {
      const l = lines[i].replace(/\r$/, "");
      const colon = l.indexOf(":");
      if (colon < 0) break;
      headers[l.slice(0, colon).trim()] = l.slice(colon + 1).trim();
    }
    if (i > 0 && lines[i]?.trim() === "") i++;
    body = lines
      .slice(i)
      .join("")
      .replace(/[\r\t ]/g, "");
    const decoded = decodeBase64(body);
    if (!decoded.bytes) {
      from = begin + 1;
      continue;
    }
    let after = end + endMarker.length;
    const eol = text.indexOf("\n", after);
    after = eol < 0 ? text.length : eol + 1;
    return { type, headers, bytes: decoded.bytes, rest: data.slice(after) };
  }
}

/** One DER element: its tag byte, where its contents start and end. */
interface Element {
  tag: number;
  start: number;
  end: number;
}

class Asn1Error extends Error {}

function element(der: Uint8Array, at: number, limit: number): Element {
  if (at + 2 > limit) throw new Asn1Error("asn1: syntax error: data truncated");
  const tag = der[at];
  let len = der[at + 1];
  let start = at + 2;
  if (len === 0x80) throw new Asn1Error("asn1: syntax error: indefinite length found (not DER)");
  if (len > 0x80) {
    const n = len & 0x7f;
    if (n > 4 || start + n > limit) throw new Asn1Error("asn1: syntax error: data truncated");
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + der[start + i];
    if (n > 0 && der[start] === 0)
      throw new Asn1Error("asn1: structure error: superfluous leading zeros in length");
    if (len < 0x80) throw new Asn1Error("asn1: structure error: non-minimal length");
    start += n;
  }
  if (start + len > limit) throw new Asn1Error("asn1: syntax error: data truncated");
  return { tag, start, end: start + len };
}

const TAG_NAMES: Record<number, string> = {
  2: "INTEGER",
  3: "BIT STRING",
  6: "OBJECT IDENTIFIER",
  48: "SEQUENCE",
  160: "[0]",
};

function expect(der: Uint8Array, at: number, limit: number, tag: number, what: string): Element {
  const e = element(der, at, limit);
  if (e.tag !== tag)
    throw new Asn1Error(
      `asn1: structure error: tags don't match (${TAG_NAMES[tag]} vs tag 0x${e.tag.toString(16)}) in ${what}`,
    );
  return e;
}

function oidText(der: Uint8Array, e: Element): string {
  const out: number[] = [];
  let v = 0;
  for (let i = e.start; i < e.end; i++) {
    v = v * 128 + (der[i] & 0x7f);
    if (!(der[i] & 0x80)) {
      out.push(v);
      v = 0;
    }
  }
  if (out.length === 0) return "";
  const first = out[0] < 80 ? Math.trunc(out[0] / 40) : 2;
  return [first, out[0] - first * 40, ...out.slice(1)].join(".");
}

type KeyKind = "RSA" | "ECDSA" | "Ed25519";
const KEY_TYPES: Record<KeyKind, string> = {
  RSA: "*rsa.PublicKey",
  ECDSA: "*ecdsa.PublicKey",
  Ed25519: "ed25519.PublicKey",
};
const PUBLIC_KEYS: Record<string, KeyKind> = {
  "1.2.840.113549.1.1.1": "RSA",
  "1.2.840.10045.2.1": "ECDSA",
  "1.3.101.112": "Ed25519",
};
/** The signature algorithms x509 verifies (SHA-1 too, as it allows for requests), and their key. */
const SIGNATURES: Record<string, KeyKind> = {
  "1.2.840.113549.1.1.5": "RSA",
  "1.2.840.113549.1.1.10": "RSA",
  "1.2.840.113549.1.1.11": "RSA",
  "1.2.840.113549.1.1.12": "RSA",
  "1.2.840.113549.1.1.13": "RSA",
  "1.2.840.10045.4.1": "ECDSA",
  "1.2.840.10045.4.3.2": "ECDSA",
  "1.2.840.10045.4.3.3": "ECDSA",
  "1.2.840.10045.4.3.4": "ECDSA",
  "1.3.101.112": "Ed25519",
};

/** An AlgorithmIdentifier's OID; returns the end of the element. */
function algorithm(der: Uint8Array, at: number, limit: number, what: string): { oid: string; end: number } {
  const seq = expect(der, at, limit, 0x30, what);
  const oid = expect(der, seq.start, seq.end, 0x06, what);
  return { oid: oidText(der, oid), end: seq.end };
}

/**
 * Why `der` is not a PKCS#10 CertificationRequest whose signature x509 could check, in Go's
 * words; undefined when it is. The layout: SEQUENCE { SEQUENCE { version INTEGER, subject
 * SEQUENCE, SEQUENCE { algorithm, BIT STRING }, [0] attributes }, algorithm, BIT STRING }.
 */
export function certificateRequestError(der: Uint8Array): string | undefined {
  try {
    const outer = expect(der, 0, der.length, 0x30, "certificateRequest");
    if (outer.end !== der.length) return "asn1: syntax error: trailing data";
    const tbs = expect(der, outer.start, outer.end, 0x30, "tbsCertificateRequest");
    const version = expect(der, tbs.start, tbs.end, 0x02, "tbsCertificateRequest version");
    const subject = expect(der, version.end, tbs.end, 0x30, "tbsCertificateRequest subject");
    const spki = expect(der, subject.end, tbs.end, 0x30, "publicKeyInfo");
    const key = algorithm(der, spki.start, spki.end, "publicKeyInfo algorithm");
    expect(der, key.end, spki.end, 0x03, "publicKeyInfo publicKey");
    expect(der, spki.end, tbs.end, 0xa0, "tbsCertificateRequest attributes");
    const sig = algorithm(der, tbs.end, outer.end, "certificateRequest signatureAlgorithm");
    expect(der, sig.end, outer.end, 0x03, "certificateRequest signature");
    const keyKind = PUBLIC_KEYS[key.oid];
    const sigKind = SIGNATURES[sig.oid];
    if (!keyKind || !sigKind) return "x509: cannot verify signature: algorithm unimplemented";
    if (keyKind !== sigKind)
      return `x509: signature algorithm specifies an ${sigKind} public key, but have public key of type ${KEY_TYPES[keyKind]}`;
    return undefined;
  } catch (e) {
    if (e instanceof Asn1Error) return e.message;
    throw e;
  }
}

/** upstream's certificates.ParseCSR plus CheckSignature's preconditions: the error, or undefined. */
export function requestError(request: Uint8Array): string | undefined {
  const block = pemDecode(request);
  if (block?.type !== "CERTIFICATE REQUEST") return "PEM block type must be CERTIFICATE REQUEST";
  return certificateRequestError(block.bytes);
}

/** upstream's validateCertificate for status.certificate: CERTIFICATE blocks only, at least one. */
export function certificateError(data: Uint8Array): string | undefined {
  if (data.length === 0) return undefined;
  let blocks = 0;
  let rest = data;
  for (;;) {
    const block = pemDecode(rest);
    if (!block) break;
    if (block.type !== "CERTIFICATE") return `only CERTIFICATE PEM blocks are allowed, found "${block.type}"`;
    if (Object.keys(block.headers).length) return "no PEM block headers are permitted";
    blocks++;
    try {
      const cert = expect(block.bytes, 0, block.bytes.length, 0x30, "certificate");
      if (cert.end !== block.bytes.length) return "x509: trailing data";
      const tbs = expect(block.bytes, cert.start, cert.end, 0x30, "tbsCertificate");
      const sig = algorithm(block.bytes, tbs.end, cert.end, "certificate signatureAlgorithm");
      expect(block.bytes, sig.end, cert.end, 0x03, "certificate signature");
    } catch (e) {
      if (e instanceof Asn1Error) return "x509: malformed certificate";
      throw e;
    }
    rest = block.rest;
  }
  if (blocks === 0) return "must contain at least one CERTIFICATE PEM block";
  return undefined;
}
