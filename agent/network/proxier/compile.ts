// Services into nftables, after kube-proxy's nftables mode (pkg/proxy/nftables): a map from
// ClusterIP . protocol . port to a per-Service-port chain that picks an endpoint at random
// (numgen) and DNATs to it (through a map in the rule itself; kube-proxy jumps to a chain per
// endpoint, which here only Services with session affinity get: a table of 1,000 Services
// loads in half the time without 3,000 endpoint chains); NodePorts on every local address
// (`fib daddr type local`) through a map of their own; an "external" chain per Service port
// for NodePorts, external IPs and load-balancer IPs that applies externalTrafficPolicy;
// session affinity in per-endpoint sets with timeouts; hairpin traffic (a pod reaching
// itself through its Service) masqueraded by a set of endpoint . endpoint pairs; a mark for
// the other traffic that must be masqueraded (off-cluster clients of a ClusterIP, external
// clients under the Cluster policy); Services without usable endpoints rejected, not left to time out.
// The text is this repo's own; the structure and semantics are upstream's.
import { type Endpoint, endpointsForPort, type ServiceEndpoints } from "../endpoints";
import { isIPv4, keyOf, type Service } from "../types";
import type { Ruleset } from "./ruleset";

export const MASQ_MARK = "0x4000";

export interface ServicesConfig {
  nodeName: string;
  /** traffic to a ClusterIP from outside this range is masqueraded (kube-proxy's --cluster-cidr) */
  clusterCIDR?: string;
  /** NodePorts answer on 127.0.0.1 too (needs route_localnet=1, set by the proxier) */
  localhostNodePorts: boolean;
  /** Services this node answers itself (the apiserver relay, the DNS server): "ns/name:TCP" -> address */
  redirects: Map<string, { ip: string; port: number }>;
}

export interface Problem {
  /** "Service" or "EndpointSlice" */
  kind: string;
  namespace: string;
  name: string;
  reason: string;
  message: string;
}

interface Target {
  ip: string;
  port: number;
  /** not a pod behind the Service but a node-local server: no hairpin rule */
  local?: boolean;
}

/** kube-proxy's choice (CategorizeEndpoints): ready ones, else serving and terminating ones. */
export function usable<E extends Endpoint>(eps: E[]): E[] {
  const ready = eps.filter((e) => e.ready);
  return ready.length ? ready : eps.filter((e) => e.serving && e.terminating);
}

/** The fixed part of the table: maps, hooks, masquerading, rejects. */
export function addBase(rs: Ruleset, cfg: ServicesConfig): void {
  const vmap3 = "type ipv4_addr . inet_proto . inet_service : verdict;";
  const vmap2 = "type inet_proto . inet_service : verdict;";
  rs.sets.set("service-ips", { decl: vmap3, elements: [] });
  rs.sets.set("service-nodeports", { decl: vmap2, elements: [] });
  rs.sets.set("no-endpoint-services", { decl: vmap3, elements: [] });
  rs.sets.set("no-endpoint-nodeports", { decl: vmap2, elements: [] });
  rs.sets.set("hairpin", { decl: "type ipv4_addr . ipv4_addr;", elements: [] });
  rs.chains.set("nat-prerouting", {
    hook: "type nat hook prerouting priority -100; policy accept;",
    rules: ["jump services"],
  });
  rs.chains.set("nat-output", {
    hook: "type nat hook output priority -100; policy accept;",
    rules: ["jump services"],
  });
  rs.chains.set("nat-postrouting", {
    hook: "type nat hook postrouting priority 100; policy accept;",
    rules: ["jump masquerading"],
  });
  // before DNAT in output, after it in forward: a ClusterIP still in the header had no endpoint
  rs.chains.set("filter-forward", {
    hook: "type filter hook forward priority -110; policy accept;",
    rules: ["ct state new jump service-endpoints-check"],
  });
  rs.chains.set("filter-output", {
    hook: "type filter hook output priority -110; policy accept;",
    rules: ["ct state new jump service-endpoints-check"],
  });
  rs.chains.set("filter-input", {
    hook: "type filter hook input priority -110; policy accept;",
    rules: ["ct state new jump nodeport-endpoints-check"],
  });
  const local = cfg.localhostNodePorts
    ? "fib daddr type local"
    : "fib daddr type local ip daddr != 127.0.0.0/8";
  rs.chains.set("services", {
    rules: [
      "ip daddr . meta l4proto . th dport vmap @service-ips",
      `${local} meta l4proto . th dport vmap @service-nodeports`,
    ],
  });
  rs.chains.set("service-endpoints-check", {
    rules: [
      "ip daddr . meta l4proto . th dport vmap @no-endpoint-services",
      `${local} meta l4proto . th dport vmap @no-endpoint-nodeports`,
    ],
  });
  rs.chains.set("nodeport-endpoints-check", {
    rules: [`${local} meta l4proto . th dport vmap @no-endpoint-nodeports`],
  });
  rs.chains.set("masquerading", {
    rules: [
      // a DNATed packet whose source is its new destination: the pod answers itself through the Service
      "ct status dnat ip saddr . ip daddr @hairpin masquerade fully-random",
      `meta mark & ${MASQ_MARK} == 0 return`,
      `meta mark set meta mark ^ ${MASQ_MARK}`,
      "masquerade fully-random",
    ],
  });
  rs.chains.set("mark-for-masquerade", { rules: [`meta mark set meta mark | ${MASQ_MARK}`] });
  rs.chains.set("reject-chain", { rules: ["reject"] });
}

