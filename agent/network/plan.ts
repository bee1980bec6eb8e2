// The route planner: from this node and the Nodes it sees, what the kernel should hold so that
// every other node's pod CIDR is reachable. Pure (no I/O): routes.ts applies the plan.
//
// A peer is a Node that published its pod network (the annotations of api/network.ts) and has a
// podCIDR; simulated nodes and nodes whose network another tool runs publish nothing and are
// left alone. For each peer:
// - host-gw: a route to its podCIDR via its address on the shared L2 subnet;
// - vxlan: a route to its podCIDR via its VTEP address (the podCIDR's network address) on the
//   VXLAN device, onlink, a permanent neighbour entry with its VTEP MAC, and a forwarding entry
//   sending that MAC to its address (flannel's vxlan backend, without learning);
// - which one: by this node's backend. auto takes host-gw for peers on the node's own subnet
//   and VXLAN for the rest (flannel's DirectRouting); vxlan takes VXLAN for every peer that has
//   a VTEP; host-gw takes host-gw where it can. A peer no way reaches is reported, not routed.
import {
  ANNOTATIONS,
  BACKENDS,
  type Backend,
  contains,
  type IPv4Net,
  intToIp,
  parseCIDR,
} from "../../api/network";
import type { Node } from "../lib/kube-types";

export interface Self {
  name: string;
  backend: Backend;
  /** the address peers reach this node at */
  ip: string;
  /** the L2 subnet of the node's uplink (where host-gw peers must be) */
  subnet: IPv4Net;
  uplink: string;
  /** the VXLAN device, when the backend has one */
  vxlanDevice?: string;
}

export interface Peer {
  name: string;
  podCIDR: string;
  ip: string;
  backend: Backend;
  vtepMAC?: string;
}

export interface RoutePlan {
  dst: string;
  via: string;
  dev: string;
  onlink?: boolean;
}

export interface Plan {
  routes: RoutePlan[];
  /** permanent neighbour entries on the VXLAN device: VTEP address -> MAC */
  neighbors: { ip: string; mac: string }[];
  /** forwarding entries on the VXLAN device: MAC -> the peer's address */
  fdb: { mac: string; dst: string }[];
  /** peers left unrouted, and why */
  unreachable: { name: string; reason: string }[];
  /** peer name -> how it is reached */
  modes: Record<string, "host-gw" | "vxlan">;
}

const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;

/** The peer a Node is, or undefined when it has not published a pod network of ours. */
export function peerOf(node: Node | undefined): Peer | undefined {
  const name = node?.metadata?.name;
  const ann: Record<string, string> = node?.metadata?.annotations ?? {};
  const backend = ann[ANNOTATIONS.backend] as Backend | undefined;
  const ip = ann[ANNOTATIONS.publicIP];
  const podCIDR: string | undefined = node?.spec?.podCIDRs?.[0] ?? node?.spec?.podCIDR;
  if (!name || !backend || !BACKENDS.includes(backend) || backend === "none" || !ip || !podCIDR)
    return undefined;
  if (!parseCIDR(podCIDR) || !/^\d+\.\d+\.\d+\.\d+$/.test(ip)) return undefined;
  if (node?.metadata?.deletionTimestamp) return undefined;
  const mac = ann[ANNOTATIONS.vtepMAC]?.toLowerCase();
  return { name, podCIDR, ip, backend, vtepMAC: mac && MAC.test(mac) ? mac : undefined };
}

/** The address of a peer's VTEP: its podCIDR's network address (flannel's convention). */
export function vtepAddress(podCIDR: string): string {
  return intToIp(parseCIDR(podCIDR)!.base);
}

export function planRoutes(self: Self, peers: Peer[]): Plan {
  const plan: Plan = { routes: [], neighbors: [], fdb: [], unreachable: [], modes: {} };
  if (self.backend === "none") return plan;
  const seen = new Set<string>();
  for (const p of [...peers].sort((a, b) => a.name.localeCompare(b.name))) {
    if (p.name === self.name) continue;
    const cidr = parseCIDR(p.podCIDR)!;
    const key = `${cidr.base}/${cidr.bits}`;
    if (seen.has(key)) {
      plan.unreachable.push({ name: p.name, reason: `podCIDR ${p.podCIDR} is another peer's too` });
      continue;
    }
    seen.add(key);
    const sameSubnet = contains(self.subnet, p.ip);
    const peerHasVtep = !!p.vtepMAC && (p.backend === "vxlan" || p.backend === "auto");
    const canVxlan = !!self.vxlanDevice && peerHasVtep;
    let mode: "host-gw" | "vxlan" | undefined;
    if (self.backend === "vxlan") mode = canVxlan ? "vxlan" : sameSubnet ? "host-gw" : undefined;
    else if (self.backend === "auto") mode = sameSubnet ? "host-gw" : canVxlan ? "vxlan" : undefined;
    else mode = sameSubnet ? "host-gw" : undefined;
    if (!mode) {
      plan.unreachable.push({
        name: p.name,
        reason: sameSubnet
          ? `no VTEP to reach it through`
          : `${p.ip} is not on this node's subnet and ${peerHasVtep ? "this node has no VXLAN device" : "it has no VTEP"} (backend ${self.backend}, peer ${p.backend})`,
      });
      continue;
    }
    plan.modes[p.name] = mode;
    if (mode === "host-gw") {
      plan.routes.push({ dst: p.podCIDR, via: p.ip, dev: self.uplink });
    } else {
      const vtep = vtepAddress(p.podCIDR);
      plan.routes.push({ dst: p.podCIDR, via: vtep, dev: self.vxlanDevice!, onlink: true });
      plan.neighbors.push({ ip: vtep, mac: p.vtepMAC! });
      plan.fdb.push({ mac: p.vtepMAC!, dst: p.ip });
    }
  }
  return plan;
}

/**
 * A fixed VTEP MAC for a node: locally administered, unicast, from its name and podCIDR, so a
 * restarted agent keeps the MAC its peers already hold.
 */
export function vtepMAC(nodeName: string, podCIDR: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193;
  const s = `${nodeName}|${podCIDR}`;
  for (let i = 0; i < s.length; i++) {
    h1 = Math.imul(h1 ^ s.charCodeAt(i), 0x01000193) >>> 0;
    h2 = Math.imul(h2 ^ s.charCodeAt(i), 0x5bd1e995) >>> 0;
  }
  const bytes = [(h1 >>> 24) & 0xfc, h1 >>> 16, h1 >>> 8, h1, h2 >>> 8, h2].map((b) => b & 255);
  bytes[0] = (bytes[0]! | 0x02) & 0xfe;
  return bytes.map((b) => b.toString(16).padStart(2, "0")).join(":");
}
