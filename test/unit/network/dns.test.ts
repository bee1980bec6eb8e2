// The cluster DNS records (CoreDNS's kubernetes plugin semantics) from the node's caches, and
// the server answering real queries over UDP and TCP (Node's own resolver as the client),
// forwarding other names to its upstream.
import dgram from "node:dgram";
import { Resolver } from "node:dns/promises";
import * as packet from "dns-packet";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClusterDns, FORWARD } from "../../../agent/network/dns/records";
import { DnsServer } from "../../../agent/network/dns/server";
import { ClusterState } from "../../../agent/network/state";
import { parseCidr } from "../../../agent/network/types";
import { slice, svc } from "./fixtures";

function stateWith(
  objs: Partial<Record<"services" | "endpointslices" | "pods" | "namespaces", any[]>>,
): ClusterState {
  const st = new ClusterState({} as any, [], () => {});
  for (const [kind, list] of Object.entries(objs)) {
    const m = new Map<string, any>();
    for (const o of list ?? []) m.set(`${o.metadata.namespace ?? ""}/${o.metadata.name}`, o);
    st.caches.set(kind as any, m);
  }
  st.version++;
  return st;
}

const objects = {
  namespaces: [{ metadata: { name: "ns" } }, { metadata: { name: "default" } }],
  services: [
    svc("web", { clusterIP: "10.96.0.20", ports: [{ name: "http", port: 80, protocol: "TCP" }] }),
    svc("db", { clusterIP: "None", ports: [{ name: "pg", port: 5432, protocol: "TCP" }] }),
    svc("empty", { clusterIP: "None", ports: [{ port: 80, protocol: "TCP" }] }),
    svc("ext", { type: "ExternalName", externalName: "example.org" }),
  ],
  endpointslices: [
    slice("web", [{ name: "http", port: 8080, protocol: "TCP" }], [{ ip: "10.244.0.5" }]),
    slice(
      "db",
      [{ name: "pg", port: 5432, protocol: "TCP" }],
      [
        { ip: "10.244.0.7", hostname: "db-0" },
        { ip: "10.244.1.8", hostname: "db-1" },
        { ip: "10.244.1.9", hostname: "db-2", ready: false },
      ],
    ),
  ],
  pods: [
    {
      metadata: { namespace: "ns", name: "lonely" },
      spec: { nodeName: "n1" },
      status: { podIP: "10.244.2.3" },
    },
  ],
};

const dns = new ClusterDns(stateWith(objects), "cluster.local", () => [
  parseCidr("10.96.0.0/12")!,
  parseCidr("10.244.0.0/16")!,
]);
const ans = (name: string, type = "A") => {
  const a = dns.answer(name, type);
  if (a === FORWARD) throw new Error("forwarded");
  return a;
};
const data = (name: string, type = "A") => ans(name, type).answers.map((r) => r.data);

describe("cluster DNS records", () => {
  it("a Service's name is its ClusterIP; a headless Service's is its ready endpoints", () => {
    expect(data("web.ns.svc.cluster.local")).toEqual(["10.96.0.20"]);
    expect(data("WEB.ns.svc.cluster.local.")).toEqual(["10.96.0.20"]);
    expect(data("db.ns.svc.cluster.local").sort()).toEqual(["10.244.0.7", "10.244.1.8"]);
    expect(ans("web.ns.svc.cluster.local").answers[0]!.ttl).toBe(5);
  });

  it("a StatefulSet pod's hostname under its headless Service, and an endpoint's dashed IP", () => {
    expect(data("db-0.db.ns.svc.cluster.local")).toEqual(["10.244.0.7"]);
    expect(data("10-244-1-8.db.ns.svc.cluster.local")).toEqual([]); // it has a hostname: that is its name
    expect(data("db-1.db.ns.svc.cluster.local")).toEqual(["10.244.1.8"]);
    expect(ans("db-2.db.ns.svc.cluster.local").rcode).toBe(3); // not ready
  });

  it("SRV for a named port: the Service's name, or each endpoint's with its address beside", () => {
    const web = ans("_http._tcp.web.ns.svc.cluster.local", "SRV");
    expect(web.answers.map((r) => r.data)).toEqual([
      { priority: 0, weight: 100, port: 80, target: "web.ns.svc.cluster.local" },
    ]);
    const db = ans("_pg._tcp.db.ns.svc.cluster.local", "SRV");
    expect(db.answers.map((r) => r.data.target).sort()).toEqual([
      "db-0.db.ns.svc.cluster.local",
      "db-1.db.ns.svc.cluster.local",
    ]);
    expect(db.answers.every((r) => r.data.port === 5432 && r.data.weight === 50)).toBe(true);
    expect(db.additionals.map((r) => r.data).sort()).toEqual(["10.244.0.7", "10.244.1.8"]);
    expect(ans("_nope._tcp.web.ns.svc.cluster.local", "SRV").rcode).toBe(3);
    expect(ans("_http._udp.web.ns.svc.cluster.local", "SRV").rcode).toBe(3);
  });

  it("PTR: a ClusterIP names its Service, an endpoint its name, any other pod its pod name", () => {
    expect(data("20.0.96.10.in-addr.arpa", "PTR")).toEqual(["web.ns.svc.cluster.local"]);
    expect(data("7.0.244.10.in-addr.arpa", "PTR")).toEqual(["db-0.db.ns.svc.cluster.local"]);
    expect(data("3.2.244.10.in-addr.arpa", "PTR")).toEqual(["10-244-2-3.ns.pod.cluster.local"]);
    expect(ans("99.2.244.10.in-addr.arpa", "PTR").rcode).toBe(3); // in the cluster's ranges, unknown
    expect(dns.answer("1.1.168.192.in-addr.arpa", "PTR")).toBe(FORWARD);
  });

  it("NXDOMAIN for names in the zone that do not exist, NODATA for another type of a name that does", () => {
    for (const n of [
      "nope.ns.svc.cluster.local",
      "web.nons.svc.cluster.local",
      "empty.ns.svc.cluster.local",
      "x.y.cluster.local",
    ]) {
      const a = ans(n);
      expect(a.rcode, n).toBe(3);
      expect(a.authorities[0]!.type).toBe("SOA");
    }
    const aaaa = ans("web.ns.svc.cluster.local", "AAAA");
    expect([aaaa.rcode, aaaa.answers.length, aaaa.authorities[0]!.type]).toEqual([0, 0, "SOA"]);
    expect(ans("ns.svc.cluster.local").rcode).toBe(0);
    expect(ans("cluster.local", "SOA").answers[0]!.type).toBe("SOA");
  });

  it("ExternalName is a CNAME; pods by dashed IP; other names go upstream", () => {
    expect(ans("ext.ns.svc.cluster.local").answers[0]).toMatchObject({ type: "CNAME", data: "example.org" });
    expect(data("10-244-9-9.ns.pod.cluster.local")).toEqual(["10.244.9.9"]);
    expect(ans("10-244-9-9.nons.pod.cluster.local").rcode).toBe(3);
    expect(dns.answer("example.org", "A")).toBe(FORWARD);
    expect(dns.answer("web.ns.svc.cluster.local.example.org", "A")).toBe(FORWARD);
  });

  it("sees changes at the next query", () => {
    const st = stateWith(objects);
    const live = new ClusterDns(st, "cluster.local", () => []);
    expect(live.answer("new.ns.svc.cluster.local", "A")).toMatchObject({ rcode: 3 });
    st.caches.get("services")!.set("ns/new", svc("new", { clusterIP: "10.96.0.77", ports: [{ port: 80 }] }));
    st.version++;
    expect(live.answer("new.ns.svc.cluster.local", "A")).toMatchObject({
      rcode: 0,
      answers: [{ data: "10.96.0.77" }],
    });
  });
});

