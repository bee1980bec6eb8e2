// A PKCS#10 certificate request (RFC 2986) as the signer reads it: the subject (as encoded,
// and its CN and O values, as Go's pkix.Name gives them), the public key (as encoded), the
// subjectAltName extension requested (as encoded, and how many names of each kind), and
// whether its signature verifies, with WebCrypto (ECDSA P-256/P-384, RSA PKCS#1 v1.5).
import {
  bitString,
  childrenOf,
  contentsOf,
  type Der,
  DerError,
  ecdsaRaw,
  objectId,
  oidText,
  pem,
  pemBlock,
  rawOf,
  readDer,
  sequence,
  smallInteger,
  stringOf,
  tlv,
} from "./der";

export const OID = {
  commonName: "2.5.4.3",
  organization: "2.5.4.10",
  extensionRequest: "1.2.840.113549.1.9.14",
  subjectAltName: "2.5.29.17",
  ecPublicKey: "1.2.840.10045.2.1",
  rsaEncryption: "1.2.840.113549.1.1.1",
  p256: "1.2.840.10045.3.1.7",
  p384: "1.3.132.0.34",
} as const;

/**
 * A PKCS#10 request (PEM) for CN=`cn`, O=`groups`, of the EC key whose SubjectPublicKeyInfo
 * is `spki`, signed ECDSA with SHA-256 by `sign` (which answers the DER signature of what it
 * is given): the caller holds the key.
 */
export function encodeCertificateRequest(
  cn: string,
  groups: string[],
  spki: Uint8Array,
  sign: (info: Uint8Array) => Uint8Array,
): string {
  const utf8 = (v: string) => tlv(0x0c, new TextEncoder().encode(v));
  const rdn = (oid: string, value: string) => tlv(0x31, sequence(objectId(oid), utf8(value)));
  const subject = sequence(...groups.map((g) => rdn(OID.organization, g)), rdn(OID.commonName, cn));
  const info = sequence(smallInteger(0), subject, spki, tlv(0xa0));
  const der = sequence(info, sequence(objectId(ECDSA_WITH_SHA256)), bitString(sign(info)));
  return pem("CERTIFICATE REQUEST", der);
}

const ECDSA_WITH_SHA256 = "1.2.840.10045.4.3.2";

export interface SubjectNames {
  /** the last CN (as Go keeps it), "" when none */
  commonName: string;
  organizations: string[];
}

export interface CertificateRequest {
  subject: Uint8Array;
  names: SubjectNames;
  publicKeyInfo: Uint8Array;
  /** the subjectAltName extension's value as requested, when there is one */
  subjectAltName?: Uint8Array;
  /** how many DNS names, emails, IP addresses and URIs it names */
  sans: { dns: number; email: number; ip: number; uri: number };
  tbs: Uint8Array;
  signatureAlgorithm: string;
  signature: Uint8Array;
}

/** The CN and O values of an encoded Name (SEQUENCE OF SET OF AttributeTypeAndValue). */
export function namesOf(der: Uint8Array, name: Der): SubjectNames {
  const out: SubjectNames = { commonName: "", organizations: [] };
  for (const rdn of childrenOf(der, name))
    for (const atv of childrenOf(der, rdn)) {
      const [type, value] = childrenOf(der, atv);
      const oid = oidText(contentsOf(der, type));
      if (oid === OID.commonName) out.commonName = stringOf(der, value);
      else if (oid === OID.organization) out.organizations.push(stringOf(der, value));
    }
  return out;
}

