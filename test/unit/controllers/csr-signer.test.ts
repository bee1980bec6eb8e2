// The CSR signing controller and cleaner (durable-objects/controllers/certificates/signer.ts)
// on the in-memory cluster: approved requests are signed, denied ones never, a usage the
// signer does not take is Failed; and the cleaner's deadlines (an hour after a decision, a day
// when pending, an issued certificate's end), measured from the cluster's clock.
import { createPrivateKey, X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  CSR_KEY,
  cleanupAt,
  createCertificateSigner,
} from "../../../durable-objects/controllers/certificates/signer";
import { certificateRequest, hasOpenssl, strangerCA } from "../../helpers/client-certs";
import { FakeCluster } from "./fake";

const HOUR = 3600_000;

describe.skipIf(!hasOpenssl)("csrsigning", () => {
  const ca = strangerCA("signer-test-ca");
  const signer = createCertificateSigner({
    caCert: ca.cert,
    caKey: createPrivateKey(ca.key).export({ type: "pkcs8", format: "pem" }).toString(),
  });
  const request = (name: string, conditions: object[], usages = ["client auth"]) => ({
    metadata: { name },
    spec: {
      request: Buffer.from(certificateRequest(name).csr).toString("base64"),
      signerName: "kubernetes.io/kube-apiserver-client",
      usages,
      expirationSeconds: 3600,
    },
    status: { conditions },
  });

  it("signs approved requests, never denied ones, and fails a usage the signer does not take", async () => {
    const c = new FakeCluster();
    c.now = Date.now();
    const at = c.iso();
    c.add(CSR_KEY, request("ok", [{ type: "Approved", status: "True", lastUpdateTime: at }]));
    c.add(CSR_KEY, request("no", [{ type: "Denied", status: "True", lastUpdateTime: at }]));
    c.add(CSR_KEY, request("pending", []));
    c.add(
      CSR_KEY,
      request("server", [{ type: "Approved", status: "True", lastUpdateTime: at }], ["server auth"]),
    );
    c.add(CSR_KEY, {
      ...request("other", [{ type: "Approved", status: "True", lastUpdateTime: at }]),
      spec: { ...request("other", []).spec, signerName: "example.com/mine" },
    });
    await c.run([signer]);
    const cert = c.get(CSR_KEY, "ok")?.status?.certificate;
    const x = new X509Certificate(Buffer.from(cert, "base64").toString());
    expect(x.verify(new X509Certificate(ca.cert).publicKey)).toBe(true);
    expect(Date.parse(x.validTo) - Date.parse(x.validFrom)).toBeCloseTo(HOUR + 5 * 60_000, -4);
    for (const name of ["no", "pending", "other"])
      expect(c.get(CSR_KEY, name)?.status?.certificate).toBeUndefined();
    const server = c.get(CSR_KEY, "server")!;
    expect(server.status.certificate).toBeUndefined();
    expect(server.status.conditions[1]).toMatchObject({ type: "Failed", reason: "SignerValidationFailure" });
    expect(
      c.writes
        .filter((w) => w.verb === "update")
        .map((w) => `${w.key}/${w.sub}`)
        .sort(),
    ).toEqual(["ok/status", "server/status"]);
  });

  it("deletes decided requests after an hour and pending ones after a day", async () => {
    const t0 = Date.parse("2026-01-01T00:00:00Z");
    const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
    const csr = (conditions: object[]) => ({
      metadata: { name: "x", creationTimestamp: iso(t0) },
      status: { conditions },
    });
    expect(cleanupAt(csr([]) as never)).toBe(t0 + 24 * HOUR);
    expect(
      cleanupAt(csr([{ type: "Denied", status: "True", lastUpdateTime: iso(t0 + HOUR) }]) as never),
    ).toBe(t0 + 2 * HOUR);
    expect(cleanupAt(csr([{ type: "Approved", status: "True", lastUpdateTime: iso(t0) }]) as never)).toBe(
      t0 + HOUR,
    );

    const c = new FakeCluster();
    c.add(CSR_KEY, {
      ...request("old", [{ type: "Denied", status: "True", lastUpdateTime: c.iso(c.now - 2 * HOUR) }]),
    });
    c.add(
      CSR_KEY,
      request("young", [{ type: "Denied", status: "True", lastUpdateTime: c.iso(c.now - 60_000) }]),
    );
    await c.run([signer]);
    expect(c.get(CSR_KEY, "old")).toBeUndefined();
    expect(c.get(CSR_KEY, "young")).toBeDefined();
    // looked at again when its hour is up
    expect(c.enqueued.find((e) => e.key === "young")?.afterMs).toBe(HOUR - 60_000);
  });
});