describe("the DNS server", () => {
  let upstream: dgram.Socket;
  let server: DnsServer;
  const resolver = new Resolver({ timeout: 2000, tries: 1 });

  beforeAll(async () => {
    // an upstream that knows one name
    upstream = dgram.createSocket("udp4");
    upstream.on("message", (m, r) => {
      const q = packet.decode(m);
      const known = q.questions?.[0]?.name === "example.org";
      const out = packet.encode({
        type: "response",
        id: q.id,
        flags: known ? 0 : 3,
        questions: q.questions,
        answers: known ? [{ type: "A", name: "example.org", ttl: 60, data: "203.0.113.5" }] : [],
      });
      upstream.send(out, r.port, r.address);
    });
    await new Promise<void>((r) => upstream.bind(0, "127.0.0.1", () => r()));
    server = new DnsServer({ host: "127.0.0.1", port: 0, records: dns, log: () => {}, upstreams: [] });
    // the upstream listens on a port of its own: point the forwarder at it
    (server as any).upstreams.push("127.0.0.1");
    await server.start();
    const upPort = upstream.address().port;
    const send = (server as any).upstreamSock.send.bind((server as any).upstreamSock);
    (server as any).upstreamSock.send = (b: Buffer, _p: number, host: string, cb: any) =>
      send(b, upPort, host, cb);
    resolver.setServers([`127.0.0.1:${server.port}`]);
  });
  afterAll(async () => {
    await server.stop();
    upstream.close();
  });

  it("answers cluster names, says NXDOMAIN for missing ones, forwards the rest", async () => {
    expect(await resolver.resolve4("web.ns.svc.cluster.local")).toEqual(["10.96.0.20"]);
    expect((await resolver.resolveSrv("_pg._tcp.db.ns.svc.cluster.local")).map((s) => s.name).sort()).toEqual(
      ["db-0.db.ns.svc.cluster.local", "db-1.db.ns.svc.cluster.local"],
    );
    expect(await resolver.reverse("10.96.0.20")).toEqual(["web.ns.svc.cluster.local"]);
    await expect(resolver.resolve4("nope.ns.svc.cluster.local")).rejects.toMatchObject({ code: "ENOTFOUND" });
    expect(await resolver.resolve4("example.org")).toEqual(["203.0.113.5"]);
  });

  it("answers over TCP too (a truncated UDP answer's retry)", async () => {
    const { createConnection } = await import("node:net");
    const q = packet.encode({
      type: "query",
      id: 7,
      flags: packet.RECURSION_DESIRED,
      questions: [{ type: "A", name: "db.ns.svc.cluster.local" }],
    });
    const reply = await new Promise<Buffer>((resolve, reject) => {
      const s = createConnection(server.port, "127.0.0.1", () => {
        const head = Buffer.alloc(2);
        head.writeUInt16BE(q.length);
        s.write(Buffer.concat([head, q]));
      });
      let buf = Buffer.alloc(0);
      s.on("data", (d) => {
        buf = Buffer.concat([buf, d]);
        if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
          s.end();
          resolve(buf.subarray(2));
        }
      });
      s.on("error", reject);
    });
    const r = packet.decode(reply);
    expect(r.id).toBe(7);
    expect((r.answers ?? []).map((a: any) => a.data).sort()).toEqual(["10.244.0.7", "10.244.1.8"]);
  });
});
