// Label and field selectors: the query-string syntax (`app=web,tier in (a,b),!canary`)
// and the API object form (metav1.LabelSelector), parsed once and matched many times.
import { badRequest } from "./errors";

export type Op = "=" | "!=" | "in" | "notin" | "exists" | "!";

export interface Requirement {
  key: string;
  op: Op;
  values: string[];
}

/** A parsed selector; empty matches everything. */
export type Selector = Requirement[];

export function matches(sel: Selector, labels: Record<string, string> | undefined): boolean {
  for (const r of sel) {
    const has = labels !== undefined && Object.hasOwn(labels, r.key);
    const v = has ? labels![r.key] : undefined;
    switch (r.op) {
      case "=":
        if (v !== r.values[0]) return false;
        break;
      case "!=":
        if (has && v === r.values[0]) return false;
        break;
      case "in":
        if (!has || !r.values.includes(v!)) return false;
        break;
      case "notin":
        if (has && r.values.includes(v!)) return false;
        break;
      case "exists":
        if (!has) return false;
        break;
      case "!":
        if (has) return false;
        break;
    }
  }
  return true;
}

const KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function checkKey(key: string, what: string): void {
  if (!KEY.test(key) || key.length > 316)
    throw badRequest(`unable to parse requirement: invalid ${what} key: "${key}"`);
}

function checkValue(value: string, strict: boolean): void {
  if (strict && (value.length > 63 || !VALUE.test(value)))
    throw badRequest(`unable to parse requirement: invalid label value: "${value}"`);
}

/** Splits on commas that are not inside parentheses. */
function splitTerms(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of s) {
    if (ch === "(") depth++;
    else if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      out.push(cur);
      cur = "";
    } else cur += ch;
  }
  out.push(cur);
  return out.map((t) => t.trim()).filter((t) => t.length > 0);
}

/** Parses a label selector string as kubectl sends it in `labelSelector`. */
export function parseLabelSelector(s: string | null | undefined): Selector {
  if (!s) return [];
  const out: Selector = [];
  for (const term of splitTerms(s)) {
    const set = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(term);
    if (set) {
      checkKey(set[1], "label");
      const values = set[3]
        .split(",")
        .map((v) => v.trim())
        .filter((v) => v !== "");
      for (const v of values) checkValue(v, true);
      out.push({ key: set[1], op: set[2] as Op, values });
      continue;
    }
    const eq = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (eq) {
      checkKey(eq[1], "label");
      checkValue(eq[3], true);
      out.push({ key: eq[1], op: eq[2] === "!=" ? "!=" : "=", values: [eq[3]] });
      continue;
    }
    if (term.startsWith("!")) {
      const key = term.slice(1).trim();
      checkKey(key, "label");
      out.push({ key, op: "!", values: [] });
      continue;
    }
    checkKey(term, "label");
    out.push({ key: term, op: "exists", values: [] });
  }
  return out;
}

/** Parses a field selector (`metadata.name=x,status.phase!=Running`); only =, == and != exist. */
export function parseFieldSelector(s: string | null | undefined): Selector {
  if (!s) return [];
  const out: Selector = [];
  for (const term of splitTerms(s)) {
    const m = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (!m) throw badRequest(`invalid selector: '${s}'; can't understand '${term}'`);
    out.push({ key: m[1], op: m[2] === "!=" ? "!=" : "=", values: [m[3]] });
  }
  return out;
}

/** Checks that every key of a field selector is one the resource supports. */
export function checkFieldSelector(sel: Selector, supported: Set<string>): void {
  for (const r of sel) if (!supported.has(r.key)) throw badRequest(`field label not supported: ${r.key}`);
}

export interface LabelSelectorObject {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** Converts a metav1.LabelSelector; null/undefined selects nothing, {} selects everything (as upstream). */
export function fromLabelSelector(obj: LabelSelectorObject | null | undefined): Selector | null {
  if (obj === null || obj === undefined) return null;
  const out: Selector = [];
  for (const [key, value] of Object.entries(obj.matchLabels ?? {}))
    out.push({ key, op: "=", values: [value] });
  for (const e of obj.matchExpressions ?? []) {
    const op = ({ In: "in", NotIn: "notin", Exists: "exists", DoesNotExist: "!" } as Record<string, Op>)[
      e.operator
    ];
    if (!op) throw badRequest(`"${e.operator}" is not a valid label selector operator`);
    out.push({ key: e.key, op, values: e.values ?? [] });
  }
  return out;
}

/** Renders a selector back to the string form (for status.selector of a scale subresource). */
export function formatSelector(sel: Selector): string {
  return sel
    .map((r) => {
      switch (r.op) {
        case "=":
        case "!=":
          return `${r.key}${r.op}${r.values[0]}`;
        case "in":
        case "notin":
          return `${r.key} ${r.op} (${[...r.values].sort().join(",")})`;
        case "exists":
          return r.key;
        default:
          return `!${r.key}`;
      }
    })
    .join(",");
}
