// The node's CNI configuration: a bridge conflist (bridge edgeplane0,
// host-local IPAM over the node's podCIDR) written into containerd's CNI
// conf dir when it differs. portmap serves hostPort mappings.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const CNI_FILE = "10-edgeplane.conflist";
export const BRIDGE = "edgeplane0";

export function bridgeConflist(podCIDR: string): any {
  return {
    cniVersion: "1.0.0",
    name: "edgeplane",
    plugins: [
      {
        type: "bridge",
        bridge: BRIDGE,
        isGateway: true,
        ipMasq: true,
        hairpinMode: true,
        ipam: {
          type: "host-local",
          ranges: [[{ subnet: podCIDR }]],
          routes: [{ dst: "0.0.0.0/0" }],
          dataDir: "/var/lib/edgeplane/cni/networks",
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
    const c = JSON.parse(readFileSync(file, "utf8"));
    return c.plugins?.find((p: any) => p.type === "bridge")?.ipam?.ranges?.[0]?.[0]?.subnet;
  } catch {
    return undefined;
  }
}

/** Writes the conflist for podCIDR unless an identical subnet is configured; returns whether it wrote. */
export function ensureCniConfig(confDir: string, podCIDR: string): boolean {
  if (currentSubnet(confDir) === podCIDR) return false;
  mkdirSync(confDir, { recursive: true });
  const file = join(confDir, CNI_FILE);
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(bridgeConflist(podCIDR), null, 2)}\n`);
  renameSync(tmp, file);
  return true;
}
