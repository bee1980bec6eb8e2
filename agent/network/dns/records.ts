// The cluster's DNS records, with the semantics of CoreDNS's kubernetes plugin (the records
// the Kubernetes DNS specification asks for):
//   <svc>.<ns>.svc.<zone>              A: the ClusterIP; headless: the ready endpoints' IPs;
//                                      ExternalName: a CNAME to the external name
//   <ep>.<svc>.<ns>.svc.<zone>         A: an endpoint by hostname (StatefulSet pods with
//                                      subdomain) or by its dashed IP (10-244-0-5)
//   _<port>._<proto>.<svc>.<ns>.svc... SRV for a named port (per endpoint when headless)
//   <svc>.<ns>.svc.<zone> SRV          every port of the Service
//   <a-b-c-d>.<ns>.pod.<zone>          A: a.b.c.d (CoreDNS's "pods insecure", kubeadm's default)
//   <reversed>.in-addr.arpa            PTR: a Service's name for its ClusterIP, an endpoint's
//                                      name for its IP, and (beyond CoreDNS) a pod's dashed
//                                      name under pod.<zone> for any other pod IP
// A name in the zone that has no record is NXDOMAIN; a name that exists without a record of
// the asked type is NODATA; both carry the zone's SOA. TTL 5 s, as CoreDNS's default.

import { type Endpoint, groupSlices, type ServiceEndpoints } from "../endpoints";
import type { ClusterState } from "../state";
import { type Cidr, cidrContains, isIPv4, keyOf, podIPv4, type Service } from "../types";

export const TTL = 5;

/** A resource record: an address or a name, or an SRV's or SOA's fields, by type. */
export type Rr = { name: string; ttl: number } & (
  | { type: "A" | "CNAME" | "PTR"; data: string }
  | { type: "SRV"; data: { priority: number; weight: number; port: number; target: string } }
  | {
      type: "SOA";
      data: {
        mname: string;
        rname: string;
        serial: number;
        refresh: number;
        retry: number;
        expire: number;
        minimum: number;
      };
    }
);

export interface Answer {
  /** 0 NOERROR, 3 NXDOMAIN */
  rcode: 0 | 3;
  answers: Rr[];
  additionals: Rr[];
  authorities: Rr[];
}

/** Not ours: ask the node's upstream resolver. */
export const FORWARD = Symbol("forward");

interface Indexed {
  version: number;
  services: Map<string, Service>;
  endpoints: Map<string, ServiceEndpoints>;
  namespaces: Set<string> | undefined;
  /** reverse names by IP */
  ptr: Map<string, string>;
  pods: Map<string, string>;
}

const dashed = (ip: string) => ip.replaceAll(".", "-");

/** An endpoint's DNS label: its hostname, else its dashed IP (CoreDNS's default endpoint name mode). */
export const endpointLabel = (e: Endpoint): string => e.hostname || dashed(e.ip);

export class ClusterDns {
  private index: Indexed | undefined;

  constructor(
    private readonly state: ClusterState,
    readonly zone: string,
    /** the ranges whose reverse names are ours (service and cluster CIDRs) */
    private readonly reverseRanges: () => Cidr[],
  ) {}

  private get idx(): Indexed {
    if (this.index?.version === this.state.version) return this.index;
    const services = new Map<string, Service>();
    for (const s of this.state.list("services")) services.set(keyOf(s), s);
    const endpoints = groupSlices(this.state.list("endpointslices"));
    const nsCache = this.state.caches.get("namespaces");
    const namespaces = nsCache
      ? new Set([...nsCache.values()].map((n) => n.metadata?.name as string))
      : undefined;
    const ptr = new Map<string, string>();
    // endpoints first, so that a ClusterIP's own name wins over anything else
    for (const [key, se] of endpoints) {
      const svc = services.get(key);
      if (!svc) continue;
      const [ns, name] = key.split("/");
      for (const e of se.all)
        if (!ptr.has(e.ip)) ptr.set(e.ip, `${endpointLabel(e)}.${name}.${ns}.svc.${this.zone}`);
    }
    for (const [key, s] of services) {
      const ip = s.spec?.clusterIP;
      const [ns, name] = key.split("/");
      if (isIPv4(ip)) ptr.set(ip, `${name}.${ns}.svc.${this.zone}`);
    }
    const pods = new Map<string, string>();
    for (const p of this.state.list("pods")) {
      const ip = podIPv4(p);
      if (ip && !p.spec?.hostNetwork) pods.set(ip, `${dashed(ip)}.${p.metadata?.namespace}.pod.${this.zone}`);
    }
    this.index = { version: this.state.version, services, endpoints, namespaces, ptr, pods };
    return this.index;
  }

