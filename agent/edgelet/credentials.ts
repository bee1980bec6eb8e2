// How edgelet authenticates to the control plane. Today the token given with
// --token is used as the bearer token directly. The join is structured so a
// bootstrap-token exchange (bootstrap token -> node credential for
// system:node:<name>) can slot in here without touching the rest.
import type { EdgeletConfig } from "./config";

export interface NodeCredentials {
  token: string;
  /** Where the credential came from, for the logs. */
  source: "token-flag" | "bootstrap-exchange";
}

export async function obtainCredentials(
  cfg: Pick<EdgeletConfig, "server" | "token" | "nodeName">,
): Promise<NodeCredentials> {
  return { token: cfg.token, source: "token-flag" };
}
