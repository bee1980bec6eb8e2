// The cluster's network as the control plane publishes it (kube-system/edgeplane-network),
// read once when the agent joins; a control plane that publishes none means the defaults.
import {
  NETWORK_CONFIGMAP,
  NETWORK_CONFIGMAP_NAMESPACE,
  type NetworkSettings,
  parseNetworkConfig,
} from "../../api/network";
import type { Reply } from "../lib/http";
import { stringData } from "../lib/kube-types";

export async function readNetworkSettings(
  api: { get(path: string): Promise<Reply> },
  log: (m: string) => void,
): Promise<NetworkSettings> {
  const r = await api.get(
    `/api/v1/namespaces/${NETWORK_CONFIGMAP_NAMESPACE}/configmaps/${NETWORK_CONFIGMAP}`,
  );
  if (r.status === 200) return parseNetworkConfig(stringData(r.json?.data));
  log(
    `${NETWORK_CONFIGMAP_NAMESPACE}/${NETWORK_CONFIGMAP}: ${r.status} ${r.json?.message ?? ""}; using the default network settings`,
  );
  return parseNetworkConfig(undefined);
}
