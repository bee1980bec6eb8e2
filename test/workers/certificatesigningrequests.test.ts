// certificates.k8s.io/v1 CertificateSigningRequests through real workerd and kubectl: stored with
// the requester the server saw (not the one the client wrote), listed by `kubectl get csr` with
// upstream's columns, refused with upstream's 422 causes when the request, signer, usages or
// duration are wrong, the spec kept as created, and the status subresource's rules on the
// Approved and Denied conditions. Requests are made with openssl, as a client would make them.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { api, causes, hasKubectl, kubectl, shared } from "../helpers/cluster";

const t = shared();
const CSR = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
const hasOpenssl = existsSync("/usr/bin/openssl");
if (!hasOpenssl) console.warn("SKIPPED: CSR tests that need a real request: /usr/bin/openssl not found");
const uniq = () => Math.random().toString(36).slice(2, 7);
const b64 = (text: string) => Buffer.from(text).toString("base64");

/** A PEM PKCS#10 request for CN=<cn>, with a fresh key of the given kind. */
function pemRequest(cn: string, key: "ec" | "rsa" = "ec"): string {
  const keyArgs =
    key === "ec" ? ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"] : ["-newkey", "rsa:2048"];
  return execFileSync(
    "openssl",
    ["req", "-new", ...keyArgs, "-nodes", "-keyout", "/dev/null", "-subj", `/CN=${cn}`],
    {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    },
  );
}

const csr = (name: string, spec: Record<string, unknown>, more: Record<string, unknown> = {}) => ({
  apiVersion: "certificates.k8s.io/v1",
  kind: "CertificateSigningRequest",
  metadata: { name },
  spec: { signerName: "example.com/signer", usages: ["client auth"], ...spec },
  ...more,
});

async function whoAmI(): Promise<{ username: string; uid?: string; groups: string[] }> {
  const r = await api(t, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
    apiVersion: "authentication.k8s.io/v1",
    kind: "SelfSubjectReview",
  });
  expect(r.status, r.text).toBe(201);
  return r.json.status.userInfo;
}

