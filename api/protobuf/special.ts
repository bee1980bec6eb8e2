// JSON forms of the apimachinery types that have custom JSON marshalling upstream:
// metav1.Time / MicroTime (RFC 3339 strings, null when zero), metav1.Duration (Go duration
// string), and []byte (standard base64).

const pad = (n: number, width: number) => String(n).padStart(width, "0");

/** Calendar fields of a Unix time in UTC; throws RangeError for years outside 0..9999. */
function utcParts(seconds: number): string {
  const d = new Date(seconds * 1000);
  const year = d.getUTCFullYear();
  if (!Number.isFinite(seconds) || Number.isNaN(d.getTime()) || year < 0 || year > 9999) {
    throw new RangeError(`time with ${seconds} seconds is outside the years 0-9999`);
  }
  return (
    `${pad(year, 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}` +
    `T${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}`
  );
}

/** metav1.Time: seconds precision, UTC, e.g. "2006-01-02T15:04:05Z"; the zero time is null. */
export function formatTime(seconds: number, nanos: number): string | null {
  if (seconds === 0 && nanos === 0) return null;
  return `${utcParts(seconds)}Z`;
}

/** metav1.MicroTime: "2006-01-02T15:04:05.000000Z"; the zero time is null. */
export function formatMicroTime(seconds: number, nanos: number): string | null {
  if (seconds === 0 && nanos === 0) return null;
  return `${utcParts(seconds)}.${pad(Math.floor(nanos / 1000), 6)}Z`;
}

/** Integer part and trimmed fraction of v / 10^prec, as Go's Duration.String prints them. */
function fraction(v: bigint, prec: number): string {
  const scale = 10n ** BigInt(prec);
  const whole = v / scale;
  let frac = (v % scale).toString().padStart(prec, "0").replace(/0+$/, "");
  if (frac) frac = `.${frac}`;
  return `${whole}${frac}`;
}

/** time.Duration.String for a nanosecond count: "1h0m0s", "1.5s", "300ms", "0s". */
export function formatDuration(nanos: number | bigint): string {
  let n = BigInt(nanos);
  const negative = n < 0n;
  if (negative) n = -n;
  let out: string;
  if (n === 0n) out = "0s";
  else if (n < 1000n) out = `${n}ns`;
  else if (n < 1_000_000n) out = `${fraction(n, 3)}µs`;
  else if (n < 1_000_000_000n) out = `${fraction(n, 6)}ms`;
  else {
    const seconds = fraction(n % 60_000_000_000n, 9);
    const totalMinutes = n / 60_000_000_000n;
    const hours = totalMinutes / 60n;
    const minutes = totalMinutes % 60n;
    if (hours > 0n) out = `${hours}h${minutes}m${seconds}s`;
    else if (minutes > 0n) out = `${minutes}m${seconds}s`;
    else out = `${seconds}s`;
  }
  return negative ? `-${out}` : out;
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Standard base64 with padding (Go's encoding/json form of []byte). */
export function toBase64(bytes: Uint8Array): string {
  let out = "";
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out += B64[n >> 18] + B64[(n >> 12) & 63] + B64[(n >> 6) & 63] + B64[n & 63];
  }
  if (i < bytes.length) {
    const rest = bytes.length - i;
    const n = (bytes[i] << 16) | (rest === 2 ? bytes[i + 1] << 8 : 0);
    out += B64[n >> 18] + B64[(n >> 12) & 63] + (rest === 2 ? B64[(n >> 6) & 63] : "=") + "=";
  }
  return out;
}
