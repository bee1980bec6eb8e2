// Client certificates as Cloudflare's mTLS reports them (request.cf.tlsClientAuth), injected
// through miniflare's cf blob: the subject's CN is the user and its O values the groups.
// Trusted only when EDGEPLANE_CLIENT_CERT_AUTH=cloudflare; otherwise the cf object is ignored.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, shared } from "../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer, tempStateDir } from "../helpers/own-server";

let s: OwnServer;
let dir: string;

beforeAll(async () => {
  dir = tempStateDir("x509");
  s = await startOwnServer({ stateDir: dir, vars: { EDGEPLANE_CLIENT_CERT_AUTH: "cloudflare" } });
});

afterAll(async () => {
  await s?.stop();
  removeStateDir(dir);
});

function withCert(url: string, path: string, auth: Record<string, string>, init: RequestInit = {}) {
  return fetch(url + path, {
    ...init,
    headers: {
      ...(init.headers as Record<string, string>),
      "MF-CF-Blob": JSON.stringify({ tlsClientAuth: auth }),
    },
  });
}

const verified = { certPresented: "1", certVerified: "SUCCESS", certSubjectDN: "CN=alice,O=devs,O=ops" };
const review = {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" }),
};

describe("client certificates (Cloudflare mTLS)", () => {
  it("a verified certificate is the user CN with groups O", async () => {
    const r = await withCert(s.url, "/apis/authentication.k8s.io/v1/selfsubjectreviews", verified, review);
    expect(r.status).toBe(201);
    expect((await r.json()).status.userInfo).toEqual({
      username: "alice",
      groups: ["devs", "ops", "system:authenticated"],
    });
    // and authorization sees that user
    const pods = await withCert(s.url, "/api/v1/namespaces/default/pods", verified);
    expect(pods.status).toBe(403);
    expect((await pods.json()).message).toContain('User "alice" cannot list resource "pods"');
  });

  it("a certificate that failed verification is 401", async () => {
    const r = await withCert(s.url, "/api/v1/namespaces/default/pods", {
      ...verified,
      certVerified: "FAILED:self signed certificate",
    });
    expect(r.status).toBe(401);
  });

  it("without EDGEPLANE_CLIENT_CERT_AUTH the cf object is not believed", async () => {
    const t = shared();
    // no credential at all, then: 401 (anonymous is served on health and version only)
    const r = await withCert(t.url, "/api/v1/namespaces/default/pods", verified);
    expect(r.status).toBe(401);
    expect((await r.json()).reason).toBe("Unauthorized");
    expect((await api(t, "GET", "/api/v1/namespaces/default/pods")).status).toBe(200);
  });
});
