// A cluster other than the root never signs with the root's CA (docs/clusters.md): its admin
// may approve any CertificateSigningRequest of its own cluster, so a signer there holding the
// root's CA key would hand out certificates the root's front door trusts (a kube-controller-
// manager's or a node's identity in the root). Such a request stays approved and unsigned, as
// upstream leaves a request no signer serves; and a certificate the root signed for a user is
// no credential in another cluster.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubeconfig } from "../../local-engine/devserver";
import { certificateRequest, clusterCA, hasOpenssl } from "../helpers/client-certs";
import { api, hasKubectl, kubectl, shared, type Target, until } from "../helpers/cluster";

const root = shared();
const httpsUrl = root.url.replace("http://", "https://");
const CLUSTERS = "/apis/tenancy.edgeplane.dev/v1alpha1/clusters";
const CSR = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
const NAME = `certs-${Math.random().toString(36).slice(2, 7)}`;
const b64 = (s: string) => Buffer.from(s).toString("base64");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!hasOpenssl || !hasKubectl)("certificates in a cluster other than the root", () => {
  let child: Target;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "edgeplane-cluster-certs-"));
    const made = await api(root, "POST", CLUSTERS, {
      apiVersion: "tenancy.edgeplane.dev/v1alpha1",
      kind: "Cluster",
      metadata: { name: NAME },
    });
    expect(made.status, made.text).toBe(201);
    const tr = await api(root, "POST", `${CLUSTERS}/${NAME}/token`, {});
    expect(tr.status, tr.text).toBe(201);
    child = { url: `${root.url}/clusters/${NAME}`, token: tr.json.status.token, kubeconfigPath: "" };
  });

  afterAll(async () => {
    await api(root, "DELETE", `${CLUSTERS}/${NAME}`);
    rmSync(dir, { recursive: true, force: true });
  });

  /** A CSR made and approved by the child's admin; its status a few seconds later. */
  async function approvedInChild(name: string, cn: string, groups: string[], signerName: string) {
    const usages =
      signerName === "kubernetes.io/kube-apiserver-client"
        ? ["client auth"]
        : ["digital signature", "client auth"];
    const { csr, key } = certificateRequest(cn, groups);
    const made = await api(child, "POST", CSR, {
      apiVersion: "certificates.k8s.io/v1",
      kind: "CertificateSigningRequest",
      metadata: { name },
      spec: { request: b64(csr), signerName, usages },
    });
    expect(made.status, made.text).toBe(201);
    // (a node's request from its admin may be approved on its own already: then as it is)
    for (let attempt = 0; attempt < 5; attempt++) {
      const obj = (await api(child, "GET", `${CSR}/${name}`)).json;
      if (obj.status?.conditions?.some((c: any) => c.type === "Approved")) break;
      obj.status = {
        conditions: [
          { type: "Approved", status: "True", reason: "Test", message: "approved by the child's admin" },
        ],
      };
      const approved = await api(child, "PUT", `${CSR}/${name}/approval`, obj);
      if (approved.status === 200) break;
      expect(approved.status, approved.text).toBe(409);
    }
    // the root's signers answer within a second (test/e2e/csr-signing.test.ts); give them five
    await sleep(5000);
    return { status: (await api(child, "GET", `${CSR}/${name}`)).json.status, key };
  }

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
    it(`an approved request for ${what} is not signed with the root's CA`, { timeout: 30_000 }, async () => {
      const name = `csr-${Math.random().toString(36).slice(2, 7)}`;
      const { status, key } = await approvedInChild(name, cn, [...groups], signer);
      expect(status.conditions.map((c: any) => c.type)).toContain("Approved");
      if (status.certificate) {
        // what the old code did: show what the certificate would have been worth in the root
        const config = join(dir, `${name}.kubeconfig`);
        const cert = Buffer.from(status.certificate, "base64").toString();
        writeFileSync(
          config,
          kubeconfig(httpsUrl, { cert, key }, clusterCA(dirname(root.kubeconfigPath)).cert),
        );
        const who = await kubectl({ ...root, kubeconfigPath: config }, ["auth", "whoami", "-o", "json"]);
        expect.fail(`signed in cluster ${NAME}; in the root it is: ${who.stdout || who.stderr}`);
      }
      expect(status.certificate).toBeUndefined();
    });
  }

  it("a certificate the root signed is no credential in the child", { timeout: 30_000 }, async () => {
    const name = `root-csr-${Math.random().toString(36).slice(2, 7)}`;
    const { csr, key } = certificateRequest(`root-user-${NAME}`, ["team"]);
    const made = await api(root, "POST", CSR, {
      apiVersion: "certificates.k8s.io/v1",
      kind: "CertificateSigningRequest",
      metadata: { name },
      spec: { request: b64(csr), signerName: "kubernetes.io/kube-apiserver-client", usages: ["client auth"] },
    });
    expect(made.status, made.text).toBe(201);
    try {
      const approve = await kubectl(root, ["certificate", "approve", name]);
      expect(approve.code, approve.stderr).toBe(0);
      const issued = await until(
        `certificate of ${name}`,
        async () =>
          (await api(root, "GET", `${CSR}/${name}`)).json?.status?.certificate as string | undefined,
        20_000,
      );
      const cert = Buffer.from(issued, "base64").toString();
      const ca = clusterCA(dirname(root.kubeconfigPath)).cert;
      const inRoot = join(dir, "root-user.kubeconfig");
      writeFileSync(inRoot, kubeconfig(httpsUrl, { cert, key }, ca));
      const ok = await kubectl({ ...root, kubeconfigPath: inRoot }, [
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
      ]);
      expect(ok.stdout).toBe(`root-user-${NAME}`);
      const inChild = join(dir, "root-user-child.kubeconfig");
      writeFileSync(inChild, kubeconfig(`${httpsUrl}/clusters/${NAME}`, { cert, key }, ca));
      const no = await kubectl({ ...root, kubeconfigPath: inChild }, ["auth", "whoami"]);
      expect(no.code).not.toBe(0);
      expect(no.stderr).toMatch(/Unauthorized|must be logged in/);
    } finally {
      await api(root, "DELETE", `${CSR}/${name}`);
    }
  });
});
