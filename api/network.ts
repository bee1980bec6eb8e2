// The pod network's addresses and settings, shared by the control plane (the node IPAM
// controller, the Node store's ledger, the edgeplane-network ConfigMap it publishes) and the
// node agents that read that map. Ranges follow kube-controller-manager's flags:
// --cluster-cidr (EDGEPLANE_CLUSTER_CIDR, 10.244.0.0/16 by default, flannel's and kind's) and
// --node-cidr-mask-size (EDGEPLANE_NODE_CIDR_MASK_SIZE, 24): one /24 per node, 256 nodes.
import { isIPv4 } from "./validation/names";

export const DEFAULT_CLUSTER_CIDR = "10.244.0.0/16";
export const DEFAULT_NODE_CIDR_MASK_SIZE = 24;
export const DEFAULT_SERVICE_CIDR = "10.96.0.0/12";

/** The ConfigMap in kube-system that tells node agents how the cluster's network is laid out. */
export const NETWORK_CONFIGMAP = "edgeplane-network";
export const NETWORK_CONFIGMAP_NAMESPACE = "kube-system";

/**
 * How a node reaches the pod CIDRs of the others:
 * - host-gw: a route to each peer's podCIDR via the peer's InternalIP (peers must share the
 *   node's L2 subnet; others are left unrouted and reported);
 * - vxlan: every peer through a VXLAN device (flannel's vxlan backend);
 * - auto: host-gw to peers on the node's own subnet, VXLAN to the rest (flannel's vxlan
 *   backend with DirectRouting);
 * - none: the agent programs nothing; another tool owns the pod network (or several agents
 *   share one network namespace, as tests on one machine do).
 */
export const BACKENDS = ["auto", "host-gw", "vxlan", "none"] as const;
export type Backend = (typeof BACKENDS)[number];
export const DEFAULT_BACKEND: Backend = "auto";
/** VXLAN defaults (flannel's: VNI 1, the IANA port 4789). */
export const DEFAULT_VXLAN_VNI = 1;
export const DEFAULT_VXLAN_PORT = 4789;

/** Node annotations the agents publish for each other (flannel keeps the same facts on its Node). */
export const ANNOTATIONS = {
  /** the backend this node runs */
  backend: "network.edgeplane.dev/backend",
  /** the address peers send pod traffic to (the node's InternalIP, as the node sees it) */
  publicIP: "network.edgeplane.dev/public-ip",
  /** the VXLAN device's MAC (the VTEP), fixed for the node */
  vtepMAC: "network.edgeplane.dev/vtep-mac",
} as const;

export interface IPv4Net {
  /** the network address as an unsigned 32-bit integer */
  base: number;
  bits: number;
}

export const ipToInt = (ip: string): number =>
  ip.split(".").reduce((n, octet) => n * 256 + Number(octet), 0) >>> 0;

