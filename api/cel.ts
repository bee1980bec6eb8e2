// CEL for admission and CRD validation rules: compiling expressions once per isolate and
// evaluating them against JSON objects (integers become CEL ints, as the apiserver's typed
// values).
import {
  type CelList,
  CelScalar,
  celEnv,
  celMethod,
  isCelError,
  isCelList,
  isCelMap,
  listType,
  parse,
  plan,
} from "@bufbuild/cel";
import { strings } from "@bufbuild/cel/ext";

type Program = (ctx: Record<string, unknown>) => unknown;

const DYN_LIST = listType(CelScalar.DYN);
const items = (l: CelList): any[] => [...l.values()];
const less = (a: any, b: any) => a < b;

/** Part of the Kubernetes CEL list and regex libraries (k8s.io/apiserver/pkg/cel/library). */
const kubernetesLibrary = [
  celMethod("isSorted", DYN_LIST, [], CelScalar.BOOL, function () {
    const v = items(this);
    return v.every((x, i) => i === 0 || !less(x, v[i - 1]));
  }),
  celMethod("sum", DYN_LIST, [], CelScalar.DYN, function () {
    const v = items(this);
    if (v.length === 0) return 0n;
    return v.reduce((acc, x) => acc + x);
  }),
  celMethod("min", DYN_LIST, [], CelScalar.DYN, function () {
    const v = items(this);
    if (v.length === 0) throw new Error("min called on empty list");
    return v.reduce((acc, x) => (less(x, acc) ? x : acc));
  }),
  celMethod("max", DYN_LIST, [], CelScalar.DYN, function () {
    const v = items(this);
    if (v.length === 0) throw new Error("max called on empty list");
    return v.reduce((acc, x) => (less(acc, x) ? x : acc));
  }),
  celMethod("indexOf", DYN_LIST, [CelScalar.DYN], CelScalar.INT, function (x) {
    return BigInt(items(this).indexOf(x));
  }),
  celMethod("lastIndexOf", DYN_LIST, [CelScalar.DYN], CelScalar.INT, function (x) {
    return BigInt(items(this).lastIndexOf(x));
  }),
  celMethod("find", CelScalar.STRING, [CelScalar.STRING], CelScalar.STRING, function (re) {
    return new RegExp(re).exec(this)?.[0] ?? "";
  }),
  celMethod("findAll", CelScalar.STRING, [CelScalar.STRING], DYN_LIST, function (re) {
    return [...this.matchAll(new RegExp(re, "g"))].map((m) => m[0]);
  }),
];

const env = celEnv({ funcs: [...strings, ...kubernetesLibrary] });
const programs = new Map<string, Program | { error: string }>();

/** Compiles (or finds compiled) an expression; a compile error is returned as a string. */
export function compile(expr: string): Program | { error: string } {
  let p = programs.get(expr);
  if (!p) {
    try {
      const run = plan(env, parse(expr)) as unknown as Program;
      p = run;
    } catch (e) {
      p = { error: `compilation failed: ${e instanceof Error ? e.message : String(e)}` };
    }
    if (programs.size > 2000) programs.clear();
    programs.set(expr, p);
  }
  return p;
}

/** JSON to CEL input: whole numbers become ints (bigint), other values stay as they are. */
export function toCel(v: unknown): unknown {
  if (typeof v === "number") return Number.isInteger(v) ? BigInt(v) : v;
  if (Array.isArray(v)) return v.map(toCel);
  if (v && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = toCel(x);
    return out;
  }
  return v;
}

/** CEL output to JSON-ish JS values (for messages and tests). */
export function fromCel(v: unknown): unknown {
  if (typeof v === "bigint") return Number(v);
  if (isCelList(v)) {
    const out: unknown[] = [];
    for (let i = 0; i < v.size; i++) out.push(fromCel(v.get(i)));
    return out;
  }
  if (isCelMap(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of v.entries()) out[String(k)] = fromCel(x);
    return out;
  }
  return v;
}

export type EvalResult = { value: unknown } | { error: string };

/** Evaluates an expression with already converted (toCel) bindings. */
export function evaluate(expr: string, bindings: Record<string, unknown>): EvalResult {
  const p = compile(expr);
  if (typeof p !== "function") return p;
  try {
    const r = p(bindings);
    if (isCelError(r)) return { error: r.message };
    return { value: r };
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) };
  }
}

/** Evaluates a boolean expression; a non-bool result is an error, as the apiserver's type check makes it. */
export function evaluateBool(
  expr: string,
  bindings: Record<string, unknown>,
): { value: boolean } | { error: string } {
  const r = evaluate(expr, bindings);
  if ("error" in r) return r;
  if (typeof r.value !== "boolean") return { error: `expected bool, got ${typeof r.value}` };
  return { value: r.value };
}
