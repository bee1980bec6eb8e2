/** Resolves an IntOrString against a total (upstream GetScaledValueFromIntOrPercent). */
export function scaledValue(v: number | string | undefined | null, total: number, roundUp: boolean): number {
  if (v === undefined || v === null) return 0;
  if (typeof v === "number") return v;
  const m = /^(-?\d+)%$/.exec(v);
  if (!m) {
    const n = Number(v);
    if (Number.isInteger(n)) return n;
    throw new Error(`invalid value for IntOrString: invalid value "${v}"`);
  }
  const x = (Number(m[1]) * total) / 100;
  return roundUp ? Math.ceil(x) : Math.floor(x);
}