describe.skipIf(!hasOpenssl)("certificates.k8s.io/v1 certificatesigningrequests", () => {
  it("stores a request with the requester the server saw, and lists it as kubectl get csr does", async () => {
    const me = await whoAmI();
    const name = `csr-${uniq()}`;
    const made = await api(
      t,
      "POST",
      CSR,
      csr(
        name,
        {
          request: b64(pemRequest("alice")),
          usages: ["digital signature", "client auth"],
          expirationSeconds: 3600,
          // the client's word for who it is, and a status: both replaced, as upstream does
          username: "mallory",
          groups: ["system:masters"],
          uid: "forged",
        },
        { status: { conditions: [{ type: "Approved", status: "True" }] } },
      ),
    );
    expect(made.status, made.text).toBe(201);
    expect(made.json.spec.username).toBe(me.username);
    expect(made.json.spec.groups).toEqual(me.groups);
    expect(made.json.spec.uid).toBe(me.uid);
    expect(made.json.status).toEqual({});

    const got = await api(t, "GET", `${CSR}/${name}`);
    expect(got.status).toBe(200);
    expect(got.json.spec).toEqual(made.json.spec);
    const list = await api(t, "GET", `${CSR}?fieldSelector=spec.signerName%3Dexample.com%2Fsigner`);
    expect(list.status, list.text).toBe(200);
    expect(list.json.kind).toBe("CertificateSigningRequestList");
    expect(list.json.items.map((o: any) => o.metadata.name)).toContain(name);
    const other = await api(t, "GET", `${CSR}?fieldSelector=spec.signerName%3Dexample.com%2Fother`);
    expect(other.json.items.map((o: any) => o.metadata.name)).not.toContain(name);

    // an RSA request is as good as an EC one
    const rsa = await api(t, "POST", CSR, csr(`csr-${uniq()}`, { request: b64(pemRequest("bob", "rsa")) }));
    expect(rsa.status, rsa.text).toBe(201);

    if (hasKubectl) {
      const out = await kubectl(t, ["get", "csr", name]);
      expect(out.stderr).toBe("");
      const [head, row] = out.stdout.trim().split("\n");
      expect(head.split(/\s+/)).toEqual([
        "NAME",
        "AGE",
        "SIGNERNAME",
        "REQUESTOR",
        "REQUESTEDDURATION",
        "CONDITION",
      ]);
      const cells = row.split(/\s{2,}/);
      expect([cells[0], cells[2], cells[3], cells[4], cells[5]]).toEqual([
        name,
        "example.com/signer",
        me.username,
        "60m",
        "Pending",
      ]);
      // kubectl's own client-side validation finds the kind in the OpenAPI documents
      const applied = await kubectl(t, ["create", "-f", "-"], {
        input: JSON.stringify(csr(`csr-${uniq()}`, { request: b64(pemRequest("carol")) })),
      });
      expect(applied.stderr).toBe("");
      expect(applied.stdout).toMatch(/certificatesigningrequest.certificates.k8s.io\/csr-\S+ created/);
    }
  });

  it("refuses malformed requests, signers, usages and durations with upstream's causes", async () => {
    const good = b64(pemRequest("dave"));
    const bad = async (spec: Record<string, unknown>) =>
      causes(await api(t, "POST", CSR, csr(`csr-${uniq()}`, spec)));

    expect(await bad({ request: b64("hello") })).toEqual([
      "spec.request: Invalid value: []byte{0x68, 0x65, 0x6c, 0x6c, 0x6f}: PEM block type must be CERTIFICATE REQUEST",
    ]);
    // a certificate where a request belongs
    const certPem = "-----BEGIN CERTIFICATE-----\nMAMCAQA=\n-----END CERTIFICATE-----\n";
    expect((await bad({ request: b64(certPem) }))[0]).toMatch(
      /^spec\.request: Invalid value: \[\]byte\{0x2d, .*\}: PEM block type must be CERTIFICATE REQUEST$/,
    );
    // the right block, holding no request
    const junk = "-----BEGIN CERTIFICATE REQUEST-----\nAgEA\n-----END CERTIFICATE REQUEST-----\n";
    expect((await bad({ request: b64(junk) }))[0]).toMatch(
      /^spec\.request: Invalid value: \[\]byte\{.*\}: asn1: /,
    );
    expect(await bad({ request: undefined })).toEqual([
      "spec.request: Invalid value: []byte(nil): PEM block type must be CERTIFICATE REQUEST",
    ]);

    expect(await bad({ request: good, signerName: undefined })).toEqual(["spec.signerName: Required value"]);
    expect(await bad({ request: good, signerName: "example" })).toEqual([
      `spec.signerName: Invalid value: "example": must be a fully qualified domain and path of the form 'example.com/signer-name'`,
    ]);
    expect(await bad({ request: good, signerName: "example/signer" })).toEqual([
      'spec.signerName: Invalid value: "example": should be a domain with at least two segments separated by dots',
    ]);
    expect(await bad({ request: good, signerName: "kubernetes.io/legacy-unknown" })).toEqual([
      'spec.signerName: Invalid value: "kubernetes.io/legacy-unknown": the legacy signerName is not allowed via this API version',
    ]);

    expect(await bad({ request: good, usages: [] })).toEqual(["spec.usages: Required value"]);
    expect(await bad({ request: good, usages: ["client auth", "bogus", "client auth"] })).toEqual([
      `spec.usages[1]: Unsupported value: "bogus": supported values: "any", "cert sign", "client auth", "code signing", "content commitment", "crl sign", "data encipherment", "decipher only", "digital signature", "email protection", "encipher only", "ipsec end system", "ipsec tunnel", "ipsec user", "key agreement", "key encipherment", "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime", "server auth", "signing", "timestamping"`,
      'spec.usages[2]: Duplicate value: "client auth"',
    ]);

    expect(await bad({ request: good, expirationSeconds: 599 })).toEqual([
      "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)",
    ]);
    const ok = await api(t, "POST", CSR, csr(`csr-${uniq()}`, { request: good, expirationSeconds: 600 }));
    expect(ok.status, ok.text).toBe(201);
  });

  it("keeps the spec as created, and guards the approval conditions on the status subresource", async () => {
    const name = `csr-${uniq()}`;
    const made = await api(t, "POST", CSR, csr(name, { request: b64(pemRequest("erin")) }));
    expect(made.status, made.text).toBe(201);

    // the spec never changes after create: an update keeps the stored one
    const changed = await api(
      t,
      "PATCH",
      `${CSR}/${name}`,
      {
        spec: { signerName: "example.com/other", usages: ["server auth"] },
        metadata: { labels: { a: "b" } },
      },
      { "content-type": "application/merge-patch+json" },
    );
    expect(changed.status, changed.text).toBe(200);
    expect(changed.json.spec.signerName).toBe("example.com/signer");
    expect(changed.json.spec.usages).toEqual(["client auth"]);
    expect(changed.json.metadata.labels).toEqual({ a: "b" });

    // approving is the approval subresource's, which is not served: /status may not add it
    const { resourceVersion: _rv, ...meta } = changed.json.metadata;
    const status = (conditions: unknown[]) =>
      api(t, "PUT", `${CSR}/${name}/status`, { ...changed.json, metadata: meta, status: { conditions } });
    expect(await causes(await status([{ type: "Approved", status: "True", reason: "Mine" }]))).toEqual([
      'status.conditions: Forbidden: updates may not add a condition of type "Approved"',
    ]);
    expect(
      await causes(
        await status([
          { type: "Ready", status: "Maybe" },
          { type: "Failed", status: "False" },
        ]),
      ),
    ).toEqual([
      'status.conditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"',
      'status.conditions[1].status: Unsupported value: "False": supported values: "True"',
    ]);
    const failed = await status([{ type: "Failed", status: "True", reason: "SignerError" }]);
    expect(failed.status, failed.text).toBe(200);
    const cond = failed.json.status.conditions[0];
    expect(cond.lastUpdateTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(cond.lastTransitionTime).toBe(cond.lastUpdateTime);
    if (hasKubectl) {
      const out = await kubectl(t, ["get", "csr", name, "--no-headers"]);
      expect(
        out.stdout
          .trim()
          .split(/\s{2,}/)
          .at(-1),
      ).toBe("Pending,Failed");
    }
    // a Failed condition stays once set
    expect(await causes(await status([]))).toEqual([
      'status.conditions: Forbidden: updates may not remove a condition of type "Failed"',
    ]);
  });
});
