// Every credential kind through the real apiserver (workerd) and real kubectl: accepted
// ones act as their user (the 403 names it), wrong or expired ones are 401.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDevServer } from "../../local-engine/devserver";
import { api, hasKubectl, kubectl, type Target } from "../helpers/cluster";
import { removeStateDir, tempStateDir } from "../helpers/own-server";

const ISSUER = "https://idp.edgeplane.test";

interface Server extends Target {
  httpsUrl: string;
  caCert: string;
  stateDir: string;
  stop(): Promise<void>;
}

describe.skipIf(!hasKubectl)("authentication through kubectl", () => {
  let s: Server;
  let idpKey: CryptoKey;
  let ns: string;
  let n = 0;

  /** A kubeconfig holding only this credential, pointed at the server over TLS. */
  function as(user: Record<string, string>): Target {
    const path = join(s.stateDir, `kubeconfig-${++n}`);
    const cred = Object.entries(user)
      .map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`)
      .join("\n");
    writeFileSync(
      path,
      `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: ${s.httpsUrl}
    certificate-authority-data: ${Buffer.from(s.caCert).toString("base64")}
contexts:
- name: c
  context: {cluster: c, user: u, namespace: ${ns}}
current-context: c
users:
- name: u
  user:
${cred}
`,
      { mode: 0o600 },
    );
    return { url: s.url, token: "", kubeconfigPath: path };
  }

  /** Who the server takes this credential for: the user a 403 names, "401", or "ok". */
  async function whoIs(t: Target): Promise<string> {
    const r = await kubectl(t, ["get", "configmaps", "-n", ns]);
    if (r.code === 0) return "ok";
    if (/Unauthorized/.test(r.stderr)) return "401";
    const m = /User "([^"]*)" cannot list resource "configmaps"/.exec(r.stderr);
    return m ? m[1] : `unexpected: ${r.stderr}`;
  }

  async function idToken(claims: JWTPayload, expiresIn = 600) {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ iss: ISSUER, aud: "kubernetes", iat: now, exp: now + expiresIn, ...claims })
      .setProtectedHeader({ alg: "RS256", kid: "idp-1" })
      .sign(idpKey);
  }

  beforeAll(async () => {
    const kp = await generateKeyPair("RS256");
    idpKey = kp.privateKey;
    const jwks = { keys: [{ ...(await exportJWK(kp.publicKey)), kid: "idp-1", alg: "RS256", use: "sig" }] };
    s = await startDevServer({
      stateDir: tempStateDir("edgeplane-authn-"),
      quiet: true,
      tokens: ["bobtok,bob,b1,devs"],
      vars: {
        EDGEPLANE_TOKEN_CACHE_TTL_SECONDS: "0",
        EDGEPLANE_BASIC_AUTH_FILE: "carolpw,carol,c1,ops",
        EDGEPLANE_OIDC_ISSUER_URL: ISSUER,
        EDGEPLANE_OIDC_CLIENT_ID: "kubernetes",
        EDGEPLANE_OIDC_USERNAME_PREFIX: "oidc:",
        EDGEPLANE_OIDC_GROUPS_CLAIM: "groups",
        // base64: .dev.vars cannot carry the JSON's double quotes
        EDGEPLANE_OIDC_JWKS: Buffer.from(JSON.stringify(jwks)).toString("base64"),
      },
    });
    ns = `authn-${Math.random().toString(36).slice(2, 7)}`;
    const created = await api(s, "POST", "/api/v1/namespaces", {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: ns },
    });
    expect(created.status).toBe(201);
  });

  afterAll(async () => {
    await s?.stop();
    removeStateDir(s?.stateDir);
  });

  it("static tokens: the file's user; an unknown token is 401; no credentials is 401 but on health and version", async () => {
    expect(await whoIs(as({ token: "bobtok" }))).toBe("bob");
    expect(await whoIs(as({ token: "not-a-token" }))).toBe("401");
    for (const path of [
      `/api/v1/namespaces/${ns}/configmaps`,
      "/api",
      "/openapi/v2",
      "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    ]) {
      const anon = await fetch(`${s.url}${path}`, { method: path.endsWith("reviews") ? "POST" : "GET" });
      expect(anon.status, path).toBe(401);
      expect(await anon.json(), path).toMatchObject({ kind: "Status", code: 401, reason: "Unauthorized" });
    }
    // system:anonymous, where it is served: system:public-info-viewer's paths
    for (const path of ["/livez", "/readyz", "/healthz", "/version"])
      expect((await fetch(`${s.url}${path}`)).status, path).toBe(200);
    // (their checks are not system:unauthenticated's, as upstream)
    expect((await fetch(`${s.url}/livez/ping`)).status).toBe(401);
    // kubectl without credentials is told to log in, as upstream says it
    const none = await kubectl({ ...s, kubeconfigPath: "/dev/null" }, [
      `--server=${s.url}`,
      "--insecure-skip-tls-verify",
      "get",
      "configmaps",
      "-n",
      ns,
    ]);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain("You must be logged in to the server");
  });

  it("service account tokens from kubectl create token; invalid once the account is gone", async () => {
    const admin = { ...s, kubeconfigPath: s.kubeconfigPath };
    expect((await kubectl(admin, ["create", "serviceaccount", "robot", "-n", ns])).code).toBe(0);
    const created = await kubectl(admin, ["create", "token", "robot", "-n", ns, "--duration=15m"]);
    expect(created.stderr).toBe("");
    const token = created.stdout.trim();
    const payload = JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString());
    expect(payload.sub).toBe(`system:serviceaccount:${ns}:robot`);
    expect(payload.exp - payload.iat).toBe(900);
    const sa = as({ token });
    expect(await whoIs(sa)).toBe(`system:serviceaccount:${ns}:robot`);
    expect((await kubectl(sa, ["get", "--raw", "/api"])).code).toBe(0);

    const short = await kubectl(admin, ["create", "token", "robot", "-n", ns, "--duration=1m"]);
    expect(short.code).not.toBe(0);
    expect(short.stderr).toContain("may not specify a duration less than 10 minutes");
    const aud = (
      await kubectl(admin, ["create", "token", "robot", "-n", ns, "--audience=vault"])
    ).stdout.trim();
    expect(await whoIs(as({ token: aud }))).toBe("401");

    expect((await kubectl(admin, ["delete", "serviceaccount", "robot", "-n", ns])).code).toBe(0);
    expect(await whoIs(sa)).toBe("401");
    const gone = await kubectl(admin, ["create", "token", "robot", "-n", ns]);
    expect(gone.stderr).toContain('serviceaccounts "robot" not found');
  });

  it("OIDC id tokens: prefixed user and groups; expired, foreign or wrong-audience ones are 401", async () => {
    expect(await whoIs(as({ token: await idToken({ sub: "alice", groups: ["devs"] }) }))).toBe("oidc:alice");
    expect(await whoIs(as({ token: await idToken({ sub: "alice" }, -120) }))).toBe("401");
    expect(await whoIs(as({ token: await idToken({ sub: "alice", aud: "other" }) }))).toBe("401");
    const foreign = (await generateKeyPair("RS256")).privateKey;
    const forged = await new SignJWT({
      iss: ISSUER,
      aud: "kubernetes",
      sub: "alice",
      exp: Math.floor(Date.now() / 1000) + 600,
    })
      .setProtectedHeader({ alg: "RS256", kid: "idp-1" })
      .sign(foreign);
    expect(await whoIs(as({ token: forged }))).toBe("401");
  });

  it("basic auth from the password file; a wrong password is 401", async () => {
    expect(await whoIs(as({ username: "carol", password: "carolpw" }))).toBe("carol");
    expect(await whoIs(as({ username: "carol", password: "wrong" }))).toBe("401");
  });

  it("bootstrap tokens from kube-system Secrets; expired ones are 401", async () => {
    const put = async (id: string, expiration: string) => {
      const r = await api(s, "POST", "/api/v1/namespaces/kube-system/secrets", {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: `bootstrap-token-${id}` },
        type: "bootstrap.kubernetes.io/token",
        data: Object.fromEntries(
          Object.entries({
            "token-id": id,
            "token-secret": "0123456789abcdef",
            expiration,
            "usage-bootstrap-authentication": "true",
            "auth-extra-groups": "system:bootstrappers:nodes",
          }).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
        ),
      });
      expect(r.status).toBe(201);
      return `${id}.0123456789abcdef`;
    };
    const live = await put("abc123", new Date(Date.now() + 3600_000).toISOString());
    expect(await whoIs(as({ token: live }))).toBe("system:bootstrap:abc123");
    expect(await whoIs(as({ token: "abc123.0123456789abcdee" }))).toBe("401");
    const old = await put("old123", "2020-01-01T00:00:00Z");
    expect(await whoIs(as({ token: old }))).toBe("401");
  });

  it("impersonation: allowed for system:masters, 403 in upstream's words for others", async () => {
    const admin = { ...s, kubeconfigPath: s.kubeconfigPath };
    const r = await kubectl(admin, ["get", "configmaps", "-n", ns, "--as=dave", "--as-group=devs"]);
    expect(r.stderr).toContain('User "dave" cannot list resource "configmaps"');
    const bob = await kubectl(as({ token: "bobtok" }), ["get", "configmaps", "-n", ns, "--as=dave"]);
    expect(bob.stderr).toContain(
      'users "dave" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope',
    );
  });

  it("kubectl auth whoami (SelfSubjectReview) shows the caller, impersonated or not", async () => {
    const admin = { ...s, kubeconfigPath: s.kubeconfigPath };
    const me = await kubectl(admin, ["auth", "whoami", "-o", "json"]);
    expect(me.stderr).toBe("");
    expect(JSON.parse(me.stdout).status.userInfo).toMatchObject({
      username: "admin",
      groups: ["system:masters", "system:authenticated"],
    });
    const dave = await kubectl(admin, [
      "auth",
      "whoami",
      "-o",
      "json",
      "--as=dave",
      "--as-group=system:masters",
      "--as-uid=d-1",
    ]);
    expect(dave.stderr).toBe("");
    expect(JSON.parse(dave.stdout).status.userInfo).toEqual({
      username: "dave",
      uid: "d-1",
      groups: ["system:masters", "system:authenticated"],
    });
  });

  it("TokenReview tells what a service account token stands for", async () => {
    const admin = { ...s, kubeconfigPath: s.kubeconfigPath };
    expect((await kubectl(admin, ["create", "serviceaccount", "reviewed", "-n", ns])).code).toBe(0);
    const token = (await kubectl(admin, ["create", "token", "reviewed", "-n", ns])).stdout.trim();
    const r = await api(s, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenReview",
      spec: { token },
    });
    expect(r.status).toBe(201);
    expect(r.json.status).toMatchObject({
      authenticated: true,
      user: { username: `system:serviceaccount:${ns}:reviewed` },
    });
  });

  it("serves the service account issuer's discovery document and keys", async () => {
    const conf = await api(s, "GET", "/.well-known/openid-configuration");
    expect(conf.status).toBe(200);
    expect(conf.json).toMatchObject({
      issuer: "https://kubernetes.default.svc.cluster.local",
      response_types_supported: ["id_token"],
    });
    const jwks = await api(s, "GET", "/openid/v1/jwks");
    expect(jwks.status).toBe(200);
    expect(jwks.json.keys[0]).toMatchObject({ use: "sig", alg: "ES256" });
    expect(jwks.json.keys[0].d).toBeUndefined();
  });

  it("lets service accounts read the issuer discovery over kubectl, jwks_uri on the https address", async () => {
    const admin = { ...s, kubeconfigPath: s.kubeconfigPath };
    expect((await kubectl(admin, ["create", "serviceaccount", "discoverer", "-n", ns])).code).toBe(0);
    const token = (await kubectl(admin, ["create", "token", "discoverer", "-n", ns])).stdout.trim();
    const sa = as({ token });
    const conf = await kubectl(sa, ["get", "--raw", "/.well-known/openid-configuration"]);
    expect(conf.stderr).toBe("");
    expect(JSON.parse(conf.stdout).jwks_uri).toBe(`${s.httpsUrl}/openid/v1/jwks`);
    const jwks = await kubectl(sa, ["get", "--raw", "/openid/v1/jwks"]);
    expect(jwks.stderr).toBe("");
    expect(JSON.parse(jwks.stdout).keys[0].kty).toBe("EC");
    // as a user would check it, impersonating an account (its groups come with it)
    const as1 = await kubectl(admin, [
      "get",
      "--raw",
      "/.well-known/openid-configuration",
      `--as=system:serviceaccount:${ns}:discoverer`,
    ]);
    expect(as1.stderr).toBe("");
    // a plain user is not a service account: no such grant
    const bob = await kubectl(as({ token: "bobtok" }), ["get", "--raw", "/openid/v1/jwks"]);
    expect(bob.stderr).toContain("Forbidden");
  });
});