  soa(): Rr {
    return {
      name: this.zone,
      type: "SOA",
      ttl: TTL,
      data: {
        mname: `ns.dns.${this.zone}`,
        rname: `hostmaster.${this.zone}`,
        serial: Math.floor(Date.now() / 1000) >>> 0,
        refresh: 7200,
        retry: 1800,
        expire: 86400,
        minimum: TTL,
      },
    };
  }

  private none(rcode: 0 | 3): Answer {
    return { rcode, answers: [], additionals: [], authorities: [this.soa()] };
  }

  /** The answer for one question; FORWARD when the name is not the cluster's. */
  answer(qname: string, qtype: string): Answer | typeof FORWARD {
    const name = qname.toLowerCase().replace(/\.$/, "");
    if (name.endsWith(".in-addr.arpa")) return this.reverse(name, qtype);
    if (name !== this.zone && !name.endsWith(`.${this.zone}`)) return FORWARD;
    const labels = name === this.zone ? [] : name.slice(0, -this.zone.length - 1).split(".");
    if (labels.length === 0)
      return qtype === "SOA" ? { ...this.none(0), answers: [this.soa()], authorities: [] } : this.none(0);
    const kind = labels[labels.length - 1];
    if (kind === "pod") return this.pod(name, labels.slice(0, -1), qtype);
    if (kind !== "svc") return this.none(3);
    return this.service(name, labels.slice(0, -1), qtype);
  }

  private pod(name: string, labels: string[], qtype: string): Answer {
    if (labels.length === 0) return this.none(0); // pod.<zone> exists
    if (labels.length === 1) return this.namespaceExists(labels[0]!) ? this.none(0) : this.none(3);
    if (labels.length !== 2) return this.none(3);
    const ip = labels[0]!.replaceAll("-", ".");
    if (!isIPv4(ip) || !this.namespaceExists(labels[1]!)) return this.none(3);
    if (qtype !== "A" && qtype !== "ANY") return this.none(0);
    return { rcode: 0, answers: [{ name, type: "A", ttl: TTL, data: ip }], additionals: [], authorities: [] };
  }

  private namespaceExists(ns: string): boolean {
    const known = this.idx.namespaces;
    return known ? known.has(ns) : true;
  }

  private service(name: string, labels: string[], qtype: string): Answer {
    const idx = this.idx;
    if (labels.length === 0) return this.none(0); // svc.<zone>
    const ns = labels[labels.length - 1]!;
    if (!this.namespaceExists(ns)) return this.none(3);
    if (labels.length === 1) return this.none(0); // <ns>.svc.<zone>
    const svcName = labels[labels.length - 2]!;
    const svc = idx.services.get(`${ns}/${svcName}`);
    if (!svc) return this.none(3);
    const se = idx.endpoints.get(`${ns}/${svcName}`);
    const base = `${svcName}.${ns}.svc.${this.zone}`;
    const rest = labels.slice(0, -2);
    const headless = svc.spec?.clusterIP === "None";
    const publishNotReady = svc.spec?.publishNotReadyAddresses === true;
    const eps = (se?.all ?? []).filter((e) => e.ready || publishNotReady);
    if (rest.length === 0) {
      if (svc.spec?.type === "ExternalName") {
        const target = String(svc.spec.externalName ?? "").replace(/\.$/, "");
        return {
          rcode: 0,
          answers: [{ name, type: "CNAME", ttl: TTL, data: target }],
          additionals: [],
          authorities: [],
        };
      }
      if (qtype === "SRV") return this.srv(name, svc, se, eps, undefined, undefined);
      if (headless) {
        if (eps.length === 0) return this.none(3);
        if (qtype !== "A" && qtype !== "ANY") return this.none(0);
        return { rcode: 0, answers: eps.map((e) => a(name, e.ip)), additionals: [], authorities: [] };
      }
      const ip = svc.spec?.clusterIP;
      if (!isIPv4(ip)) return this.none(3);
      if (qtype !== "A" && qtype !== "ANY") return this.none(0);
      return { rcode: 0, answers: [a(name, ip)], additionals: [], authorities: [] };
    }
    if (rest.length === 1) {
      // an endpoint of the Service
      const label = rest[0]!;
      const hits = eps.filter((e) => endpointLabel(e) === label);
      if (hits.length === 0) return this.none(3);
      if (qtype !== "A" && qtype !== "ANY") return this.none(0);
      return { rcode: 0, answers: hits.map((e) => a(name, e.ip)), additionals: [], authorities: [] };
    }
    if (rest.length === 2 && rest[0]!.startsWith("_") && rest[1]!.startsWith("_")) {
      const port = rest[0]!.slice(1);
      const proto = rest[1]!.slice(1);
      const has = (svc.spec?.ports ?? []).some(
        (p) => p.name === port && (p.protocol ?? "TCP").toLowerCase() === proto,
      );
      if (!has) return this.none(3);
      if (qtype === "SRV") return this.srv(name, svc, se, eps, port, proto);
      if (qtype !== "A" && qtype !== "ANY") return this.none(0);
      if (headless)
        return { rcode: 0, answers: eps.map((e) => a(name, e.ip)), additionals: [], authorities: [] };
      const ip = svc.spec?.clusterIP;
      return isIPv4(ip)
        ? { rcode: 0, answers: [a(name, ip)], additionals: [], authorities: [] }
        : this.none(3);
    }
    void base;
    return this.none(3);
  }

