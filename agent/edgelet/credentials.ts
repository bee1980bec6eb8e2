// How edgelet authenticates to the control plane. A bootstrap token (`<6>.<16>` as
// kubeadm prints them) is exchanged once for this node's own credential (system:node:<name>,
// group system:nodes) at POST /edgeplane/node-credentials, or, with --client-certificate, for
// a client certificate through a CertificateSigningRequest (node-certificate.ts); any other
// token is used as given.
import { Api, errorText } from "./api";
import type { EdgeletConfig } from "./config";
import { requestNodeCertificate } from "./node-certificate";

export interface NodeCredentials {
  /** a bearer token, or (certificate) none */
  token?: string;
  /** a client certificate and its key (PEM) */
  cert?: string;
  key?: string;
  /** Where the credential came from, for the logs. */
  source: "token-flag" | "bootstrap-exchange" | "certificate-signing-request";
}

const BOOTSTRAP_TOKEN = /^[a-z0-9]{6}\.[a-z0-9]{16}$/;

export function isBootstrapToken(token: string): boolean {
  return BOOTSTRAP_TOKEN.test(token);
}

export async function obtainCredentials(
  cfg: Pick<EdgeletConfig, "server" | "token" | "nodeName" | "ca" | "insecure"> & {
    clientCertificate?: boolean;
  },
): Promise<NodeCredentials> {
  if (!isBootstrapToken(cfg.token)) return { token: cfg.token, source: "token-flag" };
  const api = new Api({ server: cfg.server, token: cfg.token, ca: cfg.ca, insecure: cfg.insecure });
  try {
    if (cfg.clientCertificate)
      return { ...(await requestNodeCertificate(api, cfg.nodeName)), source: "certificate-signing-request" };
    const r = await api.request("POST", "/edgeplane/node-credentials", { nodeName: cfg.nodeName });
    if (r.status !== 201 || typeof r.json?.token !== "string")
      throw new Error(`exchanging the bootstrap token for node credentials failed: ${errorText(r)}`);
    return { token: r.json.token, source: "bootstrap-exchange" };
  } finally {
    api.close();
  }
}
