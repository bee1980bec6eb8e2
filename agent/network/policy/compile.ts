// NetworkPolicy into the proxier's nftables table, as policy agents enforce it on k3s
// (kube-router) and elsewhere: a forward-hook chain that lets replies of allowed connections
// pass (conntrack established), then sends traffic from a local pod that egress policies
// isolate to that pod's egress chain and traffic to a local pod that ingress policies isolate
// to its ingress chain. Each such chain returns for what some rule of some selecting policy
// allows and drops the rest (the union of the policies, default deny for a selected pod).
// Each node enforces the policies of its own pods: egress where the connection starts,
// ingress where it arrives. Traffic between a pod and its own node (probes, the node-local
// DNS server and apiserver relay) does not cross the forward hook and is never filtered, as
// upstream leaves node traffic alone.
import type { INetworkPolicyEgressRule } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicyEgressRule";
import type { INetworkPolicyIngressRule } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicyIngressRule";
import type { Ruleset } from "../proxier/ruleset";
import {
  cidrContains,
  isIPv4,
  type Namespace,
  type NetworkPolicy,
  type Pod,
  parseCidr,
  podIPv4,
  selectorMatches,
} from "../types";

export interface PolicyProblem {
  namespace: string;
  name: string;
  reason: string;
  message: string;
}

interface PodInfo {
  pod: Pod;
  ip: string;
  ns: string;
  labels: Record<string, string>;
}

type Direction = "ingress" | "egress";

/** The policy's types, defaulted as the API does (Ingress always; Egress when it has egress rules). */
export function policyTypes(p: NetworkPolicy): Direction[] {
  const t = p.spec?.policyTypes;
  if (t?.length) return t.map((x) => x.toLowerCase() as Direction);
  return p.spec?.egress?.length ? ["ingress", "egress"] : ["ingress"];
}

/** Prefixes that do not overlap (one contained in another is dropped), for nft's interval sets. */
function disjoint(cidrs: string[]): string[] {
  const parsed = [...new Set(cidrs)].map((c) => parseCidr(c)!).filter(Boolean);
  parsed.sort((a, b) => a.bits - b.bits);
  const kept: typeof parsed = [];
  for (const c of parsed) if (!kept.some((k) => cidrContains(k, ipOf(c)))) kept.push(c);
  return kept.map((c) => c.text);
}
const ipOf = (c: { text: string }) => c.text.split("/")[0]!;

const set = (items: string[]) => (items.length === 1 ? items[0]! : `{ ${items.join(", ")} }`);

/** The container port a named port means on this pod, for a protocol. */
function namedPort(pod: Pod, name: string, protocol: string): number | undefined {
  for (const c of pod.spec?.containers ?? [])
    for (const p of c.ports ?? [])
      if (p.name === name && (p.protocol ?? "TCP") === protocol) return p.containerPort;
  return undefined;
}

