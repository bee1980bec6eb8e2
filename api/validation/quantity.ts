// resource.Quantity parsing, enough to compare and sum quantities ("100m", "1Gi", "2e3").

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
const QUANTITY = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;

export const QUANTITY_FORMAT_MESSAGE =
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/** The value in base units, or undefined when the text is not a quantity. */
export function parseQuantity(q: unknown): number | undefined {
  if (typeof q === "number") return Number.isFinite(q) ? q : undefined;
  if (typeof q !== "string") return undefined;
  const m = QUANTITY.exec(q.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  const suffix = m[2] ?? "";
  if (suffix in BINARY) return n * BINARY[suffix];
  if (suffix in DECIMAL) return n * DECIMAL[suffix];
  if (/^[eE]/.test(suffix)) return n * 10 ** Number(suffix.slice(1));
  return undefined;
}

export function quantityIsZero(q: unknown): boolean {
  return parseQuantity(q) === 0;
}
