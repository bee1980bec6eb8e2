// CertificateSigningRequests signed end to end, with real kubectl and the local front door: a
// user makes a key with openssl and submits a CSR (`kubectl create -f`), an admin runs
// `kubectl certificate approve`, the controller signs it with the cluster CA, the user builds a
// kubeconfig from status.certificate and is that user to RBAC. Bad input gets upstream's
// answers: 422 for a malformed request or signer name, 403 for system:masters from the
// kube-apiserver-client signer and for approving or signing without the signer verbs; a usage
// the signer does not allow is marked Failed and never signed; a denied request is never signed.
import { X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapTokenSecret, randomBootstrapToken } from "../../api/bootstrap-token";
import { kubeconfig } from "../../local-engine/devserver";
import { certificateRequest, clusterCA, hasOpenssl } from "../helpers/client-certs";
import { api, hasKubectl, kubectl, shared, until } from "../helpers/cluster";

const t = shared();
const httpsUrl = t.url.replace("http://", "https://");
const CSR = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
const RBAC = "/apis/rbac.authorization.k8s.io/v1";
const uniq = () => Math.random().toString(36).slice(2, 7);
const b64 = (s: string) => Buffer.from(s).toString("base64");
let dir: string;
const cleanup: string[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "edgeplane-csr-"));
});
afterAll(async () => {
  for (const path of cleanup) await api(t, "DELETE", path);
  rmSync(dir, { recursive: true, force: true });
});

function csrObject(name: string, request: string, spec: Record<string, unknown> = {}) {
  return {
    apiVersion: "certificates.k8s.io/v1",
    kind: "CertificateSigningRequest",
    metadata: { name },
    spec: {
      request: b64(request),
      signerName: "kubernetes.io/kube-apiserver-client",
      usages: ["client auth"],
      ...spec,
    },
  };
}

async function create(obj: object, as?: string) {
  const r = await kubectl(t, ["create", "-f", "-", ...(as ? [`--as=${as}`] : [])], {
    input: JSON.stringify(obj),
  });
  const name = (obj as { metadata: { name: string } }).metadata.name;
  cleanup.push(`${CSR}/${name}`);
  return r;
}

const get = async (name: string) => (await api(t, "GET", `${CSR}/${name}`)).json;
const issued = (name: string) =>
  until(
    `certificate of ${name}`,
    async () => (await get(name))?.status?.certificate as string | undefined,
    20000,
  );

/** A new bootstrap token (removed after the suite), as a target for api(). */
async function bootstrapTarget() {
  const { id, secret, token } = randomBootstrapToken();
  const put = await api(
    t,
    "POST",
    "/api/v1/namespaces/kube-system/secrets",
    bootstrapTokenSecret(id, secret),
  );
  expect(put.status, put.text).toBe(201);
  cleanup.push(`/api/v1/namespaces/kube-system/secrets/bootstrap-token-${id}`);
  return { ...t, token };
}

/** A role and binding of `rules` for `user`, removed after the suite. */
async function grant(user: string, rules: object[]) {
  const name = `csr-test-${uniq()}`;
  const role = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name }, rules };
  const binding = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }],
  };
  expect((await api(t, "POST", `${RBAC}/clusterroles`, role)).status).toBe(201);
  expect((await api(t, "POST", `${RBAC}/clusterrolebindings`, binding)).status).toBe(201);
  cleanup.push(`${RBAC}/clusterrolebindings/${name}`, `${RBAC}/clusterroles/${name}`);
}

