// workers/clusters/client-certs.ts on its own: the Worker's side of a cluster's client
// certificates. A certificate the front door passes on (with the secret it shares with the
// Worker) is checked against the CA of the cluster the request names, which the cluster's
// controller manager holds (here a CA made the same way, behind the manager's one RPC); the
// verdict reaches authentication in memory, never as a header, and every front-door header
// is gone from the request the cluster sees. Without the secret, or a certificate the root's
// CA verified, or one of another CA, the certificate is refused (401 unless a token is sent).
import { describe, expect, it } from "vitest";
import { CLIENT_SUBJECT_HEADER, FRONT_ONLY_HEADERS } from "../../../api/wire/client-cert";
import { createClientCA } from "../../../api/x509/client-ca";
import { pemBlock } from "../../../api/x509/der";
import { parseCertificateRequest } from "../../../api/x509/request";
import { caFields, importCAKey, issueCertificate } from "../../../api/x509/sign";
import type { Env } from "../../../durable-objects/env";
import { authenticateClientCert, clientCertNotBefore } from "../../../workers/authn/x509";
import { forgetClusterCA, withClusterCertificate } from "../../../workers/clusters/client-certs";
import { certificateRequest, hasOpenssl } from "../../helpers/client-certs";

const SECRET = "front-secret";

async function certOf(ca: { cert: string; key: string }, cn: string, groups: string[]) {
  const signing = { ...caFields(ca.cert), key: await importCAKey(ca.key) };
  const req = parseCertificateRequest(certificateRequest(cn, groups).csr);
  const now = Date.now();
  const pemText = await issueCertificate(signing, req, {
    usages: ["client auth"],
    notBefore: now - 60_000,
    notAfter: now + 3600_000,
  });
  return Buffer.from(pemBlock(pemText, "CERTIFICATE")!).toString("base64");
}

function rootEnv(caPem: string): Env {
  const manager = { clientCACertificate: async () => caPem };
  return {
    EDGEPLANE_CLUSTER: "default",
    EDGEPLANE_CLIENT_CERT_AUTH: "front",
    EDGEPLANE_FRONT_SECRET: SECRET,
    CONTROLLERS: { idFromName: (n: string) => n, get: () => manager },
  } as unknown as Env;
}

const request = (headers: Record<string, string>) =>
  new Request("https://x/api/v1/namespaces", { headers: { ...headers } });

describe.skipIf(!hasOpenssl)("a cluster's client certificates in the Worker", () => {
  it("takes a certificate of the cluster's CA passed on by the front door", async () => {
    const ca = await createClientCA("a");
    const key = `default@a@${Math.random()}`;
    const cert = await certOf(ca, "jane", ["devs"]);
    const out = await withClusterCertificate(
      request({
        "x-edgeplane-client-cert": cert,
        "x-edgeplane-front-secret": SECRET,
        "x-edgeplane-client-cert-error": "certificate signed by unknown authority",
      }),
      rootEnv(ca.cert),
      key,
    );
    for (const h of FRONT_ONLY_HEADERS) expect(out.headers.has(h)).toBe(false);
    expect(authenticateClientCert(out, {})).toEqual({ name: "jane", uid: "", groups: ["devs"] });
    expect(clientCertNotBefore(out, {})).toBeLessThan(Date.now());
    forgetClusterCA(key);
  });

  it("refuses without the front door's secret, another CA's certificate, and the root's", async () => {
    const ca = await createClientCA("a");
    const other = await createClientCA("a");
    const key = `default@a@${Math.random()}`;
    const env = rootEnv(ca.cert);
    const mine = await certOf(ca, "jane", []);
    const cases = [
      request({ "x-edgeplane-client-cert": mine }),
      request({ "x-edgeplane-client-cert": mine, "x-edgeplane-front-secret": "guess" }),
      request({
        "x-edgeplane-client-cert": await certOf(other, "jane", []),
        "x-edgeplane-front-secret": SECRET,
      }),
      request({
        [CLIENT_SUBJECT_HEADER]: "CN%3Dkubernetes-admin%2CO%3Dsystem%3Amasters",
        "x-edgeplane-front-secret": SECRET,
      }),
    ];
    for (const r of cases) {
      const out = await withClusterCertificate(r, env, key);
      expect(out.headers.has(CLIENT_SUBJECT_HEADER)).toBe(false);
      expect(() => authenticateClientCert(out, {})).toThrow(/x509/);
    }
    // nothing presented: nothing to judge
    const plain = request({ authorization: "Bearer t" });
    expect(await withClusterCertificate(plain, env, key)).toBe(plain);
    expect(authenticateClientCert(plain, {})).toBeUndefined();
    forgetClusterCA(key);
  });
});
