// Client certificates in clusters other than the root (docs/clusters.md): each cluster has its
// own client CA. `edgeplane cluster create` writes kubeconfig-x509, an admin certificate of
// that CA, that real kubectl uses over real TLS; a CSR approved in a cluster is signed by
// that cluster's CA and is a credential there only. A cluster admin therefore still cannot
// become anyone in the root (the escalation the root's CA key in every cluster allowed: an
// approved request for system:kube-controller-manager or a node, used in the root), nor in
// another cluster; and a certificate the root signed is no credential in a cluster.
import { execFile } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CriClient } from "../../agent/cri/client";
import { bootstrapTokenSecret } from "../../api/bootstrap-token";
import { kubeconfig } from "../../local-engine/devserver";
import { certificateRequest, clusterCA, hasOpenssl } from "../helpers/client-certs";
import { api, hasKubectl, kubectl, shared, type Target, until } from "../helpers/cluster";
import {
  EdgeletProcess,
  available as nodesAvailable,
  removeNodeSandboxes,
  SOCKET,
  tempRoot,
} from "./edgelet/harness";

const run = promisify(execFile);
const CLI = join(import.meta.dirname, "..", "..", "cli/bin/edgeplane.mjs");
const root = shared();
const httpsUrl = root.url.replace("http://", "https://");
const CLUSTERS = "/apis/tenancy.edgeplane.dev/v1alpha1/clusters";
const CSR = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
const suffix = Math.random().toString(36).slice(2, 7);
const A = `certs-a-${suffix}`;
const B = `certs-b-${suffix}`;
const b64 = (s: string) => Buffer.from(s).toString("base64");
const state = mkdtempSync(join(tmpdir(), "edgeplane-cluster-certs-"));

/** `edgeplane cluster create <name>` as a user runs it, with the root's admin kubeconfig. */
async function createCluster(name: string): Promise<Target> {
  const { stdout } = await run(
    process.execPath,
    [CLI, "cluster", "create", name, "--kubeconfig", root.kubeconfigPath],
    {
      env: { ...process.env, EDGEPLANE_STATE_DIR: state },
    },
  );
  const kubeconfigPath = stdout.trim();
  const token = /token: (\S+)/.exec(readFileSync(kubeconfigPath, "utf8"))![1];
  return { url: `${root.url}/clusters/${name}`, token, kubeconfigPath };
}

/** A kubeconfig with `cert`/`key` for the server at `path` ("" for the root) of the shared control plane. */
function certConfig(file: string, path: string, cert: string, key: string): Target {
  const kubeconfigPath = join(state, file);
  writeFileSync(
    kubeconfigPath,
    kubeconfig(`${httpsUrl}${path}`, { cert, key }, clusterCA(dirname(root.kubeconfigPath)).cert),
  );
  return { ...root, kubeconfigPath };
}

async function whoami(t: Target) {
  return kubectl(t, [
    "auth",
    "whoami",
    "-o",
    "jsonpath={.status.userInfo.username} {.status.userInfo.groups}",
  ]);
}

async function expectUnauthorized(t: Target) {
  const r = await whoami(t);
  expect(r.code, r.stdout).not.toBe(0);
  expect(r.stderr).toMatch(/Unauthorized|must be logged in/);
}