describe.skipIf(!hasKubectl || !hasOpenssl)("CSR signing (kubernetes.io signers)", () => {
  it("a user's CSR, approved by an admin, becomes a kubeconfig that RBAC knows by the user's name", async () => {
    const user = `csr-user-${uniq()}`;
    const { csr, key } = certificateRequest(user, ["csr-testers"]);
    const name = `${user}-req`;
    // (making CSRs is not every user's: upstream grants it to bootstrappers and nodes)
    await grant(user, [
      {
        apiGroups: ["certificates.k8s.io"],
        resources: ["certificatesigningrequests"],
        verbs: ["create", "get"],
      },
    ]);
    const made = await create(csrObject(name, csr, { expirationSeconds: 3600 }), user);
    expect(made.code, made.stderr).toBe(0);
    expect((await get(name)).spec.username).toBe(user);
    // pending until approved
    await new Promise((r) => setTimeout(r, 1000));
    expect((await get(name)).status?.certificate).toBeUndefined();
    const approved = await kubectl(t, ["certificate", "approve", name]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain(`certificatesigningrequest.certificates.k8s.io/${name} approved`);
    const cert = Buffer.from(await issued(name), "base64").toString();
    const x = new X509Certificate(cert);
    expect(x.subject).toContain(`CN=${user}`);
    expect(x.checkIssued(new X509Certificate(clusterCA(dirname(t.kubeconfigPath)).cert))).toBe(true);
    // bounded by expirationSeconds (an hour), backdated five minutes
    const life = Date.parse(x.validTo) - Date.parse(x.validFrom);
    expect(Math.abs(life - 3900_000)).toBeLessThan(2000);
    const listed = await kubectl(t, ["get", "csr", name]);
    expect(listed.stdout).toMatch(/Approved,Issued/);

    const config = join(dir, `${user}.kubeconfig`);
    writeFileSync(config, kubeconfig(httpsUrl, { cert, key }, clusterCA(dirname(t.kubeconfigPath)).cert));
    const as = { kubeconfigPath: config, url: t.url, token: "" };
    const who = await kubectl(as, ["auth", "whoami", "-o", "json"]);
    expect(who.code, who.stderr).toBe(0);
    expect(JSON.parse(who.stdout).status.userInfo).toEqual({
      username: user,
      groups: ["csr-testers", "system:authenticated"],
    });
    expect((await kubectl(as, ["get", "ns"])).stderr).toContain(
      `User "${user}" cannot list resource "namespaces"`,
    );
    await grant(user, [{ apiGroups: [""], resources: ["namespaces"], verbs: ["list"] }]);
    const after = await kubectl(as, ["get", "ns", "-o", "name"]);
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout).toContain("namespace/default");
  });

  it("a node client CSR from a bootstrap token is approved at once (csrapproving) and signed", async () => {
    const bootstrap = await bootstrapTarget();
    const node = `system:node:csr-node-${uniq()}`;
    const { csr, key } = certificateRequest(node, ["system:nodes"]);
    const name = `node-csr-${uniq()}`;
    cleanup.push(`${CSR}/${name}`);
    const made = await api(
      bootstrap,
      "POST",
      CSR,
      csrObject(name, csr, {
        signerName: "kubernetes.io/kube-apiserver-client-kubelet",
        usages: ["digital signature", "client auth"],
      }),
    );
    expect(made.status, made.text).toBe(201);
    const cert = Buffer.from(await issued(name), "base64").toString();
    expect((await get(name)).status.conditions[0]).toMatchObject({
      type: "Approved",
      reason: "AutoApproved",
    });
    const config = join(dir, "node.kubeconfig");
    writeFileSync(config, kubeconfig(httpsUrl, { cert, key }, clusterCA(dirname(t.kubeconfigPath)).cert));
    const who = await kubectl({ ...t, kubeconfigPath: config }, ["auth", "whoami", "-o", "json"]);
    expect(JSON.parse(who.stdout).status.userInfo).toEqual({
      username: node,
      groups: ["system:nodes", "system:authenticated"],
    });
    // the same request from a user who may create CSRs but is no bootstrapper waits for a person
    const other = `not-a-node-${uniq()}`;
    await grant(other, [
      { apiGroups: ["certificates.k8s.io"], resources: ["certificatesigningrequests"], verbs: ["create"] },
    ]);
    const pendingName = `node-csr-${uniq()}`;
    const second = csrObject(pendingName, certificateRequest(node, ["system:nodes"]).csr, {
      signerName: "kubernetes.io/kube-apiserver-client-kubelet",
      usages: ["digital signature", "client auth"],
    });
    expect((await create(second, other)).code).toBe(0);
    await new Promise((r) => setTimeout(r, 2000));
    expect((await get(pendingName)).status?.conditions).toBeUndefined();
  });

  it("a node's certificate is its agent's: revoked once another agent joins as the node, or its Node is deleted", async () => {
    const bootstrap = await bootstrapTarget();
    const nodeName = `cert-revoke-${uniq()}`;
    /** a join: a CSR for the node from the bootstrap token, auto-approved; a kubectl target with its certificate */
    const joinAsNode = async () => {
      const { csr, key } = certificateRequest(`system:node:${nodeName}`, ["system:nodes"]);
      const name = `node-csr-${uniq()}`;
      cleanup.push(`${CSR}/${name}`);
      const spec = {
        signerName: "kubernetes.io/kube-apiserver-client-kubelet",
        usages: ["digital signature", "client auth"],
      };
      const made = await api(bootstrap, "POST", CSR, csrObject(name, csr, spec));
      expect(made.status, made.text).toBe(201);
      const cert = Buffer.from(await issued(name), "base64").toString();
      const config = join(dir, `${name}.kubeconfig`);
      writeFileSync(config, kubeconfig(httpsUrl, { cert, key }, clusterCA(dirname(t.kubeconfigPath)).cert));
      return { ...t, kubeconfigPath: config };
    };
    const node = { apiVersion: "v1", kind: "Node", metadata: { name: nodeName } };
    const register = (as: typeof t) =>
      kubectl(as, ["create", "--validate=false", "-f", "-"], { input: JSON.stringify(node) });
    const getOwn = (as: typeof t) => kubectl(as, ["get", "node", nodeName, "-o", "name"]);
    const UNAUTHORIZED = /You must be logged in to the server/;
    cleanup.push(`/api/v1/nodes/${nodeName}`);

    const first = await joinAsNode();
    expect((await register(first)).code).toBe(0);
    expect((await getOwn(first)).stdout).toContain(`node/${nodeName}`);
    // (certificates begin on whole seconds: the next join's must begin later)
    await new Promise((r) => setTimeout(r, 1100));
    const second = await joinAsNode();
    expect((await getOwn(second)).stdout).toContain(`node/${nodeName}`);
    const replaced = await getOwn(first);
    expect(replaced.code).not.toBe(0);
    expect(replaced.stderr).toMatch(UNAUTHORIZED);

    expect((await api(t, "DELETE", `/api/v1/nodes/${nodeName}`)).status).toBe(200);
    const deleted = await getOwn(second);
    expect(deleted.stderr).toMatch(UNAUTHORIZED);
    // nor can it bring its Node back
    expect((await register(second)).stderr).toMatch(UNAUTHORIZED);
    expect((await api(t, "GET", `/api/v1/nodes/${nodeName}`)).status).toBe(404);

    // a new join takes the name again
    await new Promise((r) => setTimeout(r, 1100));
    const third = await joinAsNode();
    const again = await register(third);
    expect(again.code, again.stderr).toBe(0);
    expect((await getOwn(third)).stdout).toContain(`node/${nodeName}`);
  });

  it("a denied request is never signed, and cannot be approved after", async () => {
    const name = `denied-${uniq()}`;
    expect((await create(csrObject(name, certificateRequest("someone").csr))).code).toBe(0);
    const denied = await kubectl(t, ["certificate", "deny", name]);
    expect(denied.code, denied.stderr).toBe(0);
    // kubectl itself refuses; the server refuses as well
    const again = await kubectl(t, ["certificate", "approve", name, "--force"]);
    expect(again.code).not.toBe(0);
    const current = await get(name);
    current.status.conditions.push({ type: "Approved", status: "True", reason: "KubectlApprove" });
    const put = await api(t, "PUT", `${CSR}/${name}/approval`, current);
    expect(put.status).toBe(422);
    expect(put.text).toContain("Approved and Denied conditions are mutually exclusive");
    await new Promise((r) => setTimeout(r, 2000));
    const now = await get(name);
    expect(now.status.certificate).toBeUndefined();
    expect(now.status.conditions.map((c: { type: string }) => c.type)).toEqual(["Denied"]);
  });

  it("a usage the signer does not allow is marked Failed, never signed", async () => {
    const name = `server-usage-${uniq()}`;
    const req = csrObject(name, certificateRequest("web").csr, {
      usages: ["server auth", "digital signature"],
    });
    expect((await create(req)).code).toBe(0);
    expect((await kubectl(t, ["certificate", "approve", name])).code).toBe(0);
    const failed = await until(`${name} failed`, async () =>
      (await get(name)).status?.conditions?.find((c: { type: string }) => c.type === "Failed"),
    );
    expect(failed).toMatchObject({
      status: "True",
      reason: "SignerValidationFailure",
      message: "invalid usage for client certificate: server auth",
    });
    expect((await get(name)).status.certificate).toBeUndefined();
  });

  it("bad input: malformed PEM and a bad signer name are 422, system:masters from kube-apiserver-client is 403", async () => {
    const bad = await api(
      t,
      "POST",
      CSR,
      csrObject(`bad-pem-${uniq()}`, "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n"),
    );
    expect(bad.status).toBe(422);
    expect(bad.text).toContain("spec.request");
    const signer = await api(
      t,
      "POST",
      CSR,
      csrObject(`bad-signer-${uniq()}`, certificateRequest("x").csr, { signerName: "nodomain" }),
    );
    expect(signer.status).toBe(422);
    expect(signer.text).toContain("spec.signerName");
    const masters = await api(
      t,
      "POST",
      CSR,
      csrObject(`masters-${uniq()}`, certificateRequest("mallory", ["system:masters"]).csr),
    );
    expect(masters.status, masters.text).toBe(403);
    expect(masters.json.message).toContain(
      "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed",
    );
  });

  it("approving needs `approve` on the signer, and setting a certificate needs `sign`", async () => {
    const user = `approver-${uniq()}`;
    const name = `needs-approver-${uniq()}`;
    expect((await create(csrObject(name, certificateRequest("bob").csr))).code).toBe(0);
    const none = await kubectl(t, ["certificate", "approve", name, `--as=${user}`]);
    expect(none.stderr).toMatch(/forbidden/);
    await grant(user, [
      {
        apiGroups: ["certificates.k8s.io"],
        resources: ["certificatesigningrequests"],
        verbs: ["get", "list"],
      },
      {
        apiGroups: ["certificates.k8s.io"],
        resources: ["certificatesigningrequests/approval", "certificatesigningrequests/status"],
        verbs: ["update"],
      },
    ]);
    const noVerb = await kubectl(t, ["certificate", "approve", name, `--as=${user}`]);
    expect(noVerb.code).not.toBe(0);
    expect(noVerb.stderr).toContain(
      'user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client"',
    );
    // a certificate through status, without `sign`
    const current = await get(name);
    current.status = { certificate: b64(Buffer.from(clusterCA(dirname(t.kubeconfigPath)).cert).toString()) };
    const signed = await kubectl(t, ["replace", "--subresource=status", "-f", "-", `--as=${user}`], {
      input: JSON.stringify(current),
    });
    expect(signed.code).not.toBe(0);
    expect(signed.stderr).toContain(
      'user not permitted to sign requests with signerName "kubernetes.io/kube-apiserver-client"',
    );
    // with `approve` on the signer's domain, the approval goes through
    await grant(user, [
      {
        apiGroups: ["certificates.k8s.io"],
        resources: ["signers"],
        resourceNames: ["kubernetes.io/*"],
        verbs: ["approve"],
      },
    ]);
    const ok = await kubectl(t, ["certificate", "approve", name, `--as=${user}`]);
    expect(ok.code, ok.stderr).toBe(0);
    await issued(name);
  });
});
