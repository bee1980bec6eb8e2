// CIDRs as upstream's validation reads them (netutils.ParseCIDRSloppy: IPv4 octets may have
// leading zeros), and whether one is a strict subset of another (a NetworkPolicy ipBlock's
// except entries).

export const CIDR_ERROR = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

export interface Cidr {
  bits: 32 | 128;
  /** the address as a number (host bits kept: a sloppy CIDR may have them set) */
  addr: bigint;
  prefix: number;
}

function parseIPv4(s: string): bigint | undefined {
  const parts = s.split(".");
  if (parts.length !== 4) return undefined;
  let n = 0n;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return undefined;
    n = (n << 8n) | BigInt(Number(p));
  }
  return n;
}

function parseIPv6(s: string): bigint | undefined {
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  const groups = (h: string) => (h === "" ? [] : h.split(":"));
  let head = groups(halves[0]!);
  let tail = halves.length === 2 ? groups(halves[1]!) : [];
  // an IPv4 tail stands for the last two groups
  const expand = (list: string[]) => {
    const last = list[list.length - 1];
    if (!last?.includes(".")) return list;
    const v4 = parseIPv4(last);
    if (v4 === undefined) return undefined;
    return [...list.slice(0, -1), (v4 >> 16n).toString(16), (v4 & 0xffffn).toString(16)];
  };
  if (halves.length === 2) {
    const t = expand(tail);
    if (!t) return undefined;
    tail = t;
  } else {
    const h = expand(head);
    if (!h) return undefined;
    head = h;
  }
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  let n = 0n;
  for (const g of [...head, ...Array(missing).fill("0"), ...tail]) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
    n = (n << 16n) | BigInt(Number.parseInt(g, 16));
  }
  return n;
}

export function parseCidr(s: string): Cidr | undefined {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(s);
  if (!m) return undefined;
  const v4 = !m[1]!.includes(":");
  const addr = v4 ? parseIPv4(m[1]!) : parseIPv6(m[1]!);
  const bits = v4 ? 32 : 128;
  const prefix = Number(m[2]);
  if (addr === undefined || prefix > bits) return undefined;
  return { bits, addr, prefix };
}

/** Whether `inner` lies within `outer` and is smaller than it. */
export function strictSubset(inner: Cidr, outer: Cidr): boolean {
  if (inner.bits !== outer.bits || inner.prefix <= outer.prefix) return false;
  const shift = BigInt(outer.bits - outer.prefix);
  return inner.addr >> shift === outer.addr >> shift;
}
