// api/x509 on its own: a request parsed (subject, SANs, signature checked), a certificate
// issued with a CA key that openssl's and Node's X509 accept, with the usages asked for and
// never past the CA's end; the DER writer's integers, OIDs and times; the signers' rules.

import { execFileSync } from "node:child_process";
import { createPrivateKey, X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { contentsOf, integer, objectId, oidText, readDer, time, timeOf } from "../../../api/x509/der";
import { checkRequestSignature, parseCertificateRequest } from "../../../api/x509/request";
import { caFields, importCAKey, issueCertificate } from "../../../api/x509/sign";
import {
  KUBE_APISERVER_CLIENT,
  KUBELET_CLIENT,
  KUBELET_SERVING,
  signerRefusal,
} from "../../../api/x509/signers";
import { certificateRequest, hasOpenssl, strangerCA } from "../../helpers/client-certs";

describe("DER writer", () => {
  it("writes integers, OIDs and times that read back", () => {
    expect([...integer(new Uint8Array([0, 0, 0x80]))]).toEqual([2, 2, 0, 0x80]);
    expect([...integer(new Uint8Array([0, 5]))]).toEqual([2, 1, 5]);
    const oid = objectId("1.2.840.113549.1.9.14");
    expect(oidText(contentsOf(oid, readDer(oid)))).toBe("1.2.840.113549.1.9.14");
    for (const ms of [Date.UTC(2030, 0, 2, 3, 4, 5), Date.UTC(2051, 5, 6, 7, 8, 9)]) {
      const t = time(ms);
      expect(timeOf(t, readDer(t))).toBe(ms);
    }
    expect(time(Date.UTC(2051, 0, 1))[0]).toBe(0x18); // GeneralizedTime from 2050
  });
});

describe.skipIf(!hasOpenssl)("requests and certificates", () => {
  const ca = strangerCA("test-ca");
  const caKey = createPrivateKey(ca.key).export({ type: "pkcs8", format: "pem" }).toString();

  it("parses a request's subject, and checks its signature", async () => {
    const { csr } = certificateRequest("system:node:n1", ["system:nodes"]);
    const req = parseCertificateRequest(csr);
    expect(req.names).toEqual({ commonName: "system:node:n1", organizations: ["system:nodes"] });
    expect(await checkRequestSignature(req)).toBeUndefined();
    // one byte of the signed part changed: the signature no longer holds
    const tampered = { ...req, tbs: req.tbs.slice() };
    tampered.tbs[tampered.tbs.length - 1] ^= 1;
    expect(await checkRequestSignature(tampered)).toBe("x509: ECDSA verification failure");
  });

  it("issues a certificate the CA verifies, with the usages asked for, never past the CA's end", async () => {
    const { csr } = certificateRequest("alice", ["devs"]);
    const signing = { ...caFields(ca.cert), key: await importCAKey(caKey) };
    const now = Date.now();
    const pem = await issueCertificate(signing, parseCertificateRequest(csr), {
      usages: ["digital signature", "key encipherment", "client auth"],
      notBefore: now - 300_000,
      notAfter: now + 10 * 365 * 86400_000,
    });
    const x = new X509Certificate(pem);
    expect(x.verify(new X509Certificate(ca.cert).publicKey)).toBe(true);
    expect(x.subject).toBe("O=devs\nCN=alice");
    expect(x.keyUsage).toEqual(["1.3.6.1.5.5.7.3.2"]);
    expect(x.ca).toBe(false);
    expect(Date.parse(x.validTo)).toBe(Date.parse(new X509Certificate(ca.cert).validTo));
    const text = execFileSync("openssl", ["x509", "-noout", "-text"], { input: pem, encoding: "utf8" });
    expect(text).toMatch(/Key Usage: critical\s+Digital Signature\n/); // key encipherment is RSA's only
  });

  it("applies each signer's rules", () => {
    const node = parseCertificateRequest(certificateRequest("system:node:n1", ["system:nodes"]).csr);
    const user = parseCertificateRequest(certificateRequest("bob").csr);
    expect(signerRefusal(KUBE_APISERVER_CLIENT, user, ["client auth"])).toBeUndefined();
    expect(signerRefusal(KUBE_APISERVER_CLIENT, user, ["server auth"])).toBe(
      "invalid usage for client certificate: server auth",
    );
    expect(signerRefusal(KUBELET_CLIENT, node, ["digital signature", "client auth"])).toBeUndefined();
    expect(signerRefusal(KUBELET_CLIENT, user, ["digital signature", "client auth"])).toBe(
      "subject organization is not system:nodes",
    );
    expect(signerRefusal(KUBELET_CLIENT, node, ["client auth"])).toBe(
      "usages did not match [client auth digital signature key encipherment]",
    );
    expect(signerRefusal(KUBELET_SERVING, node, ["digital signature", "server auth"])).toBe(
      "DNS or IP subjectAltName is required",
    );
  });
});
