// `edgeplane cluster create|list|delete <name>`: the other clusters of this deployment
// (docs/clusters.md), as plain API calls on the root cluster's Cluster objects with the
// credentials of the kubeconfig in use. `create` writes <state>/clusters/<name>/kubeconfig
// (the new cluster's URL and an admin credential of it alone) and prints its path, and
// kubeconfig-x509 beside it: the same admin with a client certificate of the cluster's own CA.
import { generateKeyPairSync, sign } from "node:crypto";
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { encodeCertificateRequest } from "../../api/x509/request";
import type { Command } from "../main";
import {
  call,
  failureMessage,
  type KubeTarget,
  loadKubeconfig,
  stateDir,
  takeKubeconfigFlag,
} from "./kube-client";

const CLUSTERS = "/apis/tenancy.edgeplane.dev/v1alpha1/clusters";
const USAGE = "usage: edgeplane cluster create|list|delete [<name>] [--kubeconfig <path>]";

/** the admin a cluster's certificate names: kubeadm's admin.conf user */
const ADMIN = { cn: "kubernetes-admin", groups: ["system:masters"] };

/** A new ECDSA P-256 key (PKCS#8 PEM) and a PKCS#10 request (PEM) for CN=`cn`, O=`groups`. */
function certificateRequest(cn: string, groups: string[]): { csr: string; key: string } {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const spki = new Uint8Array(publicKey.export({ type: "spki", format: "der" }));
  const csr = encodeCertificateRequest(
    cn,
    groups,
    spki,
    (info) => new Uint8Array(sign("sha256", info, { key: privateKey, dsaEncoding: "der" })),
  );
  return { csr, key: privateKey.export({ type: "pkcs8", format: "pem" }).toString() };
}

/** The user of a kubeconfig: a token, or a client certificate and its key. */
type Credential = { token: string } | { cert: string; key: string };

function userLines(cred: Credential): string {
  if ("token" in cred) return `    token: ${cred.token}\n`;
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  return `    client-certificate-data: ${b64(cred.cert)}\n    client-key-data: ${b64(cred.key)}\n`;
}

function kubeconfigFor(root: KubeTarget, name: string, cred: Credential): string {
  const ctx = `edgeplane-${name}`;
  const ca = root.ca ? `    certificate-authority-data: ${Buffer.from(root.ca).toString("base64")}\n` : "";
  const insecure = root.insecure ? "    insecure-skip-tls-verify: true\n" : "";
  return `apiVersion: v1
kind: Config
clusters:
- name: ${ctx}
  cluster:
    server: ${root.server}/clusters/${name}
${ca}${insecure}contexts:
- name: ${ctx}
  context:
    cluster: ${ctx}
    user: ${ctx}-admin
    namespace: default
current-context: ${ctx}
users:
- name: ${ctx}-admin
  user:
${userLines(cred)}`;
}

async function create(root: KubeTarget, name: string): Promise<number> {
  const made = await call(root, "POST", CLUSTERS, {
    apiVersion: "tenancy.edgeplane.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name },
  });
  if (made.status !== 201) {
    console.error(`edgeplane: cluster create ${name}: ${failureMessage(made)}`);
    return 1;
  }
  const tr = await call(root, "POST", `${CLUSTERS}/${name}/token`, {
    apiVersion: "authentication.k8s.io/v1",
    kind: "TokenRequest",
    spec: {},
  });
  const token = tr.json?.status?.token;
  if (tr.status !== 201 || typeof token !== "string") {
    console.error(`edgeplane: cluster create ${name}: no admin credential: ${failureMessage(tr)}`);
    return 1;
  }
  const dir = join(stateDir(), "clusters", name);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, "kubeconfig");
  writeFileSync(file, kubeconfigFor(root, name, { token }), { mode: 0o600 });
  chmodSync(file, 0o600);
  // the same admin with a client certificate the cluster's own CA issues (not fatal: a
  // control plane without the certificate subresource still gives a working kubeconfig)
  const { csr, key } = certificateRequest(ADMIN.cn, ADMIN.groups);
  const signed = await call(root, "POST", `${CLUSTERS}/${name}/certificate`, {
    apiVersion: "certificates.k8s.io/v1",
    kind: "CertificateSigningRequest",
    spec: { request: Buffer.from(csr).toString("base64") },
  });
  const cert = signed.json?.status?.certificate;
  if (signed.status === 201 && typeof cert === "string") {
    const x509File = join(dir, "kubeconfig-x509");
    const pemCert = Buffer.from(cert, "base64").toString();
    writeFileSync(x509File, kubeconfigFor(root, name, { cert: pemCert, key }), { mode: 0o600 });
    chmodSync(x509File, 0o600);
  } else console.error(`edgeplane: cluster create ${name}: no client certificate: ${failureMessage(signed)}`);
  console.log(file);
  return 0;
}

async function list(root: KubeTarget): Promise<number> {
  const r = await call(root, "GET", CLUSTERS);
  if (r.status !== 200) {
    console.error(`edgeplane: cluster list: ${failureMessage(r)}`);
    return 1;
  }
  const rows = [["NAME", "PHASE", "URL", "CREATED"]];
  for (const c of r.json?.items ?? [])
    rows.push([
      c.metadata?.name ?? "",
      c.status?.phase ?? "",
      `${root.server}${c.status?.url ?? ""}`,
      c.metadata?.creationTimestamp ?? "",
    ]);
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  for (const row of rows)
    console.log(
      row
        .map((cell, i) => cell.padEnd(widths[i]))
        .join("   ")
        .trimEnd(),
    );
  return 0;
}

async function remove(root: KubeTarget, name: string): Promise<number> {
  const r = await call(root, "DELETE", `${CLUSTERS}/${name}`);
  if (r.status !== 200 && r.status !== 202) {
    console.error(`edgeplane: cluster delete ${name}: ${failureMessage(r)}`);
    return 1;
  }
  rmSync(join(stateDir(), "clusters", name), { recursive: true, force: true });
  console.log(`cluster "${name}" deleted`);
  return 0;
}

export const command: Command = {
  summary: "create, list or delete clusters of this deployment (create prints its kubeconfig's path)",
  async run(args) {
    const { path, rest } = takeKubeconfigFlag(args);
    const [verb, name, ...extra] = rest;
    const needsName = verb === "create" || verb === "delete";
    if (!verb || !["create", "list", "delete"].includes(verb) || (needsName && !name) || extra.length > 0) {
      console.error(USAGE);
      return 2;
    }
    if (needsName && (name.includes("/") || name.includes(".."))) {
      console.error(`edgeplane: "${name}" is not a cluster name (a DNS-1123 label)`);
      return 2;
    }
    const root = loadKubeconfig(path);
    if (verb === "list") return list(root);
    return verb === "create" ? create(root, name) : remove(root, name);
  },
};
