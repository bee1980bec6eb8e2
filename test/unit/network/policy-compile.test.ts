// NetworkPolicy into the node's table: the chains of the local pods that policies select,
// their allow rules (pod and namespace selectors, ipBlock with except, ports with named ports
// and endPort), and default deny.
import { describe, expect, it } from "vitest";
import { addPolicies, policyTypes } from "../../../agent/network/policy/compile";
import { emptyRuleset } from "../../../agent/network/proxier/ruleset";

const pod = (
  ns: string,
  name: string,
  ip: string,
  labels: Record<string, string>,
  node = "n1",
  ports: any[] = [],
) => ({
  metadata: { namespace: ns, name, labels },
  spec: { nodeName: node, containers: [{ name: "c", ports }] },
  status: { phase: "Running", podIP: ip },
});
const pods = [
  pod("ns", "web", "10.244.0.5", { app: "web" }, "n1", [
    { name: "http", containerPort: 8080, protocol: "TCP" },
  ]),
  pod("ns", "client", "10.244.0.6", { app: "client" }),
  pod("ns", "remote-client", "10.244.1.6", { app: "client" }, "n2"),
  pod("other", "mon", "10.244.1.9", { app: "mon" }, "n2", [
    { name: "http", containerPort: 9090, protocol: "TCP" },
  ]),
];
const namespaces = [
  { metadata: { name: "ns", labels: {} } },
  { metadata: { name: "other", labels: { team: "ops" } } },
];
const policy = (name: string, spec: any, ns = "ns") => ({ metadata: { namespace: ns, name }, spec });

function compile(policies: any[], report: any = () => {}) {
  const rs = emptyRuleset("t");
  addPolicies(rs, "n1", policies, pods, namespaces, report);
  return rs;
}

describe("NetworkPolicy compile", () => {
  it("policyTypes default: Ingress, plus Egress when there are egress rules", () => {
    expect(policyTypes(policy("a", { podSelector: {} }) as any)).toEqual(["ingress"]);
    expect(policyTypes(policy("a", { podSelector: {}, egress: [{}] }) as any)).toEqual(["ingress", "egress"]);
    expect(policyTypes(policy("a", { podSelector: {}, policyTypes: ["Egress"] }) as any)).toEqual(["egress"]);
  });

  it("deny all ingress: every local pod of the namespace gets a chain that drops", () => {
    const rs = compile([policy("deny", { podSelector: {}, policyTypes: ["Ingress"] })]);
    expect(rs.sets.get("policy-ingress")!.elements.sort()).toEqual([
      "10.244.0.5 : jump policy-in-10.244.0.5",
      "10.244.0.6 : jump policy-in-10.244.0.6",
    ]);
    expect(rs.chains.get("policy-in-10.244.0.5")!.rules).toEqual(["drop"]);
    expect(rs.chains.get("policy-forward")!.rules[0]).toBe("ct state established,related accept");
  });

  it("allow from pods by label, from namespaces by label, on a named port; the union of policies", () => {
    const rs = compile([
      policy("deny", { podSelector: {}, policyTypes: ["Ingress"] }),
      policy("allow", {
        podSelector: { matchLabels: { app: "web" } },
        ingress: [
          { from: [{ podSelector: { matchLabels: { app: "client" } } }], ports: [{ port: "http" }] },
          {
            from: [{ namespaceSelector: { matchLabels: { team: "ops" } } }],
            ports: [{ port: 8000, endPort: 8100, protocol: "TCP" }],
          },
        ],
      }),
    ]);
    expect(rs.chains.get("policy-in-10.244.0.5")!.rules).toEqual([
      "ip saddr { 10.244.0.6, 10.244.1.6 } meta l4proto tcp th dport 8080 return",
      "ip saddr 10.244.1.9 meta l4proto tcp th dport 8000-8100 return",
      "drop",
    ]);
    // the client is selected by "deny" only: no allow rule
    expect(rs.chains.get("policy-in-10.244.0.6")!.rules).toEqual(["drop"]);
  });

  it("egress: ipBlock with except, and a named port of the destination pods", () => {
    const rs = compile([
      policy("out", {
        podSelector: { matchLabels: { app: "client" } },
        policyTypes: ["Egress"],
        egress: [
          { to: [{ ipBlock: { cidr: "10.0.0.0/8", except: ["10.244.0.0/16", "10.244.1.0/24"] } }] },
          { to: [{ namespaceSelector: {} }], ports: [{ port: "http" }] },
        ],
      }),
    ]);
    expect(rs.sets.get("policy-egress")!.elements).toEqual(["10.244.0.6 : jump policy-out-10.244.0.6"]);
    expect(rs.chains.get("policy-out-10.244.0.6")!.rules).toEqual([
      "ip daddr 10.0.0.0/8 ip daddr != 10.244.0.0/16 return",
      "meta l4proto tcp ip daddr . th dport { 10.244.0.5 . 8080, 10.244.1.9 . 9090 } return",
      "drop",
    ]);
  });

  it("a selector that matches nothing allows nothing; an invalid ipBlock is reported and allows nothing", () => {
    const problems: any[] = [];
    const rs = compile(
      [
        policy("p", {
          podSelector: { matchLabels: { app: "web" } },
          ingress: [
            {
              from: [
                { podSelector: { matchLabels: { app: "nobody" } } },
                { ipBlock: { cidr: "not-a-cidr" } },
              ],
            },
          ],
        }),
      ],
      (p: any) => problems.push(p),
    );
    expect(rs.chains.get("policy-in-10.244.0.5")!.rules).toEqual(["drop"]);
    expect(problems).toEqual([
      expect.objectContaining({ namespace: "ns", name: "p", reason: "InvalidIPBlock" }),
    ]);
  });

  it("an empty rule allows everything; pods on other nodes get no chains here", () => {
    const rs = compile([
      policy("all", { podSelector: {}, ingress: [{}] }),
      policy("o", { podSelector: {} }, "other"),
    ]);
    expect(rs.chains.get("policy-in-10.244.0.5")!.rules).toEqual(["return", "drop"]);
    expect(rs.chains.has("policy-in-10.244.1.9")).toBe(false);
  });
});