export const intToIp = (n: number): string =>
  [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");

/** Parses "a.b.c.d/n"; null unless it is an IPv4 CIDR whose address is the network's (no host bits). */
export function parseCIDR(cidr: string, opts: { strict?: boolean } = {}): IPv4Net | null {
  const m = /^(\d+\.\d+\.\d+\.\d+)\/(\d{1,2})$/.exec(String(cidr).trim());
  if (!m || !isIPv4(m[1]!)) return null;
  const bits = Number(m[2]);
  if (bits > 32) return null;
  const addr = ipToInt(m[1]!);
  const base = bits === 0 ? 0 : (addr & (~0 << (32 - bits))) >>> 0;
  if (opts.strict && base !== addr) return null;
  return { base, bits };
}

export const formatCIDR = (n: IPv4Net): string => `${intToIp(n.base)}/${n.bits}`;

export const netSize = (n: IPv4Net): number => 2 ** (32 - n.bits);

export function contains(net: IPv4Net, ip: string | number): boolean {
  const v = typeof ip === "number" ? ip : ipToInt(ip);
  return v >= net.base && v < net.base + netSize(net);
}

export function overlaps(a: IPv4Net, b: IPv4Net): boolean {
  return a.base < b.base + netSize(b) && b.base < a.base + netSize(a);
}

/** The cluster CIDR cut into node blocks: block i is the i-th /mask of the range. */
export interface NodeBlocks {
  cluster: IPv4Net;
  mask: number;
  count: number;
}

export function nodeBlocks(clusterCIDR: string, mask: number): NodeBlocks | null {
  const cluster = parseCIDR(clusterCIDR);
  if (!cluster || !Number.isInteger(mask) || mask < cluster.bits || mask > 30) return null;
  // at most 2^16 blocks: a bigger range is a typo, and a ledger of it would not fit anywhere
  if (mask - cluster.bits > 16) return null;
  return { cluster, mask, count: 2 ** (mask - cluster.bits) };
}

export function blockCIDR(b: NodeBlocks, index: number): string {
  return formatCIDR({ base: b.cluster.base + index * 2 ** (32 - b.mask), bits: b.mask });
}

/**
 * The blocks a CIDR covers inside the cluster range (a wider CIDR covers several, a narrower one
 * the block it lies in); [] when it is outside the range.
 */
export function blocksOf(b: NodeBlocks, cidr: string): number[] {
  const n = parseCIDR(cidr);
  if (!n || !overlaps(n, b.cluster)) return [];
  const size = 2 ** (32 - b.mask);
  const lo = Math.max(n.base, b.cluster.base);
  const hi = Math.min(n.base + netSize(n), b.cluster.base + netSize(b.cluster)) - 1;
  const first = Math.floor((lo - b.cluster.base) / size);
  const last = Math.floor((hi - b.cluster.base) / size);
  const out: number[] = [];
  for (let i = first; i <= last; i++) out.push(i);
  return out;
}

/** The deployment's settings the network comes from (Worker variables). */
export interface NetworkEnv {
  EDGEPLANE_CLUSTER_CIDR?: string;
  EDGEPLANE_NODE_CIDR_MASK_SIZE?: string;
  EDGEPLANE_SERVICE_CIDR?: string;
  EDGEPLANE_POD_NETWORK_BACKEND?: string;
}

export interface NetworkSettings {
  clusterCIDR: string;
  nodeCIDRMaskSize: number;
  serviceCIDR: string;
  backend: Backend;
  vxlanVNI: number;
  vxlanPort: number;
}

const isBackend = (v: unknown): v is Backend => typeof v === "string" && BACKENDS.includes(v as Backend);

const cache = new Map<string, { settings: NetworkSettings; blocks: NodeBlocks }>();

/**
 * The configured network (a bad setting falls back to the default, as for the Service range: a
 * typo must not stop the store), with its node blocks.
 */
export function networkOf(env: NetworkEnv): { settings: NetworkSettings; blocks: NodeBlocks } {
  const key = `${env.EDGEPLANE_CLUSTER_CIDR}|${env.EDGEPLANE_NODE_CIDR_MASK_SIZE}|${env.EDGEPLANE_SERVICE_CIDR}|${env.EDGEPLANE_POD_NETWORK_BACKEND}`;
  let hit = cache.get(key);
  if (!hit) {
    const mask = Number(env.EDGEPLANE_NODE_CIDR_MASK_SIZE || DEFAULT_NODE_CIDR_MASK_SIZE);
    let blocks = nodeBlocks(env.EDGEPLANE_CLUSTER_CIDR || DEFAULT_CLUSTER_CIDR, mask);
    if (!blocks) {
      console.error(
        `EDGEPLANE_CLUSTER_CIDR/EDGEPLANE_NODE_CIDR_MASK_SIZE (${env.EDGEPLANE_CLUSTER_CIDR}, ${env.EDGEPLANE_NODE_CIDR_MASK_SIZE}) unusable: ${DEFAULT_CLUSTER_CIDR} /${DEFAULT_NODE_CIDR_MASK_SIZE} instead`,
      );
      blocks = nodeBlocks(DEFAULT_CLUSTER_CIDR, DEFAULT_NODE_CIDR_MASK_SIZE)!;
    }
    const service =
      parseCIDR(env.EDGEPLANE_SERVICE_CIDR || DEFAULT_SERVICE_CIDR) ?? parseCIDR(DEFAULT_SERVICE_CIDR)!;
    if (overlaps(blocks.cluster, service))
      // pods and Services sharing addresses would route nowhere: said loudly, as a typo
      console.error(
        `EDGEPLANE_CLUSTER_CIDR ${formatCIDR(blocks.cluster)} overlaps the Service range ${formatCIDR(service)}: pods and Services may get the same addresses`,
      );
    const backend = isBackend(env.EDGEPLANE_POD_NETWORK_BACKEND)
      ? env.EDGEPLANE_POD_NETWORK_BACKEND
      : DEFAULT_BACKEND;
    hit = {
      blocks,
      settings: {
        clusterCIDR: formatCIDR(blocks.cluster),
        nodeCIDRMaskSize: blocks.mask,
        serviceCIDR: formatCIDR(service),
        backend,
        vxlanVNI: DEFAULT_VXLAN_VNI,
        vxlanPort: DEFAULT_VXLAN_PORT,
      },
    };
    cache.set(key, hit);
  }
  return hit;
}

/** The edgeplane-network ConfigMap's data for these settings (string values, as a ConfigMap's). */
export function networkConfigData(s: NetworkSettings): Record<string, string> {
  return {
    clusterCIDR: s.clusterCIDR,
    nodeCIDRMaskSize: String(s.nodeCIDRMaskSize),
    serviceCIDR: s.serviceCIDR,
    backend: s.backend,
    vxlanVNI: String(s.vxlanVNI),
    vxlanPort: String(s.vxlanPort),
  };
}

/** Reads the map's data as a node agent does: what is missing or unusable takes the default. */
export function parseNetworkConfig(data: Record<string, string> | undefined): NetworkSettings {
  const d = data ?? {};
  const cidr = (v: string | undefined, dflt: string) =>
    v && parseCIDR(v) ? formatCIDR(parseCIDR(v)!) : dflt;
  const int = (v: string | undefined, dflt: number, lo: number, hi: number) => {
    const n = Number(v);
    return v !== undefined && v !== "" && Number.isInteger(n) && n >= lo && n <= hi ? n : dflt;
  };
  return {
    clusterCIDR: cidr(d.clusterCIDR, DEFAULT_CLUSTER_CIDR),
    nodeCIDRMaskSize: int(d.nodeCIDRMaskSize, DEFAULT_NODE_CIDR_MASK_SIZE, 8, 30),
    serviceCIDR: cidr(d.serviceCIDR, DEFAULT_SERVICE_CIDR),
    backend: isBackend(d.backend) ? d.backend : DEFAULT_BACKEND,
    vxlanVNI: int(d.vxlanVNI, DEFAULT_VXLAN_VNI, 1, 16_777_215),
    vxlanPort: int(d.vxlanPort, DEFAULT_VXLAN_PORT, 1, 65_535),
  };
}
