// Kubernetes resource quantities as the node needs them: CPU in millicores,
// everything else in whole units (bytes for memory).

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

/** Parses a quantity ("100m", "1.5", "64Mi", "1e3") to a plain number; NaN when malformed. */
export function parseQuantity(q: string | number | undefined): number {
  if (q === undefined || q === null) return 0;
  if (typeof q === "number") return q;
  const m = /^([+-]?[0-9.]+)([eE][+-]?[0-9]+)?([a-zA-Z]*)$/.exec(q.trim());
  if (!m) return Number.NaN;
  const base = Number(m[1]) * (m[2] ? 10 ** Number(m[2].slice(1)) : 1);
  const suffix = m[3] ?? "";
  if (suffix in BINARY) return base * (BINARY[suffix] as number);
  if (suffix in DECIMAL) return base * (DECIMAL[suffix] as number);
  return Number.NaN;
}

/** CPU quantity in millicores, rounded up as upstream does. */
export function milliCPU(q: string | number | undefined): number {
  return Math.ceil(parseQuantity(q) * 1000 - 1e-9);
}

/** A whole-unit quantity (memory bytes, pods), rounded up. */
export function units(q: string | number | undefined): number {
  return Math.ceil(parseQuantity(q) - 1e-9);
}
