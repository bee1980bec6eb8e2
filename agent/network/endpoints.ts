// EndpointSlices read the way kube-proxy and CoreDNS read them: grouped by the Service named
// in their kubernetes.io/service-name label, IPv4 only, conditions defaulted as the API
// documents them (ready unset = ready, serving unset = ready, terminating unset = false), and
// duplicates across slices merged.
import { type EndpointSlice, isIPv4, SERVICE_NAME_LABEL } from "./types";

export interface Endpoint {
  ip: string;
  ready: boolean;
  serving: boolean;
  terminating: boolean;
  nodeName?: string;
  hostname?: string;
  /** the pod behind it, when the slice names one */
  podName?: string;
}

export interface PortEndpoints {
  /** the slice port's name ("" for an unnamed port) */
  name: string;
  protocol: string;
  port: number;
  endpoints: Endpoint[];
}

export interface ServiceEndpoints {
  /** every endpoint of the Service, whatever its ports */
  all: Endpoint[];
  /** by `${name}/${protocol}` */
  ports: Map<string, PortEndpoints>;
  /** addresses skipped as unusable, for reporting */
  rejected: string[];
}

export const portKey = (name: string | undefined, protocol: string | undefined): string =>
  `${name ?? ""}/${protocol ?? "TCP"}`;

/** The endpoints of every Service that has slices, keyed namespace/name. */
export function groupSlices(slices: Iterable<EndpointSlice>): Map<string, ServiceEndpoints> {
  const out = new Map<string, ServiceEndpoints>();
  for (const s of slices) {
    const svc = s.metadata?.labels?.[SERVICE_NAME_LABEL];
    if (!svc || s.addressType !== "IPv4") continue;
    const key = `${s.metadata?.namespace ?? ""}/${svc}`;
    let g = out.get(key);
    if (!g) out.set(key, (g = { all: [], ports: new Map(), rejected: [] }));
    const eps: Endpoint[] = [];
    for (const e of s.endpoints ?? []) {
      const ip = e.addresses?.[0];
      if (!isIPv4(ip)) {
        if (ip !== undefined) g.rejected.push(String(ip));
        continue;
      }
      const ready = e.conditions?.ready ?? true;
      const ep: Endpoint = {
        ip,
        ready,
        serving: e.conditions?.serving ?? ready,
        terminating: e.conditions?.terminating ?? false,
      };
      if (e.nodeName) ep.nodeName = e.nodeName;
      if (e.hostname) ep.hostname = e.hostname;
      if (e.targetRef?.kind === "Pod" && e.targetRef.name) ep.podName = e.targetRef.name;
      eps.push(ep);
    }
    merge(g.all, eps);
    for (const p of s.ports ?? []) {
      if (typeof p.port !== "number") continue;
      const k = portKey(p.name, p.protocol);
      let pe = g.ports.get(k);
      if (!pe)
        g.ports.set(
          k,
          (pe = { name: p.name ?? "", protocol: p.protocol ?? "TCP", port: p.port, endpoints: [] }),
        );
      // a port of one name may resolve to different numbers on different pods (named target ports)
      if (pe.port !== p.port) {
        const alt = `${k}#${p.port}`;
        let other = g.ports.get(alt);
        if (!other)
          g.ports.set(
            alt,
            (other = { name: p.name ?? "", protocol: p.protocol ?? "TCP", port: p.port, endpoints: [] }),
          );
        merge(other.endpoints, eps);
      } else merge(pe.endpoints, eps);
    }
  }
  for (const g of out.values()) {
    g.all.sort(byIP);
    for (const p of g.ports.values()) p.endpoints.sort(byIP);
  }
  return out;
}

const byIP = (a: Endpoint, b: Endpoint) => a.ip.localeCompare(b.ip);

function merge(into: Endpoint[], eps: Endpoint[]): void {
  for (const e of eps) {
    const i = into.findIndex((x) => x.ip === e.ip);
    if (i < 0) into.push(e);
    // the same address in two slices (a pod moving between them): the readier view wins
    else if (e.ready && !into[i]!.ready) into[i] = e;
  }
}

/** Every (port, endpoints) list of a Service port name and protocol, including named ports resolved differently per pod. */
export function endpointsForPort(
  se: ServiceEndpoints | undefined,
  name: string,
  protocol: string,
): PortEndpoints[] {
  if (!se) return [];
  const k = portKey(name, protocol);
  const out: PortEndpoints[] = [];
  for (const [key, pe] of se.ports) if (key === k || key.startsWith(`${k}#`)) out.push(pe);
  return out;
}