export function addPolicies(
  rs: Ruleset,
  nodeName: string,
  policies: Iterable<NetworkPolicy>,
  podList: Iterable<Pod>,
  namespaceList: Iterable<Namespace>,
  report: (p: PolicyProblem) => void = () => {},
): void {
  const nsLabels = new Map<string, Record<string, string>>();
  for (const n of namespaceList) nsLabels.set(n.metadata?.name ?? "", n.metadata?.labels ?? {});
  const pods: PodInfo[] = [];
  for (const pod of podList) {
    const ip = podIPv4(pod);
    if (!ip || pod.spec?.hostNetwork) continue;
    if (pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") continue;
    pods.push({ pod, ip, ns: pod.metadata?.namespace ?? "", labels: pod.metadata?.labels ?? {} });
  }
  const local = pods.filter((p) => p.pod.spec?.nodeName === nodeName);
  const byNs = new Map<string, NetworkPolicy[]>();
  for (const p of policies) {
    const ns = p.metadata?.namespace ?? "";
    byNs.set(ns, [...(byNs.get(ns) ?? []), p]);
  }
  const ingressMap: string[] = [];
  const egressMap: string[] = [];
  const badReported = new Set<string>();
  for (const target of local) {
    for (const dir of ["egress", "ingress"] as Direction[]) {
      const selecting = (byNs.get(target.ns) ?? []).filter(
        (p) => policyTypes(p).includes(dir) && selectorMatches(p.spec?.podSelector ?? {}, target.labels),
      );
      if (selecting.length === 0) continue;
      const chain = `policy-${dir === "ingress" ? "in" : "out"}-${target.ip}`;
      const rules: string[] = [];
      const peerAddr = dir === "ingress" ? "ip saddr" : "ip daddr";
      for (const pol of selecting) {
        const polKey = `${pol.metadata?.namespace}/${pol.metadata?.name}`;
        const polRules = (dir === "ingress" ? pol.spec?.ingress : pol.spec?.egress) ?? [];
        for (const rule of polRules) {
          const peersSpec =
            dir === "ingress"
              ? (rule as INetworkPolicyIngressRule).from
              : (rule as INetworkPolicyEgressRule).to;
          // the peers as match fragments; undefined: any peer
          let podPeers: PodInfo[] | undefined;
          const blocks: { cidr: string; except: string[] }[] = [];
          if (peersSpec?.length) {
            podPeers = [];
            for (const peer of peersSpec) {
              if (peer.ipBlock) {
                const cidr = parseCidr(peer.ipBlock.cidr);
                const except = (peer.ipBlock.except ?? []).map((e: string) => parseCidr(e));
                if (!cidr || except.some((e: unknown) => !e)) {
                  if (!badReported.has(polKey)) {
                    badReported.add(polKey);
                    report({
                      namespace: pol.metadata?.namespace ?? "",
                      name: pol.metadata?.name ?? "",
                      reason: "InvalidIPBlock",
                      message: `ipBlock ${JSON.stringify(peer.ipBlock)} is not IPv4; the peer allows nothing`,
                    });
                  }
                  continue;
                }
                blocks.push({ cidr: cidr.text, except: except.map((e) => e!.text) });
                continue;
              }
              const nsSel = peer.namespaceSelector;
              const podSel = peer.podSelector;
              for (const p of pods) {
                const nsOk = nsSel
                  ? selectorMatches(nsSel, nsLabels.get(p.ns))
                  : p.ns === pol.metadata?.namespace;
                if (nsOk && (!podSel || selectorMatches(podSel, p.labels))) podPeers.push(p);
              }
            }
          }
          const peerMatches: { match: string; pods: PodInfo[] | undefined }[] = [];
          if (!peersSpec?.length) peerMatches.push({ match: "", pods: undefined });
          else {
            const ips = [...new Set((podPeers ?? []).map((p) => p.ip))];
            if (ips.length) peerMatches.push({ match: `${peerAddr} ${set(ips)} `, pods: podPeers });
            for (const b of blocks) {
              const inside = b.except.filter((e) => e !== b.cidr);
              const ex = disjoint(inside);
              peerMatches.push({
                match: `${peerAddr} ${b.cidr} ${ex.length ? `${peerAddr} != ${set(ex)} ` : ""}`,
                pods: pods.filter(
                  (p) =>
                    cidrContains(parseCidr(b.cidr)!, p.ip) &&
                    !ex.some((e) => cidrContains(parseCidr(e)!, p.ip)),
                ),
              });
            }
          }
          const ports = rule.ports;
          for (const pm of peerMatches) {
            if (!ports?.length) {
              rules.push(`${pm.match}return`.trim());
              continue;
            }
            for (const port of ports) {
              const protocol = String(port.protocol ?? "TCP");
              const l4 = protocol.toLowerCase();
              if (port.port === undefined || port.port === null) {
                rules.push(`${pm.match}meta l4proto ${l4} return`);
              } else if (typeof port.port === "number" || /^\d+$/.test(String(port.port))) {
                const range = port.endPort ? `${port.port}-${port.endPort}` : String(port.port);
                rules.push(`${pm.match}meta l4proto ${l4} th dport ${range} return`);
              } else if (dir === "ingress") {
                // a named port means the selected pod's own container port
                const n = namedPort(target.pod, String(port.port), protocol);
                if (n !== undefined) rules.push(`${pm.match}meta l4proto ${l4} th dport ${n} return`);
              } else {
                // egress to a named port: each destination pod's port of that name
                const pairs: string[] = [];
                for (const p of pm.pods ?? pods) {
                  const n = namedPort(p.pod, String(port.port), protocol);
                  if (n !== undefined) pairs.push(`${p.ip} . ${n}`);
                }
                if (pairs.length)
                  rules.push(
                    `meta l4proto ${l4} ip daddr . th dport { ${[...new Set(pairs)].join(", ")} } return`,
                  );
              }
            }
          }
        }
      }
      rules.push("drop");
      rs.chains.set(chain, { rules });
      (dir === "ingress" ? ingressMap : egressMap).push(`${target.ip} : jump ${chain}`);
    }
  }
  rs.sets.set("policy-ingress", { decl: "type ipv4_addr : verdict;", elements: ingressMap });
  rs.sets.set("policy-egress", { decl: "type ipv4_addr : verdict;", elements: egressMap });
  rs.chains.set("policy-forward", {
    hook: "type filter hook forward priority 0; policy accept;",
    rules: [
      "ct state established,related accept",
      "ip saddr vmap @policy-egress",
      "ip daddr vmap @policy-ingress",
    ],
  });
  void isIPv4;
}
