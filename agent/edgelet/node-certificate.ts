// TLS bootstrap, as a kubelet's: with a bootstrap token, the node makes a key and asks for a
// client certificate through a CertificateSigningRequest (signer
// kubernetes.io/kube-apiserver-client-kubelet, CN system:node:<name>, O system:nodes), which
// the control plane's csrapproving controller approves at once for bootstrap tokens and its
// signer issues; the node then authenticates with the certificate instead of a token.
import { generateKeyPairSync, sign, X509Certificate } from "node:crypto";
import { encodeCertificateRequest } from "../../api/x509/request";
import { type Api, errorText, sleep } from "./api";

/** The part of a CertificateSigningRequest's status the node reads. */
interface CsrStatus {
  certificate?: string;
  conditions?: { type: string; reason?: string; message?: string }[];
}

const CSR_PATH = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
export const KUBELET_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet";

/** A new ECDSA P-256 key (PKCS#8 PEM) and a PKCS#10 request (PEM) for the node's client certificate. */
export function nodeCertificateRequest(nodeName: string): { csr: string; key: string } {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const spki = new Uint8Array(publicKey.export({ type: "spki", format: "der" }));
  const csr = encodeCertificateRequest(
    `system:node:${nodeName}`,
    ["system:nodes"],
    spki,
    (info) => new Uint8Array(sign("sha256", info, { key: privateKey, dsaEncoding: "der" })),
  );
  return { csr, key: privateKey.export({ type: "pkcs8", format: "pem" }).toString() };
}

/**
 * Submits the node's CSR with `api` (a bootstrap token's client) and waits for its
 * certificate (PEM); throws when it is denied, fails or does not come within `timeoutMs`.
 */
export async function requestNodeCertificate(
  api: Api,
  nodeName: string,
  timeoutMs = 60_000,
): Promise<{ cert: string; key: string }> {
  const { csr, key } = nodeCertificateRequest(nodeName);
  const made = await api.request("POST", CSR_PATH, {
    apiVersion: "certificates.k8s.io/v1",
    kind: "CertificateSigningRequest",
    metadata: { generateName: "node-csr-" },
    spec: {
      request: Buffer.from(csr).toString("base64"),
      signerName: KUBELET_CLIENT_SIGNER,
      usages: ["digital signature", "client auth"],
    },
  });
  if (made.status !== 201) throw new Error(`submitting the node's CSR failed: ${errorText(made)}`);
  const name = made.json?.metadata?.name;
  if (!name) throw new Error("submitting the node's CSR: the answer named no CSR");
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await api.get(`${CSR_PATH}/${name}`);
    const status = (r.json?.status ?? {}) as CsrStatus;
    if (typeof status.certificate === "string" && status.certificate)
      return { cert: Buffer.from(status.certificate, "base64").toString(), key };
    const stop = (status.conditions ?? []).find((c) => c.type === "Denied" || c.type === "Failed");
    if (stop)
      throw new Error(
        `the node's CSR ${name} was ${stop.type.toLowerCase()}: ${stop.message ?? stop.reason ?? ""}`,
      );
    if (Date.now() > deadline)
      throw new Error(`the node's CSR ${name} was not signed within ${timeoutMs / 1000} s`);
    await new Promise((res) => setTimeout(res, 500));
  }
}

/**
 * When to renew a certificate, as a kubelet does: at a random point between 70 % and 90 % of
 * its life. EDGELET_CERT_ROTATE_SECONDS (for tests) renews that many seconds from now instead.
 */
export function rotationDelayMs(certPem: string, now = Date.now()): number {
  const fixed = Number(process.env.EDGELET_CERT_ROTATE_SECONDS);
  if (fixed > 0) return fixed * 1000;
  const x = new X509Certificate(certPem);
  const from = Date.parse(x.validFrom);
  const life = Date.parse(x.validTo) - from;
  return Math.max(0, from + life * (0.7 + 0.2 * Math.random()) - now);
}

/**
 * Renews the node's client certificate before it ends, for as long as `signal` lasts: a new
 * key and CSR sent with the current certificate (approved at once: a node renewing its own),
 * then `use` hands the new one to the node's clients. A failure is tried again 30 s later.
 */
export async function rotateNodeCertificate(
  api: Api,
  nodeName: string,
  creds: { cert?: string; key?: string },
  signal: AbortSignal,
  log: (m: string) => void,
  use: (cert: string, key: string) => void,
): Promise<void> {
  let wait = rotationDelayMs(creds.cert!);
  while (!signal.aborted) {
    await sleep(wait, signal);
    if (signal.aborted) return;
    try {
      const next = await requestNodeCertificate(api, nodeName);
      creds.cert = next.cert;
      creds.key = next.key;
      use(next.cert, next.key);
      log(`rotated the node's client certificate (valid until ${new X509Certificate(next.cert).validTo})`);
      wait = rotationDelayMs(next.cert);
    } catch (e) {
      log(`renewing the node's client certificate: ${(e as Error).message}; trying again in 30 s`);
      wait = 30_000;
    }
  }
}
