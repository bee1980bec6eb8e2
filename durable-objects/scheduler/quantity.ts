// Kubernetes resource.Quantity parsing ("100m", "1Gi", "512Mi", "2", "1e3").
// Values are returned in base units (cores, bytes, count); the helpers below
// round up to whole milli-units or whole units the way Quantity.MilliValue()
// and Quantity.Value() do.

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
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

const QUANTITY_RE = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE]([+-]?\d+))?$/;

const cache = new Map<string, number>();

/** Parses a quantity into base units. Throws on a malformed quantity. */
export function parseQuantity(q: string | number | undefined | null): number {
  if (q === undefined || q === null || q === "") return 0;
  if (typeof q === "number") return q;
  const hit = cache.get(q);
  if (hit !== undefined) return hit;
  const m = QUANTITY_RE.exec(q.trim());
  if (!m)
    throw new Error(
      `quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': ${JSON.stringify(q)}`,
    );
  const num = Number(m[1]);
  let value: number;
  if (m[2] !== undefined) {
    value = num * (BINARY[m[2]] ?? DECIMAL[m[2]]);
  } else if (m[3] !== undefined) {
    value = num * 10 ** Number(m[3]);
  } else {
    value = num;
  }
  if (cache.size > 10000) cache.clear();
  cache.set(q, value);
  return value;
}

/** Rounds up tiny float noise away before taking the ceiling. */
function ceilClean(v: number): number {
  const r = Math.round(v);
  if (Math.abs(v - r) < 1e-9 * Math.max(1, Math.abs(v))) return r;
  return Math.ceil(v);
}

/** Quantity in milli-units rounded up (cpu: millicores). */
export function parseMilli(q: string | number | undefined | null): number {
  return ceilClean(parseQuantity(q) * 1000);
}

/** Quantity in whole units rounded up (memory, storage: bytes; counts). */
export function parseValue(q: string | number | undefined | null): number {
  return ceilClean(parseQuantity(q));
}

/** Safe variant: malformed quantities count as zero. */
export function tryParse(q: unknown, milli: boolean): number {
  try {
    return milli ? parseMilli(q as string) : parseValue(q as string);
  } catch {
    return 0;
  }
}
