// The JSONPath of a CRD's additionalPrinterColumns, evaluated as kubectl's jsonpath does for
// the simple paths columns use: fields (.a.b, ['a.b']), indexes ([0], [-1]), wildcards ([*],
// .*) and filters ([?(@.type=="Ready")]). The first match is the cell.

type Step =
  | { field: string }
  | { index: number }
  | { all: true }
  | { filter: { path: string[]; op: "==" | "!=" | "exists"; value?: unknown } };

const compiled = new Map<string, Step[] | null>();

function parseFilter(expr: string): Step | null {
  const m = /^@((?:\.[\w-]+)+)\s*(?:(==|!=)\s*(.+))?$/.exec(expr.trim());
  if (!m) return null;
  const path = m[1].slice(1).split(".");
  if (!m[2]) return { filter: { path, op: "exists" } };
  let raw = m[3].trim();
  let value: unknown;
  if (/^(["']).*\1$/.test(raw)) value = raw.slice(1, -1);
  else if (raw === "true" || raw === "false") value = raw === "true";
  else if (!Number.isNaN(Number(raw))) value = Number(raw);
  else value = raw = raw.replace(/^["']|["']$/g, "");
  return { filter: { path, op: m[2] as "==" | "!=", value } };
}

/** The steps of a path such as `.status.conditions[?(@.type=="Ready")].status`; null when it cannot be read. */
export function parsePath(path: string): Step[] | null {
  let p = path.trim();
  if (p.startsWith("{") && p.endsWith("}")) p = p.slice(1, -1);
  if (p.startsWith("$")) p = p.slice(1);
  const steps: Step[] = [];
  let i = 0;
  while (i < p.length) {
    if (p[i] === ".") {
      i++;
      if (p[i] === "*") {
        steps.push({ all: true });
        i++;
        continue;
      }
      const m = /^[^.[\]]+/.exec(p.slice(i));
      if (!m) return null;
      steps.push({ field: m[0] });
      i += m[0].length;
    } else if (p[i] === "[") {
      const end = p.indexOf("]", i);
      if (end < 0) return null;
      const inner = p.slice(i + 1, end).trim();
      i = end + 1;
      if (inner === "*") steps.push({ all: true });
      else if (/^-?\d+$/.test(inner)) steps.push({ index: Number(inner) });
      else if (/^(['"]).*\1$/.test(inner)) steps.push({ field: inner.slice(1, -1) });
      else if (inner.startsWith("?(") && inner.endsWith(")")) {
        const f = parseFilter(inner.slice(2, -1));
        if (!f) return null;
        steps.push(f);
      } else return null;
    } else return null;
  }
  return steps;
}

function at(v: unknown, path: string[]): unknown {
  let x = v;
  for (const k of path) {
    if (typeof x !== "object" || x === null || Array.isArray(x)) return undefined;
    x = (x as Record<string, unknown>)[k];
  }
  return x;
}

/** Every value the path matches in obj, in order. */
export function findAll(obj: unknown, path: string): unknown[] {
  let steps = compiled.get(path);
  if (steps === undefined) compiled.set(path, (steps = parsePath(path)));
  if (!steps) return [];
  let cur: unknown[] = [obj];
  for (const s of steps) {
    const next: unknown[] = [];
    for (const v of cur) {
      if ("field" in s) {
        if (v && typeof v === "object" && !Array.isArray(v) && s.field in v)
          next.push((v as Record<string, unknown>)[s.field]);
      } else if ("index" in s) {
        if (Array.isArray(v)) {
          const i = s.index < 0 ? v.length + s.index : s.index;
          if (i >= 0 && i < v.length) next.push(v[i]);
        }
      } else if ("all" in s) {
        if (Array.isArray(v)) next.push(...v);
        else if (v && typeof v === "object") next.push(...Object.values(v));
      } else if (Array.isArray(v)) {
        const { path: fp, op, value } = s.filter;
        for (const item of v) {
          const got = at(item, fp);
          const ok = op === "exists" ? got !== undefined : op === "==" ? got === value : got !== value;
          if (ok) next.push(item);
        }
      }
    }
    cur = next;
  }
  return cur;
}
