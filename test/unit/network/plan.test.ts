import { describe, expect, it } from "vitest";
import { type Peer, peerOf, planRoutes, type Self, vtepMAC } from "../../../agent/network/plan";
import { parseCIDR } from "../../../api/network";

const self = (backend: Self["backend"], vxlan = true): Self => ({
  name: "n1",
  backend,
  ip: "10.250.0.10",
  subnet: parseCIDR("10.250.0.0/27")!,
  uplink: "eth0",
  vxlanDevice: vxlan ? "edgeplane.1" : undefined,
});
const near: Peer = {
  name: "near",
  podCIDR: "10.244.1.0/24",
  ip: "10.250.0.11",
  backend: "auto",
  vtepMAC: "0a:00:00:00:00:01",
};
const far: Peer = {
  name: "far",
  podCIDR: "10.244.2.0/24",
  ip: "10.250.0.40",
  backend: "auto",
  vtepMAC: "0a:00:00:00:00:02",
};
const farGw: Peer = { name: "far-gw", podCIDR: "10.244.3.0/24", ip: "10.250.0.41", backend: "host-gw" };

describe("route planner", () => {
  it("auto: host-gw to peers on the node's subnet, VXLAN (route, neighbour, fdb) to the others", () => {
    const p = planRoutes(self("auto"), [far, near]);
    expect(p.modes).toEqual({ near: "host-gw", far: "vxlan" });
    expect(p.routes).toEqual([
      { dst: "10.244.2.0/24", via: "10.244.2.0", dev: "edgeplane.1", onlink: true },
      { dst: "10.244.1.0/24", via: "10.250.0.11", dev: "eth0" },
    ]);
    expect(p.neighbors).toEqual([{ ip: "10.244.2.0", mac: "0a:00:00:00:00:02" }]);
    expect(p.fdb).toEqual([{ mac: "0a:00:00:00:00:02", dst: "10.250.0.40" }]);
  });

  it("vxlan: every peer with a VTEP through it, one without on the subnet by host-gw", () => {
    const nearGw: Peer = { ...near, backend: "host-gw", vtepMAC: undefined };
    const p = planRoutes(
      self("vxlan"),
      [near, far, nearGw, farGw].map((x, i) => ({ ...x, name: `p${i}`, podCIDR: `10.244.${i + 1}.0/24` })),
    );
    expect(p.modes).toEqual({ p0: "vxlan", p1: "vxlan", p2: "host-gw" });
    expect(p.unreachable.map((u) => u.name)).toEqual(["p3"]);
  });

  it("host-gw: peers off the subnet are reported, not routed", () => {
    const p = planRoutes(self("host-gw", false), [near, far]);
    expect(p.modes).toEqual({ near: "host-gw" });
    expect(p.unreachable).toEqual([
      { name: "far", reason: expect.stringContaining("not on this node's subnet") },
    ]);
    expect(p.neighbors).toEqual([]);
  });

  it("none programs nothing; a peer sharing another's podCIDR is left out; the node itself too", () => {
    expect(planRoutes(self("none"), [near, far]).routes).toEqual([]);
    const twin = { ...far, name: "twin" };
    const p = planRoutes(self("auto"), [near, far, twin, { ...near, name: "n1", podCIDR: "10.244.9.0/24" }]);
    expect(Object.keys(p.modes).sort()).toEqual(["far", "near"]);
    expect(p.unreachable).toEqual([{ name: "twin", reason: expect.stringContaining("another peer's") }]);
  });

  it("takes as peers only Nodes that published a pod network and have a podCIDR", () => {
    const ann = {
      "network.edgeplane.dev/backend": "vxlan",
      "network.edgeplane.dev/public-ip": "10.250.0.40",
      "network.edgeplane.dev/vtep-mac": "0A:00:00:00:00:02",
    };
    const node = (annotations: Record<string, string>, spec: any = { podCIDR: "10.244.2.0/24" }) => ({
      metadata: { name: "x", annotations },
      spec,
    });
    expect(peerOf(node(ann))).toEqual({
      name: "x",
      podCIDR: "10.244.2.0/24",
      ip: "10.250.0.40",
      backend: "vxlan",
      vtepMAC: "0a:00:00:00:00:02",
    });
    expect(peerOf(node({}))).toBeUndefined(); // a simulated node
    expect(peerOf(node(ann, {}))).toBeUndefined(); // no podCIDR yet
    expect(peerOf(node({ ...ann, "network.edgeplane.dev/backend": "none" }))).toBeUndefined();
    expect(peerOf(node({ ...ann, "network.edgeplane.dev/vtep-mac": "nonsense" }))?.vtepMAC).toBeUndefined();
  });

  it("gives each node a fixed, locally administered unicast VTEP MAC", () => {
    const a = vtepMAC("host-1", "10.244.0.0/24");
    expect(a).toMatch(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);
    expect(a).toBe(vtepMAC("host-1", "10.244.0.0/24"));
    expect(a).not.toBe(vtepMAC("host-2", "10.244.0.0/24"));
    const first = Number.parseInt(a.slice(0, 2), 16);
    expect(first & 1).toBe(0);
    expect(first & 2).toBe(2);
  });
});
