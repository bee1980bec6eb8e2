// The API objects the network parts of the edgelet read, as kubernetes-models types, and the
// few helpers every part shares (IPv4 arithmetic, object keys).
import type { IEndpointSlice } from "kubernetes-models/discovery.k8s.io/v1/EndpointSlice";
import type { INetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import type { INamespace } from "kubernetes-models/v1/Namespace";
import type { INode } from "kubernetes-models/v1/Node";
import type { IPod } from "kubernetes-models/v1/Pod";
import type { IService } from "kubernetes-models/v1/Service";
import { fromLabelSelector, type LabelSelectorObject, matches } from "../../api/selectors";

export type Service = IService;
export type EndpointSlice = IEndpointSlice;
export type Pod = IPod;
export type Namespace = INamespace;
export type Node = INode;
export type NetworkPolicy = INetworkPolicy;

export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

/** namespace/name */
export const keyOf = (o: { metadata?: { namespace?: string; name?: string } }): string =>
  `${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

export const isIPv4 = (s: unknown): s is string => typeof s === "string" && IPV4.test(s);

export const ipToInt = (ip: string): number =>
  ip.split(".").reduce((n, octet) => n * 256 + Number(octet), 0) >>> 0;

export const intToIp = (n: number): string =>
  [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");

export interface Cidr {
  base: number;
  bits: number;
  text: string;
}

/** An IPv4 CIDR ("10.244.0.0/16"), normalized to its network address; undefined when it is not one. */
export function parseCidr(s: unknown): Cidr | undefined {
  if (typeof s !== "string") return undefined;
  const m = /^([\d.]+)\/(\d{1,2})$/.exec(s.trim());
  if (!m || !isIPv4(m[1])) return undefined;
  const bits = Number(m[2]);
  if (bits > 32) return undefined;
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  const base = (ipToInt(m[1]!) & mask) >>> 0;
  return { base, bits, text: `${intToIp(base)}/${bits}` };
}

export function cidrContains(c: Cidr, ip: string): boolean {
  if (!isIPv4(ip)) return false;
  const mask = c.bits === 0 ? 0 : (0xffffffff << (32 - c.bits)) >>> 0;
  return (ipToInt(ip) & mask) >>> 0 === c.base;
}

/** A label selector (matchLabels and matchExpressions) against labels; an empty one matches all. */
export function selectorMatches(
  sel: LabelSelectorObject | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  try {
    const parsed = fromLabelSelector(sel ?? {});
    return parsed !== null && matches(parsed, labels ?? {});
  } catch {
    return false; // an operator the API should have refused: selects nothing
  }
}

/** The pod's IPv4 address, when it has one and is not on the host network. */
export function podIPv4(p: Pod): string | undefined {
  const ip = p.status?.podIP ?? p.status?.podIPs?.[0]?.ip;
  return isIPv4(ip) ? ip : undefined;
}
