// Client certificates at the local front door, with real kubectl: `npm start` (and every
// server the tests start, which share its code) writes <state>/kubeconfig-x509, the admin with
// a client certificate (CN=kubernetes-admin, O=system:masters); the front door asks for an
// optional certificate, verifies it against the cluster CA, and the Worker takes CN as the
// user and O as the groups. A certificate of another CA, an expired one, or none at all, with
// no other credential, is 401; headers a client sends to claim a subject are dropped.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http2 from "node:http2";
import https from "node:https";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubeconfig } from "../../local-engine/devserver";
import { clientCert, clusterCA, hasOpenssl, type Pem, strangerCA } from "../helpers/client-certs";
import { api, hasKubectl, KUBECTL, shared } from "../helpers/cluster";

const run = promisify(execFile);
const s = shared();
const stateDir = dirname(s.kubeconfigPath);
const httpsUrl = s.url.replace("http://", "https://");
let dir: string;
let ca: Pem;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "edgeplane-x509-"));
  ca = clusterCA(stateDir);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** kubectl with a kubeconfig file; its exit code and output. */
async function kc(config: string, args: string[]) {
  try {
    const { stdout, stderr } = await run(KUBECTL, ["--kubeconfig", config, ...args]);
    return { code: 0, stdout, stderr };
  } catch (e: any) {
    return { code: e.code ?? 1, stdout: e.stdout ?? "", stderr: e.stderr ?? String(e) };
  }
}

/** A kubeconfig file for the server with the certificate and key `cred`. */
function configWith(name: string, cred: Pem): string {
  const file = join(dir, name);
  writeFileSync(file, kubeconfig(httpsUrl, cred, ca.cert));
  return file;
}

