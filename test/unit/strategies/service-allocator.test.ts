import { describe, expect, it } from "vitest";
import { findResource } from "../../../api/strategies";
import {
  apiserverServiceIP,
  parsePortRange,
  parseServiceCIDR,
  prepareServiceUpdate,
  serviceAllocator,
} from "../../../api/strategies/service-allocator";
import type { KubeObject } from "../../../api/types";

/** A ledger as the store shard keeps it, over plain objects. */
function ledger(env: Record<string, string | undefined> = {}) {
  const held = new Map<string, string>();
  const store = (obj: KubeObject) => {
    for (const [k, o] of [...held]) if (o === obj.metadata.name) held.delete(k);
    for (const k of serviceAllocator.held(obj)) held.set(k, obj.metadata.name!);
  };
  const allocate = (obj: KubeObject, old?: KubeObject) =>
    serviceAllocator.allocate(obj, old, {
      taken: (k) => held.has(k) && held.get(k) !== obj.metadata.name,
      env,
    });
  return { held, store, allocate };
}

const svc = (name: string, spec: Record<string, unknown>): KubeObject => ({
  metadata: { name, namespace: "d" },
  spec: { type: "ClusterIP", ports: [{ port: 80, protocol: "TCP" }], ...spec },
});

const toInt = (ip: string) => ip.split(".").reduce((n, o) => n * 256 + Number(o), 0);

describe("service ranges", () => {
  it("parse like the apiserver's flags", () => {
    expect(parseServiceCIDR("10.96.0.0/12")).toMatchObject({ cidr: "10.96.0.0/12", staticBand: 256 });
    expect(parseServiceCIDR("10.0.0.7/24")).toMatchObject({ cidr: "10.0.0.0/24", staticBand: 16 });
    expect(parseServiceCIDR("fd00::/108")).toBeNull();
    expect(parseServiceCIDR("10.0.0.0/31")).toBeNull();
    expect(parsePortRange("30000-32767")).toMatchObject({ first: 30000, last: 32767 });
    expect(parsePortRange("5-1")).toBeNull();
    expect(apiserverServiceIP({})).toBe("10.96.0.1");
    expect(apiserverServiceIP({ EDGEPLANE_SERVICE_CIDR: "10.43.0.0/16" })).toBe("10.43.0.1");
  });
});

describe("service allocator", () => {
  it("hands out distinct addresses from the dynamic band", () => {
    const l = ledger({ EDGEPLANE_SERVICE_CIDR: "10.0.0.0/26" });
    const ips = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const s = svc(`s${i}`, {});
      expect(l.allocate(s)).toEqual([]);
      l.store(s);
      expect(s.spec.clusterIPs).toEqual([s.spec.clusterIP]);
      ips.add(s.spec.clusterIP);
      const offset = toInt(s.spec.clusterIP) - toInt("10.0.0.0");
      expect(offset).toBeGreaterThanOrEqual(1);
      expect(offset).toBeLessThanOrEqual(62);
    }
    expect(ips.size).toBe(40);
    // 62 usable addresses, 16 of them the static band: the first 46 dynamic picks avoid it
    const low = [...ips].filter((ip) => toInt(ip) - toInt("10.0.0.0") <= 16);
    expect(low).toEqual([]);
  });

  it("refuses a taken or out-of-range address in upstream's words", () => {
    const l = ledger();
    const a = svc("a", { clusterIP: "10.96.0.10" });
    expect(l.allocate(a)).toEqual([]);
    l.store(a);
    expect(l.allocate(svc("b", { clusterIP: "10.96.0.10" }))).toEqual([
      {
        type: "FieldValueInvalid",
        field: "spec.clusterIPs",
        message:
          'Invalid value: []string{"10.96.0.10"}: failed to allocate IP 10.96.0.10: provided IP is already allocated',
      },
    ]);
    expect(l.allocate(svc("c", { clusterIP: "192.168.0.1" }))[0]?.message).toBe(
      'Invalid value: []string{"192.168.0.1"}: failed to allocate IP 192.168.0.1: provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12',
    );
    // the holder itself may keep it on update
    const again = svc("a", { clusterIP: "10.96.0.10" });
    expect(l.allocate(again, a)).toEqual([]);
  });

  it("says so when the range is full", () => {
    const l = ledger({ EDGEPLANE_SERVICE_CIDR: "10.0.0.0/30" });
    const a = svc("a", {});
    const b = svc("b", {});
    expect(l.allocate(a)).toEqual([]);
    l.store(a);
    expect(l.allocate(b)).toEqual([]);
    l.store(b);
    expect(l.allocate(svc("c", {}))[0]?.message).toContain("range is full");
  });

  it("node ports: allocated in range, shared across protocols, checked when asked for", () => {
    const l = ledger();
    const n = svc("n", {
      type: "NodePort",
      ports: [
        { name: "dns", port: 53, protocol: "UDP" },
        { name: "dns-tcp", port: 53, protocol: "TCP" },
        { name: "web", port: 80, protocol: "TCP", nodePort: 30080 },
      ],
    });
    expect(l.allocate(n)).toEqual([]);
    l.store(n);
    const [udp, tcp, web] = n.spec.ports;
    expect(udp.nodePort).toBe(tcp.nodePort);
    expect(udp.nodePort).toBeGreaterThanOrEqual(30000);
    expect(udp.nodePort).toBeLessThanOrEqual(32767);
    expect(web.nodePort).toBe(30080);
    const clash = svc("m", { type: "NodePort", ports: [{ port: 80, protocol: "TCP", nodePort: 30080 }] });
    expect(l.allocate(clash)).toEqual([
      {
        type: "FieldValueInvalid",
        field: "spec.ports[0].nodePort",
        message: "Invalid value: 30080: provided port is already allocated",
      },
    ]);
    const out = svc("o", { type: "NodePort", ports: [{ port: 80, protocol: "TCP", nodePort: 8080 }] });
    expect(l.allocate(out)[0]?.message).toBe(
      "Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-32767",
    );
  });

  it("LoadBalancer with the Local policy gets a health check port", () => {
    const l = ledger();
    const lb = svc("lb", { type: "LoadBalancer", externalTrafficPolicy: "Local" });
    expect(l.allocate(lb)).toEqual([]);
    expect(lb.spec.healthCheckNodePort).toBeGreaterThanOrEqual(30000);
    expect(lb.spec.healthCheckNodePort).not.toBe(lb.spec.ports[0].nodePort);
  });

  it("headless and ExternalName services hold nothing", () => {
    const l = ledger();
    const h = svc("h", { clusterIP: "None" });
    expect(l.allocate(h)).toEqual([]);
    expect(h.spec.clusterIP).toBe("None");
    expect(serviceAllocator.held(h)).toEqual([]);
    const e: KubeObject = { metadata: { name: "e" }, spec: { type: "ExternalName", externalName: "x.org" } };
    expect(l.allocate(e)).toEqual([]);
    expect(serviceAllocator.held(e)).toEqual([]);
  });
});

