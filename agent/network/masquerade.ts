// The node's own masquerade (nft table ip edgeplane-podnet): pod traffic leaving the cluster
// CIDR goes out with the node's address; traffic between pods keeps the pods' addresses end to
// end (the bridge plugin's ipMasq is off when the agent runs the pod network). The whole table
// is replaced in one nft transaction, so it is never seen half written.
import { run } from "./exec";

export const PODNET_TABLE = "edgeplane-podnet";

export function masqueradeScript(clusterCIDR: string): string {
  return `table ip ${PODNET_TABLE}
delete table ip ${PODNET_TABLE}
table ip ${PODNET_TABLE} {
  chain postrouting {
    type nat hook postrouting priority 100; policy accept;
    ip saddr ${clusterCIDR} ip daddr ${clusterCIDR} return
    ip saddr ${clusterCIDR} ip daddr != 224.0.0.0/4 masquerade fully-random
  }
}
`;
}

export async function applyMasquerade(clusterCIDR: string): Promise<void> {
  await run("nft", ["-f", "-"], masqueradeScript(clusterCIDR));
}

export async function removeMasquerade(): Promise<void> {
  await run("nft", ["delete", "table", "ip", PODNET_TABLE]).catch(() => {});
}