describe.skipIf(!hasOpenssl || !hasKubectl)("client certificates of clusters other than the root", () => {
  let a: Target;
  let b: Target;

  beforeAll(async () => {
    [a, b] = await Promise.all([createCluster(A), createCluster(B)]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([api(root, "DELETE", `${CLUSTERS}/${A}`), api(root, "DELETE", `${CLUSTERS}/${B}`)]);
    rmSync(state, { recursive: true, force: true });
  });

  /** A CSR made by `t`'s admin and approved with `kubectl certificate approve`; its certificate. */
  async function signedIn(t: Target, cn: string, groups: string[], signerName: string) {
    const name = `csr-${Math.random().toString(36).slice(2, 7)}`;
    const usages =
      signerName === "kubernetes.io/kube-apiserver-client"
        ? ["client auth"]
        : ["digital signature", "client auth"];
    const { csr, key } = certificateRequest(cn, groups);
    const made = await api(t, "POST", CSR, {
      apiVersion: "certificates.k8s.io/v1",
      kind: "CertificateSigningRequest",
      metadata: { name },
      spec: { request: b64(csr), signerName, usages },
    });
    expect(made.status, made.text).toBe(201);
    const approved = await kubectl(t, ["certificate", "approve", name]);
    expect(approved.code, approved.stderr).toBe(0);
    const issued = await until(
      `the certificate of ${name}`,
      async () => (await api(t, "GET", `${CSR}/${name}`)).json?.status?.certificate as string | undefined,
      20_000,
    );
    return { cert: Buffer.from(issued, "base64").toString(), key };
  }

  it("kubectl works with a cluster's kubeconfig-x509, whose certificate is nobody in another cluster or the root", {
    timeout: 60_000,
  }, async () => {
    const x509 = { ...a, kubeconfigPath: join(state, "clusters", A, "kubeconfig-x509") };
    const me = await whoami(x509);
    expect(me.code, me.stderr).toBe(0);
    expect(me.stdout).toMatch(/^kubernetes-admin \[.*"system:masters".*\]$/);
    const ns = await kubectl(x509, ["get", "ns", "kube-system", "-o", "name"]);
    expect(ns.stdout.trim(), ns.stderr).toBe("namespace/kube-system");
    // a watch too (the front door's watch relay carries it)
    // (--raw takes the path from the host: the cluster's prefix included)
    const watch = await kubectl(x509, [
      "get",
      "--raw",
      `/clusters/${A}/api/v1/namespaces?watch=1&timeoutSeconds=1`,
    ]);
    expect(watch.code, watch.stderr).toBe(0);
    expect(watch.stdout).toContain('"name":"kube-system"');
    // the certificate's issuer is the cluster's own CA, not the root's (the kubeconfig's CA
    // bundle is still the serving CA's)
    const config = readFileSync(x509.kubeconfigPath, "utf8");
    const cert = Buffer.from(/client-certificate-data: (\S+)/.exec(config)![1], "base64").toString();
    const key = Buffer.from(/client-key-data: (\S+)/.exec(config)![1], "base64").toString();
    const rootCA = new X509Certificate(clusterCA(dirname(root.kubeconfigPath)).cert);
    expect(new X509Certificate(cert).checkIssued(rootCA)).toBe(false);
    expect(config).toContain(
      `certificate-authority-data: ${b64(clusterCA(dirname(root.kubeconfigPath)).cert)}`,
    );
    // and the cluster's kube-root-ca.crt is still the serving CA, not its client CA
    const published = await until("kube-root-ca.crt in a", async () => {
      const r = await api(a, "GET", "/api/v1/namespaces/default/configmaps/kube-root-ca.crt");
      return r.status === 200 ? (r.json.data["ca.crt"] as string) : undefined;
    });
    expect(published.trim()).toBe(clusterCA(dirname(root.kubeconfigPath)).cert.trim());
    await expectUnauthorized(certConfig("a-admin-in-b", `/clusters/${B}`, cert, key));
    await expectUnauthorized(certConfig("a-admin-in-root", "", cert, key));
    // b's own works in b, and not in a
    const bConfig = readFileSync(join(state, "clusters", B, "kubeconfig-x509"), "utf8");
    const bCert = Buffer.from(/client-certificate-data: (\S+)/.exec(bConfig)![1], "base64").toString();
    const bKey = Buffer.from(/client-key-data: (\S+)/.exec(bConfig)![1], "base64").toString();
    expect((await whoami({ ...b, kubeconfigPath: join(state, "clusters", B, "kubeconfig-x509") })).code).toBe(
      0,
    );
    await expectUnauthorized(certConfig("b-admin-in-a", `/clusters/${A}`, bCert, bKey));
    // the front door's headers cannot be sent by a client: a's certificate in a header is nobody
    const forged = await fetch(`${root.url}/clusters/${A}/api/v1/namespaces`, {
      headers: { "x-edgeplane-client-cert": b64(cert), "x-edgeplane-front-secret": "guess" },
    });
    expect(forged.status).toBe(401);
  });

  it("a CSR approved in a cluster is signed by its CA: a credential there, 401 in another cluster and the root", {
    timeout: 60_000,
  }, async () => {
    const { cert, key } = await signedIn(
      a,
      `jane-${suffix}`,
      ["devs"],
      "kubernetes.io/kube-apiserver-client",
    );
    const inA = await whoami(certConfig("jane-a", `/clusters/${A}`, cert, key));
    expect(inA.code, inA.stderr).toBe(0);
    expect(inA.stdout).toMatch(new RegExp(`^jane-${suffix} \\[.*"devs".*\\]$`));
    await expectUnauthorized(certConfig("jane-b", `/clusters/${B}`, cert, key));
    await expectUnauthorized(certConfig("jane-root", "", cert, key));
  });

  for (const [what, cn, groups, signer] of [
    [
      "a controller manager's identity",
      "system:kube-controller-manager",
      [],
      "kubernetes.io/kube-apiserver-client",
    ],
    [
      "a node's identity",
      "system:node:stolen",
      ["system:nodes"],
      "kubernetes.io/kube-apiserver-client-kubelet",
    ],
  ] as const) {
    it(`an approved request for ${what} is signed by the cluster's CA and is nobody in the root`, {
      timeout: 60_000,
    }, async () => {
      const { cert, key } = await signedIn(a, cn, [...groups], signer);
      const rootCA = new X509Certificate(clusterCA(dirname(root.kubeconfigPath)).cert);
      expect(new X509Certificate(cert).checkIssued(rootCA)).toBe(false);
      await expectUnauthorized(certConfig(`${cn.replace(/:/g, "-")}-root`, "", cert, key));
      await expectUnauthorized(certConfig(`${cn.replace(/:/g, "-")}-b`, `/clusters/${B}`, cert, key));
    });
  }

  it("a certificate the root signed is no credential in a cluster", { timeout: 30_000 }, async () => {
    const { cert, key } = await signedIn(
      root,
      `root-user-${suffix}`,
      ["team"],
      "kubernetes.io/kube-apiserver-client",
    );
    const inRoot = await whoami(certConfig("root-user", "", cert, key));
    expect(inRoot.stdout).toMatch(new RegExp(`^root-user-${suffix} `));
    await expectUnauthorized(certConfig("root-user-a", `/clusters/${A}`, cert, key));
  });

  it.skipIf(!nodesAvailable)(
    "a node joins a cluster with a client certificate of the cluster's CA (TLS bootstrap)",
    {
      timeout: 90_000,
    },
    async () => {
      const id = Math.random().toString(36).slice(2, 8).padEnd(6, "0");
      const secret = await api(
        a,
        "POST",
        "/api/v1/namespaces/kube-system/secrets",
        bootstrapTokenSecret(id, "0123456789abcdef"),
      );
      expect(secret.status, secret.text).toBe(201);
      const caFile = join(state, "serving-ca.crt");
      writeFileSync(caFile, clusterCA(dirname(root.kubeconfigPath)).cert);
      const node = `certnode-${suffix}`;
      const nodeRoot = tempRoot();
      const edgelet = new EdgeletProcess(
        { ...a, url: `${httpsUrl}/clusters/${A}`, token: `${id}.0123456789abcdef` },
        node,
        nodeRoot,
        ["--ca", caFile, "--client-certificate"],
      );
      edgelet.start();
      const cri = new CriClient({ endpoint: `unix://${SOCKET}` });
      try {
        await until(
          `node ${node} Ready in ${A}`,
          async () => {
            if (edgelet.child?.exitCode != null) throw new Error(`edgelet exited: ${edgelet.output}`);
            const r = await api(a, "GET", `/api/v1/nodes/${node}`);
            return (
              r.json?.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True") ||
              undefined
            );
          },
          60_000,
        ).catch((e) => {
          throw new Error(`${(e as Error).message}; the agent said: ${edgelet.output.slice(-3000)}`);
        });
        expect(edgelet.output).toMatch(/certificate-signing-request/);
        // its certificate: issued in a by a's CA, for the node, and nobody in the root
        const csrs = (await api(a, "GET", CSR)).json.items as any[];
        const mine = csrs.find(
          (c) => c.spec.username?.startsWith("system:bootstrap:") && c.status?.certificate,
        );
        expect(mine, JSON.stringify(csrs.map((c) => c.metadata.name))).toBeDefined();
        const cert = Buffer.from(mine.status.certificate, "base64").toString();
        expect(new X509Certificate(cert).subject).toContain(`CN=system:node:${node}`);
        const rootCA = new X509Certificate(clusterCA(dirname(root.kubeconfigPath)).cert);
        expect(new X509Certificate(cert).checkIssued(rootCA)).toBe(false);
      } finally {
        await edgelet.stop();
        await removeNodeSandboxes(cri, node);
        cri.close();
        rmSync(nodeRoot, { recursive: true, force: true });
      }
    },
  );

  it("answers a bad certificate request with 422 and an unknown cluster with 404", async () => {
    const post = (name: string, spec: unknown) =>
      api(root, "POST", `${CLUSTERS}/${name}/certificate`, {
        apiVersion: "certificates.k8s.io/v1",
        kind: "CertificateSigningRequest",
        spec,
      });
    for (const spec of [
      { request: "junk" },
      {},
      { request: b64(certificateRequest("x").csr), expirationSeconds: 5 },
    ]) {
      const r = await post(A, spec);
      expect(r.status, r.text).toBe(422);
      expect(r.json).toMatchObject({ kind: "Status", reason: "Invalid", code: 422 });
    }
    const missing = await post(`nosuch-${suffix}`, { request: b64(certificateRequest("x").csr) });
    expect(missing.status, missing.text).toBe(404);
    expect(missing.json.reason).toBe("NotFound");
  });
});