const externallyAccessible = (spec: NonNullable<Service["spec"]>) =>
  spec.type === "NodePort" || spec.type === "LoadBalancer" || (spec.externalIPs ?? []).length > 0;

/** Map elements with one key only (two Services claiming one external IP and port: the first wins). */
export function dedupeElements(rs: Ruleset): void {
  for (const s of rs.sets.values()) {
    if (s.dynamic || !s.decl.includes(":")) continue;
    const seen = new Set<string>();
    s.elements = s.elements.filter((e) => {
      const k = e.slice(0, e.indexOf(" : "));
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
  }
}

/** Adds every Service port's chains and map elements. */
export function addServices(
  rs: Ruleset,
  cfg: ServicesConfig,
  services: Iterable<Service>,
  endpoints: Map<string, ServiceEndpoints>,
  report: (p: Problem) => void = () => {},
): void {
  const ips = rs.sets.get("service-ips")!.elements;
  const nodeports = rs.sets.get("service-nodeports")!.elements;
  const noEpIPs = rs.sets.get("no-endpoint-services")!.elements;
  const noEpPorts = rs.sets.get("no-endpoint-nodeports")!.elements;
  const hairpin = new Set<string>();
  for (const svc of services) {
    const spec = svc.spec;
    const ns = svc.metadata?.namespace ?? "";
    const name = svc.metadata?.name ?? "";
    if (!spec || spec.type === "ExternalName") continue;
    const clusterIP = spec.clusterIPs?.[0] ?? spec.clusterIP;
    if (!clusterIP || clusterIP === "None") continue; // headless: DNS only
    if (!isIPv4(clusterIP)) {
      report({
        kind: "Service",
        namespace: ns,
        name,
        reason: "UnsupportedClusterIP",
        message: `clusterIP ${clusterIP} is not IPv4`,
      });
      continue;
    }
    const se = endpoints.get(keyOf(svc));
    if (se?.rejected.length)
      report({
        kind: "Service",
        namespace: ns,
        name,
        reason: "EndpointsSkipped",
        message: `endpoint addresses ${se.rejected.slice(0, 5).join(", ")} are not IPv4 and are not programmed`,
      });
    const affinity =
      spec.sessionAffinity === "ClientIP"
        ? (spec.sessionAffinityConfig?.clientIP?.timeoutSeconds ?? 10800)
        : 0;
    const extIPs = [
      ...(spec.externalIPs ?? []),
      ...(spec.type === "LoadBalancer" ? (svc.status?.loadBalancer?.ingress ?? []).map((i) => i.ip) : []),
    ].filter(isIPv4);
    for (const sp of spec.ports ?? []) {
      const protocol = (sp.protocol ?? "TCP").toLowerCase();
      if (protocol !== "tcp" && protocol !== "udp" && protocol !== "sctp") continue;
      const portName = sp.name ?? "";
      const svcName = `${ns}/${name}/${protocol}/${portName || sp.port}`;
      const redirect = cfg.redirects.get(`${ns}/${name}:${protocol.toUpperCase()}`);
      let cluster: Target[];
      let local: Target[];
      let hasEndpoints: boolean;
      if (redirect) {
        cluster = local = [{ ...redirect, local: true }];
        hasEndpoints = true;
      } else {
        const all: (Endpoint & { port: number })[] = [];
        for (const pe of endpointsForPort(se, portName, (sp.protocol ?? "TCP").toUpperCase()))
          for (const e of pe.endpoints) all.push({ ...e, port: pe.port });
        if (all.length === 0 && (se?.all.length ?? 0) > 0)
          report({
            kind: "Service",
            namespace: ns,
            name,
            reason: "NoEndpointsForPort",
            message: `port ${portName || sp.port}/${(sp.protocol ?? "TCP").toUpperCase()}: the Service has endpoints, but none serves this port (targetPort ${sp.targetPort ?? sp.port} names no port of theirs); it gets no rule`,
          });
        const toTarget = (e: Endpoint & { port: number }): Target => ({ ip: e.ip, port: e.port });
        cluster = usable(all).map(toTarget);
        local = usable(all.filter((e) => e.nodeName === cfg.nodeName)).map(toTarget);
        hasEndpoints = cluster.length > 0;
      }
      const internalLocal = spec.internalTrafficPolicy === "Local";
      const external = externallyAccessible(spec);
      const externalLocal = external && spec.externalTrafficPolicy === "Local";
      // names are unique as they are (namespace, name, protocol, port; endpoint address), and
      // at most ~180 characters, within nft's 256
      const clusterChain = `svc-${svcName}`;
      const localChain = `local-${svcName}`;
      const extChain = `ext-${svcName}`;
      const epChain = (t: Target) => `ep-${svcName}__${t.ip}/${t.port}`;
      const affSet = (t: Target) => `aff-${affinity}-${svcName}__${t.ip}/${t.port}`;
      const used = new Map<string, Target>();
      for (const t of [...cluster, ...local]) if (!t.local) hairpin.add(`${t.ip} . ${t.ip}`);
      const chooser = (targets: Target[], first: string[] = []): string[] => {
        const rules = [...first];
        if (affinity) {
          // a client seen within the timeout goes back to its endpoint; the endpoint chain records it
          for (const t of targets) used.set(epChain(t), t);
          for (const t of targets) rules.push(`ip saddr @${affSet(t)} goto ${epChain(t)}`);
          if (targets.length === 1) rules.push(`goto ${epChain(targets[0]!)}`);
          else
            rules.push(
              `numgen random mod ${targets.length} vmap { ${targets.map((t, i) => `${i} : goto ${epChain(t)}`).join(", ")} }`,
            );
        } else if (targets.length === 1)
          rules.push(`meta l4proto ${protocol} dnat to ${targets[0]!.ip}:${targets[0]!.port}`);
        else
          rules.push(
            `meta l4proto ${protocol} dnat to numgen random mod ${targets.length} map { ${targets.map((t, i) => `${i} : ${t.ip} . ${t.port}`).join(", ")} }`,
          );
        return rules;
      };
      const masqOffCluster =
        cfg.clusterCIDR && !redirect
          ? [
              `ip daddr ${clusterIP} ${protocol} dport ${sp.port} ip saddr != ${cfg.clusterCIDR} jump mark-for-masquerade`,
            ]
          : [];
      if (cluster.length) rs.chains.set(clusterChain, { rules: chooser(cluster, masqOffCluster) });
      if ((internalLocal || externalLocal) && local.length)
        rs.chains.set(localChain, { rules: chooser(local) });
      // ClusterIP
      const internal = internalLocal ? local : cluster;
      const element = `${clusterIP} . ${protocol} . ${sp.port}`;
      if (internal.length) ips.push(`${element} : goto ${internalLocal ? localChain : clusterChain}`);
      else noEpIPs.push(`${element} : ${hasEndpoints ? "drop" : "goto reject-chain"}`);
      // NodePort, external IPs, load-balancer IPs
      if (external) {
        if (hasEndpoints) {
          const rules: string[] = [];
          if (externalLocal) {
            // pods and the node itself are not external clients: they get the Cluster behaviour
            if (cfg.clusterCIDR) rules.push(`ip saddr ${cfg.clusterCIDR} goto ${clusterChain}`);
            rules.push(
              "fib saddr type local jump mark-for-masquerade",
              `fib saddr type local goto ${clusterChain}`,
            );
            rules.push(local.length ? `goto ${localChain}` : "drop");
          } else rules.push("jump mark-for-masquerade", `goto ${clusterChain}`);
          rs.chains.set(extChain, { rules });
          if (sp.nodePort) nodeports.push(`${protocol} . ${sp.nodePort} : goto ${extChain}`);
          for (const ip of extIPs) ips.push(`${ip} . ${protocol} . ${sp.port} : goto ${extChain}`);
        } else {
          if (sp.nodePort) noEpPorts.push(`${protocol} . ${sp.nodePort} : goto reject-chain`);
          for (const ip of extIPs) noEpIPs.push(`${ip} . ${protocol} . ${sp.port} : goto reject-chain`);
        }
      }
      for (const [chain, t] of used) {
        const set = affSet(t);
        rs.sets.set(set, {
          decl: `type ipv4_addr; flags dynamic,timeout; timeout ${affinity}s;`,
          elements: [],
          dynamic: true,
        });
        rs.chains.set(chain, {
          rules: [`update @${set} { ip saddr }`, `meta l4proto ${protocol} dnat to ${t.ip}:${t.port}`],
        });
      }
    }
  }
  rs.sets.get("hairpin")!.elements.push(...hairpin);
}