describe("service updates", () => {
  const old = svc("a", {
    type: "NodePort",
    clusterIP: "10.96.5.5",
    clusterIPs: ["10.96.5.5"],
    ports: [{ port: 80, protocol: "TCP", nodePort: 30123 }],
  });

  it("a replace without the allocated values keeps them", () => {
    const next = svc("a", { type: "NodePort", ports: [{ port: 80, protocol: "TCP" }] });
    prepareServiceUpdate(next, old);
    expect(next.spec).toMatchObject({ clusterIP: "10.96.5.5", clusterIPs: ["10.96.5.5"] });
    expect(next.spec.ports[0].nodePort).toBe(30123);
  });

  it("a type change drops what the new type has no use for", () => {
    const toClusterIP = structuredClone(old);
    toClusterIP.spec.type = "ClusterIP";
    prepareServiceUpdate(toClusterIP, old);
    expect(toClusterIP.spec.ports[0].nodePort).toBeUndefined();
    expect(toClusterIP.spec.clusterIP).toBe("10.96.5.5");
    const toExternal = structuredClone(old);
    toExternal.spec.type = "ExternalName";
    toExternal.spec.externalName = "example.org";
    prepareServiceUpdate(toExternal, old);
    expect(toExternal.spec.clusterIP).toBeUndefined();
    expect(toExternal.spec.clusterIPs).toBeUndefined();
  });
});

describe("service IP families on an IPv4 cluster", () => {
  const s = findResource("", "v1", "services")!.strategy;
  const causes = (spec: Record<string, unknown>) => {
    const o = svc("f", spec);
    s.defaults!(o);
    s.prepareForCreate!(o);
    return s.validate!(o).map((c) => `${c.field}: ${c.message}`);
  };

  it("defaults to IPv4 single stack and refuses what the cluster has not", () => {
    expect(causes({})).toEqual([]);
    expect(causes({ ipFamilyPolicy: "PreferDualStack" })).toEqual([]);
    expect(causes({ ipFamilyPolicy: "RequireDualStack" })).toEqual([
      'spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services',
    ]);
    expect(causes({ ipFamilies: ["IPv6"] })).toEqual([
      'spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster',
    ]);
    expect(causes({ ipFamilies: ["IPv4", "IPv4"] })).toEqual(['spec.ipFamilies[1]: Duplicate value: "IPv4"']);
    // a headless Service without a selector takes every family the cluster has
    const h = svc("h", { clusterIP: "None", ports: [] });
    s.defaults!(h);
    s.prepareForCreate!(h);
    expect(h.spec).toMatchObject({ ipFamilyPolicy: "RequireDualStack", ipFamilies: ["IPv4"] });
    expect(s.validate!(h)).toEqual([]);
  });
});
