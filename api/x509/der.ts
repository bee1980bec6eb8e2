// A small DER reader and writer: what the certificate signer needs of ASN.1 (X.690), no more.
// Reading gives each element's tag and where its header and contents lie, so a part can be
// copied as it was (a request's subject and public key go into the certificate byte for byte).

export class DerError extends Error {}

/** One element: its tag, where it begins (its header), and where its contents start and end. */
export interface Der {
  tag: number;
  at: number;
  start: number;
  end: number;
}

/** The element at `at`, which must end by `limit`. */
export function readDer(der: Uint8Array, at = 0, limit = der.length): Der {
  if (at + 2 > limit) throw new DerError("asn1: syntax error: data truncated");
  const tag = der[at];
  if ((tag & 0x1f) === 0x1f) throw new DerError("asn1: high-tag-number form is not supported");
  let len = der[at + 1];
  let start = at + 2;
  if (len === 0x80) throw new DerError("asn1: syntax error: indefinite length found (not DER)");
  if (len > 0x80) {
    const n = len & 0x7f;
    if (n > 4 || start + n > limit) throw new DerError("asn1: syntax error: data truncated");
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + der[start + i];
    start += n;
  }
  if (start + len > limit) throw new DerError("asn1: syntax error: data truncated");
  return { tag, at, start, end: start + len };
}

/** The elements inside a constructed element, in order. */
export function childrenOf(der: Uint8Array, parent: Der): Der[] {
  const out: Der[] = [];
  for (let at = parent.start; at < parent.end; ) {
    const e = readDer(der, at, parent.end);
    out.push(e);
    at = e.end;
  }
  return out;
}

/** The element as it was encoded (header and contents). */
export const rawOf = (der: Uint8Array, e: Der) => der.subarray(e.at, e.end);
export const contentsOf = (der: Uint8Array, e: Der) => der.subarray(e.start, e.end);

export function oidText(bytes: Uint8Array): string {
  const out: number[] = [];
  let v = 0;
  for (const b of bytes) {
    v = v * 128 + (b & 0x7f);
    if (!(b & 0x80)) {
      out.push(v);
      v = 0;
    }
  }
  if (out.length === 0) return "";
  const first = out[0] < 80 ? Math.trunc(out[0] / 40) : 2;
  return [first, out[0] - first * 40, ...out.slice(1)].join(".");
}

const latin1 = new TextDecoder("latin1");
const utf8 = new TextDecoder();

/** A directory string's text (UTF8String, PrintableString, IA5String, T61String, BMPString). */
export function stringOf(der: Uint8Array, e: Der): string {
  const b = contentsOf(der, e);
  if (e.tag === 0x1e) {
    let s = "";
    for (let i = 0; i + 1 < b.length; i += 2) s += String.fromCharCode((b[i] << 8) | b[i + 1]);
    return s;
  }
  return e.tag === 0x0c ? utf8.decode(b) : latin1.decode(b);
}

