// Kubernetes resource.Quantity parsing ("100m", "1Gi", "512Mi", "2", "1e3"),
// shared by the apiserver (validation, strategies, admission), the scheduler
// and the node agent. Pure TypeScript: no platform dependencies.
//
// Values are plain numbers in base units (cores, bytes, counts). Three flavours
// of parser exist because the callers treat malformed text differently:
//   parseQuantity       undefined when malformed (validation decides)
//   mustParseQuantity   throws when malformed; missing counts as 0 (scheduler)
//   quantityOrNaN       NaN when malformed; missing counts as 0 (node agent)
// parseMilli/parseValue (scheduler) and milliCPU/units (agent) round up to whole
// milli-units or whole units, approximating Quantity.MilliValue() and Quantity.Value().

const BINARY: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const DECIMAL: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

// Number, then either one suffix or a decimal exponent (never both).
const QUANTITY_RE = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE]([+-]?\d+))?$/;

/** The message upstream uses when a quantity does not parse. */
export const QUANTITY_FORMAT_MESSAGE =
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/** Parses quantity text into base units; undefined when it is not a quantity. */
function parseText(text: string): number | undefined {
  const m = QUANTITY_RE.exec(text.trim());
  if (!m) return undefined;
  const num = Number(m[1]);
  if (m[2] !== undefined) return num * (BINARY[m[2]] ?? DECIMAL[m[2]] ?? 1);
  if (m[3] !== undefined) return num * 10 ** Number(m[3]);
  return num;
}

/** The value in base units, or undefined when `q` is not a (finite) quantity. */
export function parseQuantity(q: unknown): number | undefined {
  if (typeof q === "number") return Number.isFinite(q) ? q : undefined;
  if (typeof q !== "string") return undefined;
  return parseText(q);
}

const cache = new Map<string, number>();

/** Parses a quantity into base units (missing or "" is 0). Throws on a malformed quantity. */
export function mustParseQuantity(q: string | number | undefined | null): number {
  if (q === undefined || q === null || q === "") return 0;
  if (typeof q === "number") return q;
  const hit = cache.get(q);
  if (hit !== undefined) return hit;
  const value = parseText(q);
  if (value === undefined) throw new Error(`${QUANTITY_FORMAT_MESSAGE}: ${JSON.stringify(q)}`);
  if (cache.size > 10000) cache.clear();
  cache.set(q, value);
  return value;
}

/** Parses a quantity into base units (missing is 0); NaN when malformed. */
export function quantityOrNaN(q: string | number | undefined | null): number {
  if (q === undefined || q === null) return 0;
  if (typeof q === "number") return q;
  return parseText(q) ?? Number.NaN;
}

// Two float ceilings, each kept as its caller has always rounded (neither is exact: the
// relative one drops fractions below 1e-9 of the value, e.g. 0.3Gi gives 322122547; the
// absolute one keeps float noise on large values and rounds 1n down to 0). Unifying them
// needs exact decimal arithmetic and would change scheduling/node results at the edges.

/** Ceiling that snaps to the nearest integer within 1e-9 relative (scheduler). */
export function roundUpRelative(v: number): number {
  const r = Math.round(v);
  if (Math.abs(v - r) < 1e-9 * Math.max(1, Math.abs(v))) return r;
  return Math.ceil(v);
}

/** Ceiling that forgives 1e-9 absolute of float noise (node agent). */
export function roundUpAbsolute(v: number): number {
  return Math.ceil(v - 1e-9);
}

/** Quantity in milli-units rounded up (cpu: millicores). Throws when malformed. */
export function parseMilli(q: string | number | undefined | null): number {
  return roundUpRelative(mustParseQuantity(q) * 1000);
}

/** Quantity in whole units rounded up (memory, storage: bytes; counts). Throws when malformed. */
export function parseValue(q: string | number | undefined | null): number {
  return roundUpRelative(mustParseQuantity(q));
}

/** Milli-units (`milli`) or whole units, rounded up; malformed quantities count as zero. */
export function tryParseQuantity(q: unknown, milli: boolean): number {
  try {
    return milli ? parseMilli(q as string) : parseValue(q as string);
  } catch {
    return 0;
  }
}

/** CPU quantity in millicores, rounded up; NaN when malformed. */
export function milliCPU(q: string | number | undefined | null): number {
  return roundUpAbsolute(quantityOrNaN(q) * 1000);
}

/** A whole-unit quantity (memory bytes, pods), rounded up; NaN when malformed. */
export function units(q: string | number | undefined | null): number {
  return roundUpAbsolute(quantityOrNaN(q));
}