/** A request over HTTPS/1.1 presenting `cred` (Node sends a certificate whatever CAs the server names). */
function h1(path: string, cred?: Pem, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = https.request(
      `${httpsUrl}${path}`,
      { ca: ca.cert, cert: cred?.cert, key: cred?.key, headers, agent: false },
      (res) => {
        let body = "";
        res.on("data", (d) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** The same over HTTP/2 (kubectl's protocol over TLS). */
function h2(path: string, cred?: Pem, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const session = http2.connect(httpsUrl, { ca: ca.cert, cert: cred?.cert, key: cred?.key });
    session.on("error", reject);
    const req = session.request({ ":path": path, ...headers });
    let status = 0;
    let body = "";
    req.on("response", (h) => (status = Number(h[":status"])));
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      session.close();
      resolve({ status, body });
    });
    req.on("error", reject);
    req.end();
  });
}

const whoami = async (config: string) => {
  const r = await kc(config, ["auth", "whoami", "-o", "json"]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).status.userInfo;
};
const UNAUTHORIZED = /Unauthorized|asked for the client to provide credentials/;

describe.skipIf(!hasKubectl || !hasOpenssl)("client certificates at the local front door", () => {
  it("kubeconfig-x509 is the admin by certificate: get ns works, whoami shows CN and O", async () => {
    const config = join(stateDir, "kubeconfig-x509");
    const ns = await kc(config, ["get", "ns", "-o", "name"]);
    expect(ns.code, ns.stderr).toBe(0);
    expect(ns.stdout).toContain("namespace/default");
    expect(await whoami(config)).toEqual({
      username: "kubernetes-admin",
      groups: ["system:masters", "system:authenticated"],
    });
  });

  it("a user's certificate from the cluster CA is that user, and RBAC bound to the name applies", async () => {
    const user = `cert-user-${Math.random().toString(36).slice(2, 8)}`;
    const config = configWith(`${user}.kubeconfig`, clientCert(ca, user, ["devs", "qa"]));
    expect(await whoami(config)).toEqual({ username: user, groups: ["devs", "qa", "system:authenticated"] });
    const before = await kc(config, ["get", "ns"]);
    expect(before.code).not.toBe(0);
    expect(before.stderr).toContain(`User "${user}" cannot list resource "namespaces"`);
    const binding = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: `${user}-view` },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "view" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }],
    };
    // (view does not cover namespaces: this one does)
    const role = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: `${user}-ns-reader` },
      rules: [{ apiGroups: [""], resources: ["namespaces"], verbs: ["get", "list"] }],
    };
    expect((await api(s, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role)).status).toBe(201);
    binding.roleRef.name = role.metadata.name;
    expect(
      (await api(s, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)).status,
    ).toBe(201);
    try {
      const after = await kc(config, ["get", "ns", "-o", "name"]);
      expect(after.code, after.stderr).toBe(0);
      expect(after.stdout).toContain("namespace/default");
      // what the binding does not give stays refused
      const secrets = await kc(config, ["get", "secrets", "-A"]);
      expect(secrets.stderr).toContain("forbidden");
    } finally {
      await api(
        s,
        "DELETE",
        `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${binding.metadata.name}`,
      );
      await api(s, "DELETE", `/apis/rbac.authorization.k8s.io/v1/clusterroles/${role.metadata.name}`);
    }
  });

  it("a certificate from another CA or an expired one is 401; none at all is 401 but on health and version", async () => {
    const stranger = clientCert(strangerCA(), "kubernetes-admin", ["system:masters"]);
    const expired = clientCert(ca, "kubernetes-admin", ["system:masters"], -1);
    for (const [name, cred] of [
      ["stranger", stranger],
      ["expired", expired],
    ] as const) {
      const r = await kc(configWith(`${name}.kubeconfig`, cred), ["get", "ns"]);
      expect(r.code, name).not.toBe(0);
      expect(r.stderr, name).toMatch(UNAUTHORIZED);
    }
    // kubectl sends no certificate the server's CA list does not name; Node sends it anyway,
    // so the front door's own verdict is what answers here, over both protocols
    for (const cred of [stranger, expired]) {
      expect((await h1("/api/v1/namespaces", cred)).status).toBe(401);
      expect((await h2("/api/v1/namespaces", cred)).status).toBe(401);
    }
    // no credential at all is served as system:anonymous on health and version only, and is
    // 401 elsewhere (kubectl itself would prompt for a password here)
    for (const ask of [h1, h2]) {
      const none = await ask("/api/v1/namespaces");
      expect(none.status).toBe(401);
      expect(JSON.parse(none.body)).toMatchObject({ kind: "Status", reason: "Unauthorized" });
      expect((await ask("/version")).status).toBe(200);
    }
    // and the admin's own, to show the same requests can succeed
    const admin = clusterAdmin();
    expect((await h1("/api/v1/namespaces", admin)).status).toBe(200);
    expect((await h2("/api/v1/namespaces", admin)).status).toBe(200);
  });

  it("a refused certificate does not hide a valid token beside it (as upstream's union)", async () => {
    const stranger = clientCert(strangerCA(), "someone");
    const r = await h1("/api/v1/namespaces", stranger, { authorization: `Bearer ${s.token}` });
    expect(r.status).toBe(200);
  });

  it("subject headers a client sends are dropped, over HTTP/1.1, HTTP/2 and plain HTTP", async () => {
    const forged = {
      "x-edgeplane-client-subject": encodeURIComponent("CN=kubernetes-admin,O=system:masters"),
      "x-edgeplane-front-secret": "guess",
      "x-edgeplane-client-cert-error": "",
    };
    // were they passed on, the Worker would refuse the wrong secret (401); dropped, the
    // request has no credential, which /version serves (as system:anonymous)
    const plain = await fetch(`${s.url}/version`, { headers: forged });
    expect(plain.status).toBe(200);
    for (const ask of [h1, h2]) {
      const r = await ask("/version", undefined, forged);
      expect(r.status).toBe(200);
    }
    // with a certificate of its own the client is what its certificate says, not what it wrote
    const jane = clientCert(ca, "jane", ["devs"]);
    for (const ask of [h1, h2]) {
      const r = await ask("/api/v1/namespaces", jane, forged);
      expect(r.status).toBe(403);
      expect(JSON.parse(r.body).message).toContain('User "jane" cannot list resource "namespaces"');
    }
  });
});

/** The admin's certificate and key, as kubeconfig-x509 holds them. */
function clusterAdmin(): Pem {
  return {
    cert: readFileSync(join(stateDir, "pki", "admin.crt"), "utf8"),
    key: readFileSync(join(stateDir, "pki", "admin.key"), "utf8"),
  };
}