/** UTCTime or GeneralizedTime, as milliseconds since the epoch. */
export function timeOf(der: Uint8Array, e: Der): number {
  const s = latin1.decode(contentsOf(der, e));
  const m = /^(\d{2}|\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  if (!m) throw new DerError(`asn1: malformed time ${s}`);
  let year = Number(m[1]);
  if (m[1].length === 2) year += year < 50 ? 2000 : 1900;
  return Date.UTC(year, Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
}

// --- writing ---

function lengthBytes(n: number): number[] {
  if (n < 0x80) return [n];
  const out: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) out.unshift(v & 0xff);
  return [0x80 | out.length, ...out];
}

export function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** An element of `tag` holding `parts`. */
export function tlv(tag: number, ...parts: Uint8Array[]): Uint8Array {
  const body = concat(parts);
  return concat([new Uint8Array([tag, ...lengthBytes(body.length)]), body]);
}

export const sequence = (...parts: Uint8Array[]) => tlv(0x30, ...parts);
export const octetString = (b: Uint8Array) => tlv(0x04, b);
export const bitString = (b: Uint8Array) => tlv(0x03, new Uint8Array([0]), b);
export const booleanTrue = () => tlv(0x01, new Uint8Array([0xff]));
export const nullValue = () => tlv(0x05);
/** [n] EXPLICIT */
export const explicit = (n: number, ...parts: Uint8Array[]) => tlv(0xa0 | n, ...parts);

/** A non-negative INTEGER from its big-endian magnitude. */
export function integer(magnitude: Uint8Array): Uint8Array {
  let i = 0;
  while (i < magnitude.length - 1 && magnitude[i] === 0) i++;
  const m = magnitude.subarray(i);
  return tlv(0x02, m[0] & 0x80 ? concat([new Uint8Array([0]), m]) : m);
}

/** A small INTEGER (a version: 0..65535). */
export const smallInteger = (n: number) => integer(new Uint8Array([(n >> 8) & 255, n & 255]));

export function objectId(text: string): Uint8Array {
  const parts = text.split(".").map(Number);
  const values = [parts[0] * 40 + parts[1], ...parts.slice(2)];
  const out: number[] = [];
  for (const v of values) {
    const bytes = [v & 0x7f];
    for (let x = Math.floor(v / 128); x > 0; x = Math.floor(x / 128)) bytes.unshift(0x80 | (x & 0x7f));
    out.push(...bytes);
  }
  return tlv(0x06, new Uint8Array(out));
}

/** UTCTime through 2049, GeneralizedTime after (RFC 5280 4.1.2.5). */
export function time(ms: number): Uint8Array {
  const d = new Date(Math.floor(ms / 1000) * 1000);
  const iso = d.toISOString().replace(/[-:T]/g, "").slice(0, 14); // YYYYMMDDHHMMSS
  const y = d.getUTCFullYear();
  const text = y >= 1950 && y < 2050 ? `${iso.slice(2)}Z` : `${iso}Z`;
  return tlv(y >= 1950 && y < 2050 ? 0x17 : 0x18, new TextEncoder().encode(text));
}

/** A DER ECDSA-Sig-Value from WebCrypto's r || s. */
export function ecdsaSignature(raw: Uint8Array): Uint8Array {
  const half = raw.length / 2;
  return sequence(integer(raw.subarray(0, half)), integer(raw.subarray(half)));
}

/** WebCrypto's r || s (each `size` bytes) from a DER ECDSA-Sig-Value. */
export function ecdsaRaw(der: Uint8Array, size: number): Uint8Array {
  const [r, s] = childrenOf(der, readDer(der));
  const out = new Uint8Array(size * 2);
  for (const [i, e] of [r, s].entries()) {
    let v = contentsOf(der, e);
    while (v.length > size && v[0] === 0) v = v.subarray(1);
    if (v.length > size) throw new DerError("ecdsa: signature value too large");
    out.set(v, size * (i + 1) - v.length);
  }
  return out;
}

export function base64(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i += 8192) s += String.fromCharCode(...b.subarray(i, i + 8192));
  return btoa(s);
}

export function fromBase64(text: string): Uint8Array {
  const bin = atob(text.replace(/\s+/g, ""));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** `der` as one PEM block of `type`, lines of 64. */
export function pem(type: string, der: Uint8Array): string {
  const b64 = base64(der).replace(/.{64}/g, "$&\n").replace(/\n$/, "");
  return `-----BEGIN ${type}-----\n${b64}\n-----END ${type}-----\n`;
}

/** The DER of the first PEM block of `type` in `text`. */
export function pemBlock(text: string, type: string): Uint8Array | undefined {
  const m = new RegExp(`-----BEGIN ${type}-----([\\s\\S]*?)-----END ${type}-----`).exec(text);
  return m ? fromBase64(m[1]) : undefined;
}
