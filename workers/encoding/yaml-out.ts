// YAML for responses (Accept: application/yaml): JSON data written as block YAML. The
// general-purpose `yaml` library took ~18 s to write a list of 10,000 pods, all of it on
// workerd's one thread, so any client could stall the control plane with one request. JSON
// data needs only mappings, sequences and scalars. A string is written plain only when no
// YAML reader (1.1, as Go's yaml.v2 reads, or 1.2) could take it for anything but that
// string; any other is written double-quoted as JSON writes it, which YAML reads the same.

/** Letters first, then letters, digits and _ . / - only: nothing YAML reads as syntax. */
const PLAIN = /^[A-Za-z][A-Za-z0-9_./-]*$/;
/** Words YAML 1.1 reads as booleans or null. */
const RESERVED = /^(?:y|yes|n|no|true|false|on|off|null)$/i;
/** Characters JSON leaves raw that YAML does not take raw in a double-quoted scalar. */
const UNPRINTABLE = /[\u007f-\u009f\u2028\u2029\ufeff]/;
const UNPRINTABLE_ALL = new RegExp(UNPRINTABLE.source, "g");

function text(s: string): string {
  if (PLAIN.test(s) && !RESERVED.test(s)) return s;
  const quoted = JSON.stringify(s);
  return UNPRINTABLE.test(quoted)
    ? quoted.replace(UNPRINTABLE_ALL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
    : quoted;
}

function isNested(v: unknown): v is object {
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v !== "object" || v === null) return false;
  for (const _ in v) return true;
  return false;
}

function scalar(v: unknown): string {
  if (typeof v === "string") return text(v);
  if (Array.isArray(v)) return "[]";
  if (typeof v === "object" && v !== null) return "{}";
  return String(v); // number, boolean, null
}

/**
 * Writes a non-empty mapping or sequence, one line per entry at `indent`; the first line
 * starts with `lead` instead (an enclosing sequence's "- ").
 */
function block(v: object, indent: string, lead: string, out: string[]): void {
  let prefix = lead;
  const inner = `${indent}  `;
  if (Array.isArray(v)) {
    for (const x of v) {
      if (isNested(x)) block(x, inner, `${prefix}- `, out);
      else out.push(`${prefix}- ${scalar(x)}\n`);
      prefix = indent;
    }
    return;
  }
  const o = v as Record<string, unknown>;
  for (const k in o) {
    const x = o[k];
    if (x === undefined) continue;
    if (isNested(x)) {
      out.push(`${prefix}${text(k)}:\n`);
      block(x, inner, inner, out);
    } else out.push(`${prefix}${text(k)}: ${scalar(x)}\n`);
    prefix = indent;
  }
}

/** A JSON value (as JSON.parse gives it) as a YAML document. */
export function toYaml(v: unknown): string {
  if (!isNested(v)) return `${scalar(v)}\n`;
  const out: string[] = [];
  block(v, "", "", out);
  return out.join("");
}
