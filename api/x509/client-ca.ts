// A cluster's own client CA (docs/clusters.md), as kubeadm makes a cluster's ca.crt/ca.key:
// a self-signed ECDSA P-256 certificate for signing certificates only, made with WebCrypto so
// it can be made inside a Worker. And the check upstream's x509 authenticator makes of a client
// certificate against such a CA: issued by it (same issuer name, its signature), within its
// own and the CA's validity, and for client authentication when it names its usages.
import {
  bitString,
  booleanTrue,
  childrenOf,
  contentsOf,
  DerError,
  ecdsaRaw,
  ecdsaSignature,
  explicit,
  integer,
  objectId,
  octetString,
  oidText,
  pem,
  pemBlock,
  rawOf,
  readDer,
  sequence,
  smallInteger,
  time,
  timeOf,
  tlv,
} from "./der";
import { namesOf, type SubjectNames } from "./request";
import { extension, extensionValue } from "./sign";

/** A CA's certificate and private key (PKCS#8), both PEM. */
export interface ClientCA {
  cert: string;
  key: string;
}

const ECDSA_SHA256 = "1.2.840.10045.4.3.2";
const CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";
const ANY_USAGE = "2.5.29.37.0";
/** a CA made now is valid from five minutes ago (clock skew) */
const BACKDATE_MS = 5 * 60_000;
const DAY_MS = 24 * 3600_000;

/** A new CA named CN=`commonName`, valid for `days` (ten years) from `now`. */
export async function createClientCA(commonName: string, now = Date.now(), days = 3650): Promise<ClientCA> {
  const pair = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  const spki = new Uint8Array((await crypto.subtle.exportKey("spki", pair.publicKey)) as ArrayBuffer);
  const pkcs8 = new Uint8Array((await crypto.subtle.exportKey("pkcs8", pair.privateKey)) as ArrayBuffer);
  // the subject key identifier: SHA-1 of the public key's bits (RFC 5280 4.2.1.2, method 1)
  const [, bits] = childrenOf(spki, readDer(spki));
  const keyId = new Uint8Array(await crypto.subtle.digest("SHA-1", contentsOf(spki, bits).subarray(1)));
  const name = sequence(
    tlv(0x31, sequence(objectId("2.5.4.3"), tlv(0x0c, new TextEncoder().encode(commonName)))),
  );
  const serial = crypto.getRandomValues(new Uint8Array(16));
  serial[0] &= 0x7f;
  const sigAlg = sequence(objectId(ECDSA_SHA256));
  const keyCertSignAndCrlSign = tlv(0x03, new Uint8Array([0x01]), new Uint8Array([0x86])); // bits 0, 5, 6
  const tbs = sequence(
    explicit(0, smallInteger(2)),
    integer(serial),
    sigAlg,
    name,
    sequence(time(now - BACKDATE_MS), time(now + days * DAY_MS)),
    name,
    spki,
    explicit(
      3,
      sequence(
        extension("2.5.29.15", true, keyCertSignAndCrlSign),
        extension("2.5.29.19", true, sequence(booleanTrue())),
        extension("2.5.29.14", false, octetString(keyId)),
      ),
    ),
  );
  const raw = new Uint8Array(
    await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, pair.privateKey, tbs),
  );
  const der = sequence(tbs, sigAlg, bitString(ecdsaSignature(raw)));
  return { cert: pem("CERTIFICATE", der), key: pem("PRIVATE KEY", pkcs8) };
}

/** The parts of a certificate the check reads. */
interface Parsed {
  tbs: Uint8Array;
  signatureAlgorithm: string;
  signature: Uint8Array;
  issuer: Uint8Array;
  subject: Uint8Array;
  names: SubjectNames;
  notBefore: number;
  notAfter: number;
  publicKeyInfo: Uint8Array;
  /** the extended key usages, when it names them */
  extKeyUsages?: string[];
}

