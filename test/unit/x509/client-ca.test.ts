// api/x509/client-ca.ts on its own: a cluster's client CA made with WebCrypto is a CA that
// Node's X509 and openssl accept (self-signed, CA:TRUE, for signing certificates), and the
// check of a client certificate against it accepts what it issued for client auth and refuses
// another CA's certificate, one for another usage, and one out of its validity.
import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkClientCertificate, createClientCA, verifyingCA } from "../../../api/x509/client-ca";
import { pemBlock } from "../../../api/x509/der";
import { parseCertificateRequest } from "../../../api/x509/request";
import { caFields, importCAKey, issueCertificate } from "../../../api/x509/sign";
import { certificateRequest, hasOpenssl } from "../../helpers/client-certs";

async function issued(
  ca: { cert: string; key: string },
  cn: string,
  usages: string[],
  from: number,
  to: number,
) {
  const signing = { ...caFields(ca.cert), key: await importCAKey(ca.key) };
  const req = parseCertificateRequest(certificateRequest(cn, ["team"]).csr);
  return pemBlock(
    await issueCertificate(signing, req, { usages, notBefore: from, notAfter: to }),
    "CERTIFICATE",
  )!;
}

describe.skipIf(!hasOpenssl)("a cluster's client CA", () => {
  it("is a self-signed CA that openssl and Node accept", async () => {
    const ca = await createClientCA("edgeplane-a-client-ca");
    const x = new X509Certificate(ca.cert);
    expect(x.ca).toBe(true);
    expect(x.subject).toBe("CN=edgeplane-a-client-ca");
    expect(x.checkIssued(x)).toBe(true);
    expect(x.verify(x.publicKey)).toBe(true);
    const dir = mkdtempSync(join(tmpdir(), "client-ca-"));
    try {
      writeFileSync(join(dir, "ca.crt"), ca.cert);
      const text = execFileSync("openssl", [
        "x509",
        "-in",
        join(dir, "ca.crt"),
        "-noout",
        "-text",
      ]).toString();
      expect(text).toMatch(/CA:TRUE/);
      expect(text).toMatch(/Certificate Sign, CRL Sign/);
      const verify = execFileSync("openssl", ["verify", "-CAfile", join(dir, "ca.crt"), join(dir, "ca.crt")]);
      expect(verify.toString()).toMatch(/OK/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("accepts its own client certificates and refuses others", async () => {
    const now = Date.now();
    const a = await createClientCA("a");
    const b = await createClientCA("a"); // the same name, another key
    const verifier = await verifyingCA(a.cert);
    const mine = await issued(a, "jane", ["client auth"], now - 1000, now + 3600_000);
    expect(await checkClientCertificate(mine, verifier, now)).toEqual({
      names: { commonName: "jane", organizations: ["team"] },
      notBefore: Math.floor((now - 1000) / 1000) * 1000,
      until: Math.floor((now + 3600_000) / 1000) * 1000,
    });
    const theirs = await issued(b, "jane", ["client auth"], now - 1000, now + 3600_000);
    expect(await checkClientCertificate(theirs, verifier, now)).toEqual({
      refusal: "certificate signed by unknown authority",
    });
    const serving = await issued(a, "jane", ["server auth"], now - 1000, now + 3600_000);
    expect(await checkClientCertificate(serving, verifier, now)).toEqual({
      refusal: "certificate specifies an incompatible key usage",
    });
    const old = await issued(a, "jane", ["client auth"], now - 7200_000, now - 3600_000);
    expect(await checkClientCertificate(old, verifier, now)).toMatchObject({
      refusal: expect.stringMatching(/^certificate has expired or is not yet valid/),
    });
    expect(await checkClientCertificate(new Uint8Array([0x30, 0x03, 1, 1]), verifier, now)).toMatchObject({
      refusal: expect.stringMatching(/^malformed certificate/),
    });
  });
});
