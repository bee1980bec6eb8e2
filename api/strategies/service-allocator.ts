// What a Service holds that no other Service may hold: its cluster IP and its node ports.
// The services store shard runs this inside its single-threaded commit path, so picking a
// free value and storing the object are one atomic step (upstream keeps the same ledger
// as bitmaps in etcd). Ranges are upstream's flags: --service-cluster-ip-range
// (EDGEPLANE_SERVICE_CIDR, kubeadm's 10.96.0.0/12 by default) and
// --service-node-port-range (EDGEPLANE_SERVICE_NODE_PORT_RANGE, 30000-32767).
import { field, type StatusCause } from "../errors";
import type { Allocator, AllocatorContext } from "../resource";
import type { KubeObject } from "../types";
import { isIPv4 } from "../validation/names";

const DEFAULT_CIDR = "10.96.0.0/12";
const DEFAULT_PORTS = "30000-32767";

/** A range of integers [first, last] with upstream's static band at its bottom. */
interface Range {
  first: number;
  last: number;
  /** values below first + staticBand are handed out only once the rest is full */
  staticBand: number;
}

export interface IPRange extends Range {
  cidr: string;
}

const ipToInt = (ip: string): number => ip.split(".").reduce((n, octet) => n * 256 + Number(octet), 0);

const intToIp = (n: number): string => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");

/** Parses an IPv4 CIDR; null when it is not one. Network and broadcast addresses are excluded. */
export function parseServiceCIDR(cidr: string): IPRange | null {
  const m = /^(\d+\.\d+\.\d+\.\d+)\/(\d+)$/.exec(cidr.trim());
  if (!m || !isIPv4(m[1]!)) return null;
  const bits = Number(m[2]);
  if (bits < 8 || bits > 30) return null;
  const size = 2 ** (32 - bits);
  const base = ipToInt(m[1]!) - (ipToInt(m[1]!) % size);
  // upstream's band: size/16, at least 16 and at most 256 addresses
  const staticBand = Math.min(Math.max(16, Math.floor(size / 16)), 256);
  return { cidr: `${intToIp(base)}/${bits}`, first: base + 1, last: base + size - 2, staticBand };
}

export function parsePortRange(spec: string): Range | null {
  const m = /^(\d+)-(\d+)$/.exec(spec.trim());
  if (!m) return null;
  const first = Number(m[1]);
  const last = Number(m[2]);
  if (first < 1 || last > 65535 || first > last) return null;
  // upstream's band for node ports: size/32, at least 16 and at most 128 ports
  const staticBand = Math.min(Math.max(16, Math.floor((last - first + 1) / 32)), 128);
  return { first, last, staticBand };
}

const ranges = new Map<string, { ips: IPRange; ports: Range }>();

/** The settings the ranges come from (Worker variables). */
export interface RangeSettings {
  EDGEPLANE_SERVICE_CIDR?: string;
  EDGEPLANE_SERVICE_NODE_PORT_RANGE?: string;
}

/** The configured ranges (a bad setting falls back to the default, as a typo must not stop the store). */
export function serviceRanges(env: RangeSettings): { ips: IPRange; ports: Range } {
  const cidr = env.EDGEPLANE_SERVICE_CIDR || DEFAULT_CIDR;
  const ports = env.EDGEPLANE_SERVICE_NODE_PORT_RANGE || DEFAULT_PORTS;
  const key = `${cidr} ${ports}`;
  let r = ranges.get(key);
  if (!r) {
    r = {
      ips: parseServiceCIDR(cidr) ?? parseServiceCIDR(DEFAULT_CIDR)!,
      ports: parsePortRange(ports) ?? parsePortRange(DEFAULT_PORTS)!,
    };
    ranges.set(key, r);
  }
  return r;
}

/** The address the "kubernetes" Service of the default namespace gets: the range's first. */
export function apiserverServiceIP(env: RangeSettings): string {
  return intToIp(serviceRanges(env).ips.first);
}

/**
 * A free value of the range: random in the dynamic band first, then the static band;
 * null when every value is taken.
 */