  /** SRV records: the Service's own name for a ClusterIP Service, each endpoint's name for a headless one. */
  private srv(
    name: string,
    svc: Service,
    se: ServiceEndpoints | undefined,
    eps: Endpoint[],
    portName: string | undefined,
    proto: string | undefined,
  ): Answer {
    const ns = svc.metadata?.namespace;
    const base = `${svc.metadata?.name}.${ns}.svc.${this.zone}`;
    const ports = (svc.spec?.ports ?? []).filter(
      (p) => portName === undefined || (p.name === portName && (p.protocol ?? "TCP").toLowerCase() === proto),
    );
    const answers: Rr[] = [];
    const additionals: Rr[] = [];
    if (svc.spec?.clusterIP === "None") {
      for (const p of ports) {
        const pe = se?.ports.get(`${p.name ?? ""}/${p.protocol ?? "TCP"}`);
        for (const e of eps) {
          const target = `${endpointLabel(e)}.${base}`;
          answers.push(srvRr(name, pe?.port ?? Number(p.targetPort ?? p.port), target));
          if (!additionals.some((x) => x.name === target)) additionals.push(a(target, e.ip));
        }
      }
    } else if (isIPv4(svc.spec?.clusterIP)) {
      for (const p of ports) answers.push(srvRr(name, p.port, base));
      if (answers.length) additionals.push(a(base, svc.spec!.clusterIP!));
    }
    if (!answers.length) return this.none(svc.spec?.clusterIP === "None" && eps.length === 0 ? 3 : 0);
    // CoreDNS's weights: 100 shared among the records of one priority
    const weight = Math.max(1, Math.floor(100 / answers.length));
    for (const r of answers) if (r.type === "SRV") r.data.weight = weight;
    return { rcode: 0, answers, additionals, authorities: [] };
  }

  private reverse(name: string, qtype: string): Answer | typeof FORWARD {
    const parts = name.slice(0, -".in-addr.arpa".length).split(".");
    if (parts.length !== 4) return FORWARD;
    const ip = parts.reverse().join(".");
    if (!isIPv4(ip)) return FORWARD;
    const idx = this.idx;
    const target = idx.ptr.get(ip) ?? idx.pods.get(ip);
    if (!target) return this.reverseRanges().some((c) => cidrContains(c, ip)) ? this.none(3) : FORWARD;
    if (qtype !== "PTR" && qtype !== "ANY") return this.none(0);
    return {
      rcode: 0,
      answers: [{ name, type: "PTR", ttl: TTL, data: target }],
      additionals: [],
      authorities: [],
    };
  }
}

const a = (name: string, ip: string): Rr => ({ name, type: "A", ttl: TTL, data: ip });
const srvRr = (name: string, port: number, target: string): Rr => ({
  name,
  type: "SRV",
  ttl: TTL,
  data: { priority: 0, weight: 100, port, target },
});