function parseCertificate(der: Uint8Array): Parsed {
  const top = readDer(der);
  if (top.end !== der.length) throw new DerError("x509: trailing data");
  const [tbsEl, algEl, sigEl] = childrenOf(der, top);
  if (!tbsEl || !algEl || !sigEl || sigEl.tag !== 0x03) throw new DerError("x509: malformed certificate");
  const fields = childrenOf(der, tbsEl);
  const f = fields[0]?.tag === 0xa0 ? fields.slice(1) : fields;
  const [, , issuer, validity, subject, spki] = f;
  if (!spki) throw new DerError("x509: malformed tbs certificate");
  const [from, to] = childrenOf(der, validity);
  const usages = extensionValue(der, f, "2.5.29.37");
  const extKeyUsages =
    usages && childrenOf(usages, readDer(usages)).map((e) => oidText(contentsOf(usages, e)));
  const sig = contentsOf(der, sigEl);
  return {
    tbs: rawOf(der, tbsEl),
    signatureAlgorithm: oidText(contentsOf(der, childrenOf(der, algEl)[0])),
    signature: sig.subarray(1),
    issuer: rawOf(der, issuer),
    subject: rawOf(der, subject),
    names: namesOf(der, subject),
    notBefore: timeOf(der, from),
    notAfter: timeOf(der, to),
    publicKeyInfo: rawOf(der, spki),
    extKeyUsages,
  };
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

/** A CA as the check uses it: parsed once, its public key imported once. */
export interface VerifyingCA {
  ca: Parsed;
  key: CryptoKey;
}

/** The CA in `certPem` (its first certificate), ready to check certificates against. */
export async function verifyingCA(certPem: string): Promise<VerifyingCA> {
  const der = pemBlock(certPem, "CERTIFICATE");
  if (!der) throw new Error("no CERTIFICATE block in the CA");
  const ca = parseCertificate(der);
  const key = await crypto.subtle.importKey(
    "spki",
    ca.publicKeyInfo,
    { name: "ECDSA", namedCurve: "P-256" },
    false,
    ["verify"],
  );
  return { ca, key };
}

/** A certificate the CA issued: who it names, when it became valid, and until when it holds. */
export interface VerifiedClientCert {
  names: SubjectNames;
  notBefore: number;
  /** the end of its validity or the CA's, whichever comes first */
  until: number;
}

/**
 * `der` checked as a client certificate of `ca` at `now`: what it names, or why it is refused
 * (worded as Go's crypto/x509 words it, as upstream's authenticator reports).
 */
export async function checkClientCertificate(
  der: Uint8Array,
  { ca, key }: VerifyingCA,
  now = Date.now(),
): Promise<VerifiedClientCert | { refusal: string }> {
  let cert: Parsed;
  try {
    cert = parseCertificate(der);
  } catch (e) {
    return { refusal: `malformed certificate: ${(e as Error).message}` };
  }
  const unknown = { refusal: "certificate signed by unknown authority" };
  if (!sameBytes(cert.issuer, ca.subject) || cert.signatureAlgorithm !== ECDSA_SHA256) return unknown;
  try {
    const ok = await crypto.subtle.verify(
      { name: "ECDSA", hash: "SHA-256" },
      key,
      ecdsaRaw(cert.signature, 32),
      cert.tbs,
    );
    if (!ok) return unknown;
  } catch {
    return unknown;
  }
  for (const c of [cert, ca])
    if (now < c.notBefore || now > c.notAfter)
      return {
        refusal: `certificate has expired or is not yet valid: current time ${new Date(now).toISOString()} is ${
          now < c.notBefore
            ? `before ${new Date(c.notBefore).toISOString()}`
            : `after ${new Date(c.notAfter).toISOString()}`
        }`,
      };
  const usages = cert.extKeyUsages;
  if (usages?.length && !usages.includes(CLIENT_AUTH) && !usages.includes(ANY_USAGE))
    return { refusal: "certificate specifies an incompatible key usage" };
  return { names: cert.names, notBefore: cert.notBefore, until: Math.min(cert.notAfter, ca.notAfter) };
}
