// `edgelet join --runtime simulated` with a bootstrap token: the one simulated node gets its
// own node credential, as a real node does (credentials.ts), renewed for the simulated
// nodes' client; any other token is used as given.
import { Api } from "./api";
import type { EdgeletConfig } from "./config";
import { CredentialRenewer, obtainCredentials, type TokenHolder } from "./credentials";

export interface SimulatedJoin {
  token: string;
  source: string;
  /** Starts renewing the credential for `client` (nothing to renew for a token given as is). */
  renew(client: TokenHolder): void;
  stop(): Promise<void>;
}

export async function joinSimulatedNode(
  cfg: EdgeletConfig,
  nodeName: string,
  log: (m: string) => void,
): Promise<SimulatedJoin> {
  const nodeCfg = { ...cfg, nodeName };
  // simulated nodes join with tokens (a client certificate is a real node's choice)
  const creds = await obtainCredentials({ ...nodeCfg, clientCertificate: false }, log);
  const token = creds.token ?? cfg.token;
  if (creds.expiresAt === undefined)
    return { token, source: creds.source, renew: () => {}, stop: async () => {} };
  const api = new Api({ server: cfg.server, token, ca: cfg.ca, insecure: cfg.insecure });
  let renewer: CredentialRenewer | undefined;
  return {
    token,
    source: creds.source,
    renew(client) {
      renewer = new CredentialRenewer(nodeCfg, creds, api, log, [client]);
      renewer.start();
    },
    async stop() {
      await renewer?.stop();
      api.close();
    },
  };
}
