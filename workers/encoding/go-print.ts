// A decoded JSON value printed as Go prints the same value decoded into interface{}, where an
// upstream message quotes it: fmt's %v (`map[data:map[port:8080]]`) and encoding/json's
// Marshal of a map (keys sorted, <, > and & escaped).

/** A float64 as fmt's %v writes it: the shortest digits, with an exponent below 1e-4 or from 1e6 on. */
function goFloat(v: number): string {
  if (!Number.isFinite(v)) return v > 0 ? "+Inf" : v < 0 ? "-Inf" : "NaN";
  const [digits, e] = v.toExponential().split("e");
  const exp = Number(e);
  if (exp >= -4 && exp < 6) return String(v);
  return `${digits}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
}

const INT64 = 2 ** 63;

/** An object's keys as a Go map holds them: those with a value, in sorted order. */
function mapKeys(o: Record<string, unknown>): string[] {
  return Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort();
}

/**
 * fmt's %v (and %+v) of a value as upstream's JSON decoding leaves it, numbers as whole
 * numbers kept int64 and the rest float64: maps as `map[k:v ...]` with sorted keys, lists as
 * `[a b]`, strings bare, null as `<nil>`.
 */
export function goSprint(v: unknown): string {
  if (v === null || v === undefined) return "<nil>";
  if (Array.isArray(v)) return `[${v.map(goSprint).join(" ")}]`;
  if (typeof v === "number")
    return Number.isInteger(v) && Math.abs(v) < INT64 ? BigInt(v).toString() : goFloat(v);
  if (typeof v !== "object") return String(v);
  const o = v as Record<string, unknown>;
  return `map[${mapKeys(o)
    .map((k) => `${k}:${goSprint(o[k])}`)
    .join(" ")}]`;
}

const HTML_UNSAFE = /[<>&\u2028\u2029]/g;

/** JSON with every object's keys sorted (written out: an object would put integer-like keys first). */
function marshalSorted(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map((x) => marshalSorted(x ?? null)).join(",")}]`;
  if (!v || typeof v !== "object") return JSON.stringify(v) ?? "null";
  const o = v as Record<string, unknown>;
  return `{${mapKeys(o)
    .map((k) => `${JSON.stringify(k)}:${marshalSorted(o[k])}`)
    .join(",")}}`;
}

/** encoding/json's Marshal of a decoded value: keys sorted, HTML characters escaped as \u003c. */
export function goMarshal(v: unknown): string {
  return marshalSorted(v).replace(HTML_UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
