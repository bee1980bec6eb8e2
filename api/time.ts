// Timestamps as Kubernetes writes them. metav1.Time is RFC 3339 in whole seconds
// (2026-11-30T15:39:11Z); metav1.MicroTime keeps six fraction digits
// (2026-11-30T15:39:11.123000Z). One place for both, used by the apiserver, the
// controllers and the node agent alike.

let stampedSecond = Number.NaN;
let stamp = "";

/**
 * metav1.Time of `ms` (default: now). The text of the last second asked for is kept: every
 * write stamps the current second (creationTimestamp, managedFields), and formatting a Date
 * took ~4 µs in workerd.
 */
export function rfc3339(ms: number = Date.now()): string {
  const second = Math.floor(ms / 1000);
  if (second !== stampedSecond) {
    stamp = new Date(second * 1000).toISOString().replace(".000Z", "Z");
    stampedSecond = second;
  }
  return stamp;
}

/** metav1.MicroTime of `ms` (default: now): milliseconds, padded to microseconds. */
export function microTime(ms: number = Date.now()): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/**
 * A timestamp a client sent, written back as metav1.Time: whole seconds, UTC. Text that is
 * not a date is kept as it came.
 */
export function wireTime(text: string): string {
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? text : rfc3339(ms);
}

/** Milliseconds of a timestamp, undefined when absent or not a date. */
export function timeOf(s: string | undefined | null): number | undefined {
  if (!s) return undefined;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : t;
}
