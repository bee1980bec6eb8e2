// Issuing a certificate for a request with a CA's key, as upstream's local signer does
// (pkg/controller/certificates/authority): the request's subject, public key and
// subjectAltNames; the key usages and extended key usages the CSR's spec.usages name (key
// encipherment only for an RSA key); not a CA; valid from five minutes ago (clock skew) until
// the requested end, never past the CA's own. Signed with WebCrypto (ECDSA or RSA PKCS#1 v1.5).
import {
  bitString,
  booleanTrue,
  childrenOf,
  contentsOf,
  type Der,
  ecdsaSignature,
  explicit,
  integer,
  nullValue,
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
import { type CertificateRequest, keyAlgorithm, namesOf, OID, type SubjectNames } from "./request";

/** A CA that signs: its subject (as encoded), end of validity, key identifier, and key. */
export interface SigningCA {
  subject: Uint8Array;
  names: SubjectNames;
  notAfter: number;
  keyId?: Uint8Array;
  key: CryptoKey;
}

/** The CA certificate's fields the signer copies (its first CERTIFICATE block). */
export function caFields(certPem: string): Omit<SigningCA, "key"> {
  const der = pemBlock(certPem, "CERTIFICATE");
  if (!der) throw new Error("no CERTIFICATE block in the CA bundle");
  const [tbs] = childrenOf(der, readDer(der));
  const fields = childrenOf(der, tbs);
  const f = fields[0].tag === 0xa0 ? fields.slice(1) : fields; // past the version
  const [, , , validity, subject] = f;
  const [, notAfter] = childrenOf(der, validity);
  const keyIdValue = extensionValue(der, f, "2.5.29.14");
  const keyId = keyIdValue && contentsOf(keyIdValue, readDer(keyIdValue));
  return {
    subject: rawOf(der, subject),
    names: namesOf(der, subject),
    notAfter: timeOf(der, notAfter),
    keyId,
  };
}

/** The CA's key (PKCS#8 PEM, "PRIVATE KEY"): ECDSA P-256 or P-384, else RSA. */
export async function importCAKey(keyPem: string): Promise<CryptoKey> {
  const der = pemBlock(keyPem, "PRIVATE KEY");
  if (!der) throw new Error("the CA key must be a PKCS#8 PEM (BEGIN PRIVATE KEY)");
  for (const alg of [
    { name: "ECDSA", namedCurve: "P-256" },
    { name: "ECDSA", namedCurve: "P-384" },
    { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
  ])
    try {
      return await crypto.subtle.importKey("pkcs8", der, alg, false, ["sign"]);
    } catch {
      // another kind of key
    }
  throw new Error("the CA key is neither ECDSA (P-256, P-384) nor RSA");
}

const KEY_USAGE_BITS: Record<string, number> = {
  "digital signature": 0,
  signing: 0,
  "content commitment": 1,
  "key encipherment": 2,
  "data encipherment": 3,
  "key agreement": 4,
  "cert sign": 5,
  "crl sign": 6,
  "encipher only": 7,
  "decipher only": 8,
};
const EXT_KEY_USAGES: Record<string, string> = {
  any: "2.5.29.37.0",
  "server auth": "1.3.6.1.5.5.7.3.1",
  "client auth": "1.3.6.1.5.5.7.3.2",
  "code signing": "1.3.6.1.5.5.7.3.3",
  "email protection": "1.3.6.1.5.5.7.3.4",
  "s/mime": "1.3.6.1.5.5.7.3.4",
  "ipsec end system": "1.3.6.1.5.5.7.3.5",
  "ipsec tunnel": "1.3.6.1.5.5.7.3.6",
  "ipsec user": "1.3.6.1.5.5.7.3.7",
  timestamping: "1.3.6.1.5.5.7.3.8",
  "ocsp signing": "1.3.6.1.5.5.7.3.9",
  "microsoft sgc": "1.3.6.1.4.1.311.10.3.3",
  "netscape sgc": "2.16.840.1.113730.4.1",
};

/** The keyUsage BIT STRING for bits numbered from the first byte's high bit. */
function keyUsageBits(bits: number[]): Uint8Array {
  const n = Math.max(...bits) + 1;
  const bytes = new Uint8Array(Math.ceil(n / 8));
  for (const b of bits) bytes[b >> 3] |= 0x80 >> (b & 7);
  return tlv(0x03, new Uint8Array([bytes.length * 8 - n]), bytes);
}

/** A certificate extension: its OID, whether it is critical, and its value (DER). */
export const extension = (oid: string, critical: boolean, value: Uint8Array) =>
  sequence(objectId(oid), ...(critical ? [booleanTrue()] : []), octetString(value));

/**
 * The value (DER, inside its OCTET STRING) of the extension `oid` among a certificate's TBS
 * fields past the version (`fields`), undefined when it has none.
 */
export function extensionValue(der: Uint8Array, fields: Der[], oid: string): Uint8Array | undefined {
  const exts = fields.find((e) => e.tag === 0xa3);
  if (!exts) return undefined;
  for (const ext of childrenOf(der, childrenOf(der, exts)[0])) {
    const parts = childrenOf(der, ext);
    if (oidText(contentsOf(der, parts[0])) === oid) return contentsOf(der, parts[parts.length - 1]);
  }
  return undefined;
}

export interface IssueOptions {
  usages: string[];
  notBefore: number;
  notAfter: number;
  /** random when not given */
  serial?: Uint8Array;
}

/** The certificate (PEM) for `req`, signed by `ca`. */
export async function issueCertificate(
  ca: SigningCA,
  req: CertificateRequest,
  opts: IssueOptions,
): Promise<string> {
  const rsa = keyAlgorithm(req.publicKeyInfo).oid === OID.rsaEncryption;
  const bits = [
    ...new Set(
      opts.usages
        .filter((u) => u in KEY_USAGE_BITS && (rsa || u !== "key encipherment"))
        .map((u) => KEY_USAGE_BITS[u]),
    ),
  ];
  const ekus = [...new Set(opts.usages.filter((u) => u in EXT_KEY_USAGES).map((u) => EXT_KEY_USAGES[u]))];
  const exts: Uint8Array[] = [];
  if (bits.length) exts.push(extension("2.5.29.15", true, keyUsageBits(bits)));
  if (ekus.length) exts.push(extension("2.5.29.37", false, sequence(...ekus.map(objectId))));
  exts.push(extension("2.5.29.19", true, sequence()));
  if (ca.keyId) exts.push(extension("2.5.29.35", false, sequence(tlv(0x80, ca.keyId))));
  if (req.subjectAltName) exts.push(extension(OID.subjectAltName, false, req.subjectAltName));
  const serial = opts.serial ?? crypto.getRandomValues(new Uint8Array(16));
  serial[0] &= 0x7f;
  const alg = ca.key.algorithm as { name: string; namedCurve?: string };
  const ecdsa = alg.name === "ECDSA";
  const p384 = ecdsa && alg.namedCurve === "P-384";
  const sigAlg = ecdsa
    ? sequence(objectId(p384 ? "1.2.840.10045.4.3.3" : "1.2.840.10045.4.3.2"))
    : sequence(objectId("1.2.840.113549.1.1.11"), nullValue());
  const tbs = sequence(
    explicit(0, smallInteger(2)),
    integer(serial),
    sigAlg,
    ca.subject,
    sequence(time(opts.notBefore), time(Math.min(opts.notAfter, ca.notAfter))),
    req.subject,
    req.publicKeyInfo,
    explicit(3, sequence(...exts)),
  );
  const signed = new Uint8Array(
    await crypto.subtle.sign(
      ecdsa ? { name: "ECDSA", hash: p384 ? "SHA-384" : "SHA-256" } : "RSASSA-PKCS1-v1_5",
      ca.key,
      tbs,
    ),
  );
  const signature = ecdsa ? ecdsaSignature(signed) : signed;
  return pem("CERTIFICATE", sequence(tbs, sigAlg, bitString(signature)));
}
