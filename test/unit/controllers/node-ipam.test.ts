import { describe, expect, it } from "vitest";
import { StatusError } from "../../../api/errors";
import { lookupGVR } from "../../../api/registry";
import { createNodeIpamController } from "../../../durable-objects/controllers/node/ipam";
import { FakeCluster } from "./fake";

const cidrOf = (c: FakeCluster, name: string) => c.get("/nodes", name)?.spec?.podCIDR;

describe("node IPAM controller", () => {
  it("gives every Node without one a free block, around the blocks Nodes already hold", async () => {
    const c = new FakeCluster();
    c.add("/nodes", {
      metadata: { name: "preset" },
      spec: { podCIDR: "10.244.0.0/24", podCIDRs: ["10.244.0.0/24"] },
    });
    c.add("/nodes", {
      metadata: { name: "outside" },
      spec: { podCIDR: "10.88.0.0/16", podCIDRs: ["10.88.0.0/16"] },
    });
    for (const n of ["a", "b", "c"]) c.add("/nodes", { metadata: { name: n }, spec: {} });
    await c.run([createNodeIpamController()]);
    const got = ["a", "b", "c"].map((n) => cidrOf(c, n));
    expect(got).toEqual(["10.244.1.0/24", "10.244.2.0/24", "10.244.3.0/24"]);
    expect(c.get("/nodes", "a")?.spec.podCIDRs).toEqual(["10.244.1.0/24"]);
    expect(cidrOf(c, "outside")).toBe("10.88.0.0/16");
  });

  it("waits when the range is full (CIDRNotAvailable), and takes a deleted node's block", async () => {
    const c = new FakeCluster();
    const ipam = createNodeIpamController({ clusterCIDR: "10.10.0.0/23", nodeCIDRMaskSize: "24" });
    for (const n of ["a", "b", "c"]) c.add("/nodes", { metadata: { name: n }, spec: {} });
    await c.run([ipam]);
    expect(["a", "b", "c"].map((n) => cidrOf(c, n))).toEqual(["10.10.0.0/24", "10.10.1.0/24", undefined]);
    expect(c.events).toEqual([
      {
        name: "c",
        type: "Normal",
        reason: "CIDRNotAvailable",
        message: "Node c status is now: CIDRNotAvailable",
      },
    ]);
    await c.api.remove(lookupGVR("", "v1", "nodes")!, undefined, "a");
    await c.run([ipam]);
    expect(cidrOf(c, "c")).toBe("10.10.0.0/24");
  });

  it("never hands out a block twice: not across a restart, nor when the store knows a holder the cache missed", async () => {
    const c = new FakeCluster();
    c.add("/nodes", { metadata: { name: "a" }, spec: {} });
    await c.run([createNodeIpamController()]);
    // a fresh controller (a restarted manager) sees what the Nodes hold
    c.add("/nodes", { metadata: { name: "b" }, spec: {} });
    await c.run([createNodeIpamController()]);
    expect([cidrOf(c, "a"), cidrOf(c, "b")]).toEqual(["10.244.0.0/24", "10.244.1.0/24"]);
    // the store refuses a block another node took meanwhile: the next one is tried
    c.add("/nodes", { metadata: { name: "d" }, spec: {} });
    c.failNext = {
      verb: "update",
      error: new StatusError(
        422,
        "Invalid",
        'Node "d" is invalid: spec.podCIDRs[0]: Invalid value: "10.244.2.0/24": overlaps the podCIDR of another node',
      ),
    };
    await c.run([createNodeIpamController()]);
    expect(cidrOf(c, "d")).toBe("10.244.3.0/24");
  });
});