function pick(r: Range, free: (n: number) => boolean): number | null {
  const lowEnd = Math.min(r.first + r.staticBand, r.last + 1);
  const bands: [number, number][] = [
    [lowEnd, r.last],
    [r.first, lowEnd - 1],
  ];
  for (const [lo, hi] of bands) {
    const size = hi - lo + 1;
    if (size <= 0) continue;
    for (let i = 0; i < 32; i++) {
      const n = lo + Math.floor(Math.random() * size);
      if (free(n)) return n;
    }
    const start = Math.floor(Math.random() * size);
    for (let i = 0; i < size; i++) {
      const n = lo + ((start + i) % size);
      if (free(n)) return n;
    }
  }
  return null;
}

const arr = (v: unknown): any[] => (Array.isArray(v) ? v : []);
const goStrings = (v: string[]) => `[]string{${v.map((s) => JSON.stringify(s)).join(", ")}}`;

const needsClusterIP = (spec: any) => spec.type !== "ExternalName" && spec.clusterIP !== "None";
const needsNodePorts = (spec: any) =>
  spec.type === "NodePort" || (spec.type === "LoadBalancer" && spec.allocateLoadBalancerNodePorts !== false);
const needsHealthCheckPort = (spec: any) =>
  spec.type === "LoadBalancer" && spec.externalTrafficPolicy === "Local";

const ipKey = (ip: string) => `ip:${ip}`;
const portKey = (port: number) => `port:${port}`;

function allocateClusterIP(spec: any, old: any, ctx: AllocatorContext, causes: StatusCause[]): void {
  const { ips } = serviceRanges(ctx.env);
  const asked: string | undefined = arr(spec.clusterIPs)[0] || spec.clusterIP || undefined;
  if (!asked) {
    const n = pick(ips, (i) => !ctx.taken(ipKey(intToIp(i))));
    if (n === null) {
      causes.push({
        type: "FieldValueInvalid",
        field: "spec.clusterIPs",
        message: "Internal error: failed to allocate a serviceIP: range is full",
      });
      return;
    }
    spec.clusterIP = intToIp(n);
    spec.clusterIPs = [spec.clusterIP];
    return;
  }
  spec.clusterIP = asked;
  spec.clusterIPs = [asked];
  const held = old && needsClusterIP(old) && (arr(old.clusterIPs)[0] || old.clusterIP) === asked;
  if (held) return;
  const fail = (why: string) =>
    causes.push(
      field.invalidShown("spec.clusterIPs", goStrings([asked]), `failed to allocate IP ${asked}: ${why}`),
    );
  if (!isIPv4(asked) || ipToInt(asked) < ips.first || ipToInt(asked) > ips.last)
    fail(`provided IP is not in the valid range. The range of valid IPs is ${ips.cidr}`);
  else if (ctx.taken(ipKey(asked))) fail("provided IP is already allocated");
}

function allocateNodePorts(spec: any, old: any, ctx: AllocatorContext, causes: StatusCause[]): void {
  const { ports: range } = serviceRanges(ctx.env);
  const oldPorts = new Set<number>(
    old ? [...arr(old.ports).map((p) => p?.nodePort), old.healthCheckNodePort].filter(Boolean) : [],
  );
  // the node ports this object claims in this write, so that two of its ports do not get one
  const mine = new Set<number>();
  const inRange = (n: number) => n >= range.first && n <= range.last;
  const check = (n: number, path: string) => {
    const ours = mine.has(n) || oldPorts.has(n);
    mine.add(n);
    if (ours) return;
    const why = !inRange(n)
      ? `provided port is not in the valid range. The range of valid ports is ${range.first}-${range.last}`
      : ctx.taken(portKey(n))
        ? "provided port is already allocated"
        : "";
    if (why) causes.push(field.invalid(path, n, why));
  };
  const next = (path: string): number | undefined => {
    const n = pick(range, (p) => !mine.has(p) && !oldPorts.has(p) && !ctx.taken(portKey(p)));
    if (n === null) {
      causes.push({
        type: "FieldValueInvalid",
        field: path,
        message: "Internal error: failed to allocate a nodePort: range is full",
      });
      return undefined;
    }
    mine.add(n);
    return n;
  };
  const ports = arr(spec.ports);
  // asked-for ports first, so a generated one never takes a port asked for further down
  ports.forEach((p, i) => {
    if (p?.nodePort) check(Number(p.nodePort), `spec.ports[${i}].nodePort`);
  });
  if (spec.healthCheckNodePort) check(Number(spec.healthCheckNodePort), "spec.healthCheckNodePort");
  ports.forEach((p, i) => {
    if (!p || p.nodePort) return;
    // the same port number over another protocol shares the node port, as upstream does
    const twin = ports.find((q) => q !== p && q?.port === p.port && q?.nodePort);
    p.nodePort = twin ? twin.nodePort : next(`spec.ports[${i}].nodePort`);
  });
  if (needsHealthCheckPort(spec) && !spec.healthCheckNodePort)
    spec.healthCheckNodePort = next("spec.healthCheckNodePort");
}

