// The node's CNI configuration: a bridge conflist (bridge edgeplane0, host-local IPAM over
// the node's podCIDR, its state under the agent's own root) written into containerd's CNI
// conf dir when it differs. portmap serves hostPort mappings.
//
// ipMasq: when the agent runs the pod network (agent/network), the bridge plugin must not
// masquerade: pod IPs stay as they are inside the cluster CIDR and the agent masquerades only
// what leaves it. With no pod network of the agent's (backend none) the plugin masquerades
// everything leaving the node's subnet, as before. mtu: VXLAN costs 50 bytes a packet, so the
// pods' interfaces are made that much smaller when VXLAN may carry them.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const CNI_FILE = "10-edgeplane.conflist";
export const BRIDGE = "edgeplane0";

export interface CniOptions {
  podCIDR: string;
  /** host-local IPAM's dataDir */
  ipamDir: string;
  /** the bridge plugin masquerades pod traffic leaving the node's subnet */
  ipMasq: boolean;
  /** the pods' (and the bridge's) MTU; unset: the plugin's default (the uplink's) */
  mtu?: number;
  /** the bridge's name (default BRIDGE) */
  bridge?: string;
}

/** A CNI network configuration list (conflist), as written for the runtime. */
export interface CniConflist {
  cniVersion: string;
  name: string;
  plugins: ({ type: string } & Record<string, unknown>)[];
}

export function bridgeConflist(o: CniOptions): CniConflist {
  return {
    cniVersion: "1.0.0",
    name: "edgeplane",
    plugins: [
      {
        type: "bridge",
        bridge: o.bridge ?? BRIDGE,
        isGateway: true,
        ipMasq: o.ipMasq,
        hairpinMode: true,
        ...(o.mtu ? { mtu: o.mtu } : {}),
        ipam: {
          type: "host-local",
          ranges: [[{ subnet: o.podCIDR }]],
          routes: [{ dst: "0.0.0.0/0" }],
          dataDir: o.ipamDir,
        },
      },
      { type: "portmap", capabilities: { portMappings: true } },
      { type: "loopback" },
    ],
  };
}

/** The subnet of an existing edgeplane conflist, if any. */
export function currentSubnet(confDir: string): string | undefined {
  const file = join(confDir, CNI_FILE);
  if (!existsSync(file)) return undefined;
  try {
    // the file this agent writes (bridgeConflist); one that is not JSON yields none
    const c = JSON.parse(readFileSync(file, "utf8")) as {
      plugins?: { type?: string; ipam?: { ranges?: { subnet?: string }[][] } }[];
    };
    return c.plugins?.find((p) => p.type === "bridge")?.ipam?.ranges?.[0]?.[0]?.subnet;
  } catch {
    return undefined;
  }
}

/** Writes the conflist unless the same one is there; returns whether it wrote. */
export function ensureCniConfig(confDir: string, o: CniOptions): boolean {
  const file = join(confDir, CNI_FILE);
  const text = `${JSON.stringify(bridgeConflist(o), null, 2)}\n`;
  try {
    if (readFileSync(file, "utf8") === text) return false;
  } catch {}
  mkdirSync(confDir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
  return true;
}