/** The request in a PEM text (its first CERTIFICATE REQUEST block); throws DerError when it does not parse. */
export function parseCertificateRequest(pemText: string): CertificateRequest {
  const der = pemBlock(pemText, "CERTIFICATE REQUEST");
  if (!der) throw new DerError("PEM block type must be CERTIFICATE REQUEST");
  const outer = readDer(der);
  const [tbs, alg, sig] = childrenOf(der, outer);
  const [, subject, spki, attributes] = childrenOf(der, tbs);
  if (!subject || !spki) throw new DerError("asn1: malformed certificate request");
  const sans = { dns: 0, email: 0, ip: 0, uri: 0 };
  let subjectAltName: Uint8Array | undefined;
  if (attributes?.tag === 0xa0)
    for (const attr of childrenOf(der, attributes)) {
      const [type, values] = childrenOf(der, attr);
      if (oidText(contentsOf(der, type)) !== OID.extensionRequest) continue;
      for (const exts of childrenOf(der, values))
        for (const ext of childrenOf(der, exts)) {
          const parts = childrenOf(der, ext);
          if (oidText(contentsOf(der, parts[0])) !== OID.subjectAltName) continue;
          const value = contentsOf(der, parts[parts.length - 1]);
          subjectAltName = value;
          for (const gn of childrenOf(value, readDer(value))) {
            const kind = gn.tag & 0x1f;
            if (kind === 2) sans.dns++;
            else if (kind === 1) sans.email++;
            else if (kind === 7) sans.ip++;
            else if (kind === 6) sans.uri++;
          }
        }
    }
  const sigBits = contentsOf(der, sig);
  return {
    subject: rawOf(der, subject),
    names: namesOf(der, subject),
    publicKeyInfo: rawOf(der, spki),
    subjectAltName,
    sans,
    tbs: rawOf(der, tbs),
    signatureAlgorithm: oidText(contentsOf(der, childrenOf(der, alg)[0])),
    signature: sigBits.subarray(1), // past the unused-bits byte
  };
}

/** The key algorithm of an encoded SubjectPublicKeyInfo: its OID and its parameter OID (a curve). */
export function keyAlgorithm(spki: Uint8Array): { oid: string; curve?: string } {
  const [alg] = childrenOf(spki, readDer(spki));
  const [oid, params] = childrenOf(spki, alg);
  return {
    oid: oidText(contentsOf(spki, oid)),
    curve: params?.tag === 0x06 ? oidText(contentsOf(spki, params)) : undefined,
  };
}

const HASHES: Record<string, string> = {
  "1.2.840.10045.4.3.2": "SHA-256",
  "1.2.840.10045.4.3.3": "SHA-384",
  "1.2.840.10045.4.3.4": "SHA-512",
  "1.2.840.113549.1.1.11": "SHA-256",
  "1.2.840.113549.1.1.12": "SHA-384",
  "1.2.840.113549.1.1.13": "SHA-512",
};

const CURVES: Record<string, { name: string; size: number }> = {
  [OID.p256]: { name: "P-256", size: 32 },
  [OID.p384]: { name: "P-384", size: 48 },
};

/** Whether the request is signed by its own key (upstream's CheckSignature); why not, when not. */
export async function checkRequestSignature(req: CertificateRequest): Promise<string | undefined> {
  const hash = HASHES[req.signatureAlgorithm];
  const key = keyAlgorithm(req.publicKeyInfo);
  if (!hash) return "x509: cannot verify signature: algorithm unimplemented";
  try {
    if (key.oid === OID.ecPublicKey) {
      const curve = CURVES[key.curve ?? ""];
      if (!curve || !req.signatureAlgorithm.startsWith("1.2.840.10045.4.3"))
        return "x509: cannot verify signature: algorithm unimplemented";
      const k = await crypto.subtle.importKey(
        "spki",
        req.publicKeyInfo,
        { name: "ECDSA", namedCurve: curve.name },
        false,
        ["verify"],
      );
      const ok = await crypto.subtle.verify(
        { name: "ECDSA", hash },
        k,
        ecdsaRaw(req.signature, curve.size),
        req.tbs,
      );
      return ok ? undefined : "x509: ECDSA verification failure";
    }
    if (key.oid === OID.rsaEncryption && req.signatureAlgorithm.startsWith("1.2.840.113549.1.1")) {
      const k = await crypto.subtle.importKey(
        "spki",
        req.publicKeyInfo,
        { name: "RSASSA-PKCS1-v1_5", hash },
        false,
        ["verify"],
      );
      const ok = await crypto.subtle.verify("RSASSA-PKCS1-v1_5", k, req.signature, req.tbs);
      return ok ? undefined : "crypto/rsa: verification error";
    }
  } catch (e) {
    return `x509: ${(e as Error).message}`;
  }
  return "x509: cannot verify signature: algorithm unimplemented";
}