export const serviceAllocator: Allocator = {
  held(obj: KubeObject): string[] {
    const spec = obj.spec ?? {};
    const keys: string[] = [];
    if (needsClusterIP(spec))
      for (const ip of arr(spec.clusterIPs)) if (ip && ip !== "None") keys.push(ipKey(ip));
    for (const p of arr(spec.ports)) if (p?.nodePort) keys.push(portKey(Number(p.nodePort)));
    if (spec.healthCheckNodePort) keys.push(portKey(Number(spec.healthCheckNodePort)));
    return keys;
  },

  allocate(obj: KubeObject, old: KubeObject | undefined, ctx: AllocatorContext): StatusCause[] {
    const spec = obj.spec ?? {};
    const oldSpec = old?.spec;
    const causes: StatusCause[] = [];
    if (needsClusterIP(spec)) allocateClusterIP(spec, oldSpec, ctx, causes);
    if (needsNodePorts(spec) || needsHealthCheckPort(spec)) allocateNodePorts(spec, oldSpec, ctx, causes);
    return causes;
  },
};

/**
 * Upstream's update rules for allocated values: clusterIP and clusterIPs are kept in step
 * (a change to the singular field alone moves the list), a replace that leaves them out keeps the
 * old ones (kubectl replace of a manifest without clusterIP), and a type change drops what
 * the new type has no use for unless the client set it anew.
 */
export function prepareServiceUpdate(obj: KubeObject, old: KubeObject): void {
  const spec = obj.spec;
  const oldSpec = old.spec;
  if (!spec || !oldSpec) return;
  // a client that only knows the singular field changed it: the list follows
  const sameList = JSON.stringify(arr(spec.clusterIPs)) === JSON.stringify(arr(oldSpec.clusterIPs));
  if (spec.clusterIP !== oldSpec.clusterIP && sameList) {
    if (spec.clusterIP) spec.clusterIPs = [spec.clusterIP];
    else delete spec.clusterIPs;
  }
  // (a list the step above moved comes with a changed singular field, so sameList still holds)
  const sameIPs = spec.clusterIP === oldSpec.clusterIP && sameList;
  if (spec.type === "ExternalName" && oldSpec.type !== "ExternalName" && sameIPs) {
    delete spec.clusterIP;
    delete spec.clusterIPs;
    delete spec.ipFamilies;
    delete spec.ipFamilyPolicy;
  } else if (spec.type !== "ExternalName" && oldSpec.type !== "ExternalName") {
    if (!spec.clusterIP && arr(spec.clusterIPs).length === 0) {
      if (oldSpec.clusterIP) spec.clusterIP = oldSpec.clusterIP;
      if (arr(oldSpec.clusterIPs).length) spec.clusterIPs = [...oldSpec.clusterIPs];
    }
  }
  const oldPort = (p: any) =>
    arr(oldSpec.ports).find((q) => q?.port === p?.port && (q?.protocol ?? "TCP") === (p?.protocol ?? "TCP"));
  if (needsNodePorts(spec)) {
    for (const p of arr(spec.ports))
      if (p && !p.nodePort && oldPort(p)?.nodePort) p.nodePort = oldPort(p).nodePort;
  } else if (needsNodePorts(oldSpec)) {
    // NodePort -> ClusterIP: the node ports go unless the client changed them
    for (const p of arr(spec.ports))
      if (p?.nodePort && oldPort(p)?.nodePort === p.nodePort) delete p.nodePort;
  }
  if (needsHealthCheckPort(spec)) {
    if (!spec.healthCheckNodePort && oldSpec.healthCheckNodePort)
      spec.healthCheckNodePort = oldSpec.healthCheckNodePort;
  } else if (spec.healthCheckNodePort && spec.healthCheckNodePort === oldSpec.healthCheckNodePort) {
    delete spec.healthCheckNodePort;
  }
}
