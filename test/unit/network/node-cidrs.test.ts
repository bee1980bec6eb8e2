import { describe, expect, it } from "vitest";
import {
  blockCIDR,
  blocksOf,
  networkOf,
  nodeBlocks,
  parseCIDR,
  parseNetworkConfig,
} from "../../../api/network";
import { nodeCIDRs, pairPodCIDRs, validatePodCIDRs } from "../../../api/strategies/node-cidrs";
import type { KubeObject } from "../../../api/types";

const node = (name: string, spec: Record<string, unknown> = {}): KubeObject => ({ metadata: { name }, spec });

describe("cluster CIDR blocks", () => {
  it("cuts the cluster CIDR into node blocks and finds the blocks a CIDR covers", () => {
    const b = nodeBlocks("10.244.0.0/16", 24)!;
    expect(b.count).toBe(256);
    expect(blockCIDR(b, 0)).toBe("10.244.0.0/24");
    expect(blockCIDR(b, 255)).toBe("10.244.255.0/24");
    expect(blocksOf(b, "10.244.7.0/24")).toEqual([7]);
    expect(blocksOf(b, "10.244.7.128/25")).toEqual([7]);
    expect(blocksOf(b, "10.244.4.0/22")).toEqual([4, 5, 6, 7]);
    expect(blocksOf(b, "10.88.0.0/16")).toEqual([]);
    expect(nodeBlocks("10.0.0.0/8", 30)).toBeNull(); // 2^22 blocks: a typo
    expect(nodeBlocks("10.244.0.0/16", 12)).toBeNull();
    expect(parseCIDR("10.244.1.5/24")).toEqual({ base: parseCIDR("10.244.1.0/24")!.base, bits: 24 });
    expect(parseCIDR("10.244.1.5/24", { strict: true })).toBeNull();
  });

  it("reads settings with defaults for what is missing or wrong", () => {
    expect(networkOf({}).settings).toEqual({
      clusterCIDR: "10.244.0.0/16",
      nodeCIDRMaskSize: 24,
      serviceCIDR: "10.96.0.0/12",
      backend: "auto",
      vxlanVNI: 1,
      vxlanPort: 4789,
    });
    expect(
      networkOf({ EDGEPLANE_CLUSTER_CIDR: "10.32.0.0/12", EDGEPLANE_NODE_CIDR_MASK_SIZE: "26" }).blocks.count,
    ).toBe(16384);
    expect(networkOf({ EDGEPLANE_CLUSTER_CIDR: "bogus" }).settings.clusterCIDR).toBe("10.244.0.0/16");
    expect(parseNetworkConfig({ backend: "vxlan", vxlanVNI: "x", clusterCIDR: "10.9.0.0/16" })).toMatchObject(
      {
        backend: "vxlan",
        vxlanVNI: 1,
        clusterCIDR: "10.9.0.0/16",
      },
    );
  });
});

describe("a Node's pod CIDRs", () => {
  it("pairs podCIDR and podCIDRs and validates them as upstream", () => {
    const n = node("a", { podCIDR: "10.244.1.0/24" });
    pairPodCIDRs(n);
    expect(n.spec).toEqual({ podCIDR: "10.244.1.0/24", podCIDRs: ["10.244.1.0/24"] });
    const m = node("b", { podCIDRs: ["10.244.2.0/24"] });
    pairPodCIDRs(m);
    expect(m.spec.podCIDR).toBe("10.244.2.0/24");
    expect(validatePodCIDRs(node("c", { podCIDRs: ["nope"] }), undefined)[0]?.message).toContain(
      "must be a valid CIDR value",
    );
    expect(
      validatePodCIDRs(node("c", { podCIDRs: ["10.0.0.0/24", "10.1.0.0/24"] }), undefined)[0]?.message,
    ).toContain("may specify no more than one CIDR for each IP family");
    // set once, then it stays
    expect(validatePodCIDRs(n, node("a"))).toEqual([]);
    const moved = validatePodCIDRs(node("a", { podCIDR: "10.244.9.0/24", podCIDRs: ["10.244.9.0/24"] }), n);
    expect(moved).toEqual([
      {
        type: "FieldValueForbidden",
        field: "spec.podCIDRs",
        message: 'Forbidden: node updates may not change podCIDR except from "" to valid',
      },
    ]);
  });

  it("refuses a podCIDR overlapping another node's inside the cluster CIDR, and nothing outside it", () => {
    const held = new Map<string, string>();
    const hold = (n: KubeObject) => {
      for (const k of nodeCIDRs.held(n, {})) held.set(k, n.metadata.name!);
    };
    const ctx = (self: string) => ({ env: {}, taken: (k: string) => held.has(k) && held.get(k) !== self });
    const a = node("a", { podCIDR: "10.244.1.0/24", podCIDRs: ["10.244.1.0/24"] });
    hold(a);
    expect(nodeCIDRs.allocate(node("b", { podCIDRs: ["10.244.2.0/24"] }), undefined, ctx("b"))).toEqual([]);
    const clash = nodeCIDRs.allocate(node("b", { podCIDRs: ["10.244.0.0/22"] }), undefined, ctx("b"));
    expect(clash[0]?.message).toContain("overlaps the podCIDR of another node");
    // its own update, and CIDRs outside the cluster's (the machine-shared 10.88.0.0/16 of several test agents)
    expect(nodeCIDRs.allocate(a, a, ctx("a"))).toEqual([]);
    hold(node("t1", { podCIDRs: ["10.88.0.0/16"] }));
    expect(nodeCIDRs.allocate(node("t2", { podCIDRs: ["10.88.0.0/16"] }), undefined, ctx("t2"))).toEqual([]);
  });
});
