// The control plane's side of cluster networking: endpoint addresses validated as upstream's
// ValidateEndpointIP, ServiceLB's ingress points, the kube-dns address, and the RBAC a node's
// network part reads with.
import { describe, expect, it } from "vitest";
import { bootstrapClusterRoleBindings, bootstrapClusterRoles } from "../../../api/rbac/bootstrap";
import { validateEndpointSlice } from "../../../api/strategies/endpointslices";
import { endpointIPErrors } from "../../../api/validation/endpoint-ip";
import { ingressFor } from "../../../durable-objects/controllers/service/load-balancer";
import { apiserverAddress, clusterDnsIP } from "../../../workers/cluster-network";

describe("endpoint addresses", () => {
  it("refuse unspecified, loopback and link-local addresses with upstream's words", () => {
    expect(endpointIPErrors("10.244.0.5")).toEqual([]);
    expect(endpointIPErrors("203.0.113.9")).toEqual([]); // outside the cluster: allowed, as upstream
    expect(endpointIPErrors("127.0.0.1")).toEqual([
      "may not be in the loopback range (127.0.0.0/8, ::1/128)",
    ]);
    expect(endpointIPErrors("169.254.169.254")).toEqual([
      "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
    ]);
    expect(endpointIPErrors("0.0.0.0")).toEqual(["may not be unspecified (0.0.0.0)"]);
    expect(endpointIPErrors("224.0.0.5")).toEqual([
      "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
    ]);
  });

  it("an EndpointSlice pointing at the node's loopback is 422 with the cause on the address", () => {
    const causes = validateEndpointSlice({
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { name: "s", namespace: "ns" },
      addressType: "IPv4",
      endpoints: [{ addresses: ["127.0.0.1"] }],
    } as any);
    expect(causes).toEqual([
      expect.objectContaining({
        field: "endpoints[0].addresses[0]",
        message: expect.stringContaining("loopback"),
      }),
    ]);
  });
});

describe("ServiceLB and cluster settings", () => {
  const node = (name: string, ip: string, ready = "True", extra: any = {}) => ({
    metadata: { name },
    spec: extra,
    status: {
      conditions: [{ type: "Ready", status: ready }],
      addresses: [{ type: "InternalIP", address: ip }],
    },
  });
  it("a LoadBalancer's ingress is every Ready, schedulable node's InternalIP", () => {
    expect(
      ingressFor([
        node("b", "10.250.0.2"),
        node("a", "10.250.0.1"),
        node("c", "10.250.0.3", "False"),
        node("d", "10.250.0.4", "True", { unschedulable: true }),
      ] as any),
    ).toEqual([
      { ip: "10.250.0.1", ipMode: "VIP" },
      { ip: "10.250.0.2", ipMode: "VIP" },
    ]);
  });

  it("kube-dns is the tenth address of the service range; the apiserver address parses", () => {
    expect(clusterDnsIP({} as any)).toBe("10.96.0.10");
    expect(clusterDnsIP({ EDGEPLANE_SERVICE_CIDR: "10.100.0.0/16" } as any)).toBe("10.100.0.10");
    expect(apiserverAddress({ EDGEPLANE_APISERVER_ADDRESS: "127.0.0.1:8443" } as any)).toEqual({
      host: "127.0.0.1",
      port: 8443,
    });
    expect(apiserverAddress({ EDGEPLANE_APISERVER_ADDRESS: "api.example.workers.dev:443" } as any)).toEqual({
      host: "api.example.workers.dev",
      port: 443,
    });
    expect(apiserverAddress({} as any)).toBeUndefined();
  });

  it("nodes may list what their network part reads, and nothing more", () => {
    const role = bootstrapClusterRoles().find((r) => r.metadata.name === "edgeplane:node-network")!;
    expect(
      role.rules.every((r: any) => r.verbs.every((v: string) => ["get", "list", "watch"].includes(v))),
    ).toBe(true);
    const binding = bootstrapClusterRoleBindings().find((b) => b.metadata.name === "edgeplane:node-network")!;
    expect(binding.subjects).toEqual([
      { apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "system:nodes" },
    ]);
  });
});
