// Label selectors, node selector terms and tolerations as the scheduler
// evaluates them: compiled once per pod, matched many times per cycle.

export type Labels = Record<string, string> | undefined;

export interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface LabelSelectorSpec {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

interface CompiledReq {
  key: string;
  op: number; // 0 In, 1 NotIn, 2 Exists, 3 DoesNotExist, 4 Gt, 5 Lt, 6 Equals
  values: Set<string> | null;
  num: number;
  value: string;
}

/** A compiled selector; `nothing` selects no object, an empty `reqs` selects everything. */
export interface Selector {
  reqs: CompiledReq[];
  nothing: boolean;
}

const OPS: Record<string, number> = { In: 0, NotIn: 1, Exists: 2, DoesNotExist: 3, Gt: 4, Lt: 5 };

function compileReq(r: LabelSelectorRequirement): CompiledReq | null {
  const op = OPS[r.operator];
  if (op === undefined) return null;
  const values = r.values ?? [];
  return {
    key: r.key,
    op,
    values: op <= 1 ? new Set(values) : null,
    num: op >= 4 ? Number.parseInt(values[0] ?? "", 10) : 0,
    value: "",
  };
}

export const NOTHING: Selector = { reqs: [], nothing: true };

/** metav1.LabelSelector: null selects nothing, {} selects everything. */
export function compileLabelSelector(sel: LabelSelectorSpec | null | undefined): Selector {
  if (!sel) return NOTHING;
  const reqs: CompiledReq[] = [];
  for (const [key, value] of Object.entries(sel.matchLabels ?? {})) {
    reqs.push({ key, op: 6, values: null, num: 0, value });
  }
  for (const r of sel.matchExpressions ?? []) {
    const c = compileReq(r);
    if (!c || c.op >= 4) return NOTHING; // Gt/Lt are not valid in label selectors
    reqs.push(c);
  }
  return { reqs, nothing: false };
}

/** A plain map selector (spec.nodeSelector). */
export function compileMapSelector(m: Record<string, string> | undefined): Selector {
  const reqs: CompiledReq[] = [];
  for (const [key, value] of Object.entries(m ?? {})) reqs.push({ key, op: 6, values: null, num: 0, value });
  return { reqs, nothing: false };
}

function matchReq(r: CompiledReq, labels: Labels): boolean {
  const v = labels?.[r.key];
  switch (r.op) {
    case 6:
      return v === r.value;
    case 0:
      return v !== undefined && r.values!.has(v);
    case 1:
      return v === undefined || !r.values!.has(v);
    case 2:
      return v !== undefined;
    case 3:
      return v === undefined;
    case 4:
    case 5: {
      if (v === undefined || !/^-?\d+$/.test(v) || Number.isNaN(r.num)) return false;
      const n = Number.parseInt(v, 10);
      return r.op === 4 ? n > r.num : n < r.num;
    }
    default:
      return false;
  }
}

export function selectorMatches(sel: Selector, labels: Labels): boolean {
  if (sel.nothing) return false;
  const reqs = sel.reqs;
  for (let i = 0; i < reqs.length; i++) if (!matchReq(reqs[i], labels)) return false;
  return true;
}

// ---- node selector terms (node affinity) ----

export interface NodeSelectorTermSpec {
  matchExpressions?: LabelSelectorRequirement[];
  matchFields?: LabelSelectorRequirement[];
}

interface CompiledTerm {
  labels: CompiledReq[];
  fields: CompiledReq[];
  invalid: boolean;
}

export interface NodeSelector {
  terms: CompiledTerm[];
}

function compileTerm(t: NodeSelectorTermSpec): CompiledTerm {
  const term: CompiledTerm = { labels: [], fields: [], invalid: false };
  for (const r of t.matchExpressions ?? []) {
    const c = compileReq(r);
    if (!c) term.invalid = true;
    else term.labels.push(c);
  }
  for (const r of t.matchFields ?? []) {
    const c = compileReq(r);
    if (!c || r.key !== "metadata.name" || c.op > 1 || (r.values?.length ?? 0) !== 1) term.invalid = true;
    else term.fields.push(c);
  }
  return term;
}

export function compileNodeSelector(terms: NodeSelectorTermSpec[] | undefined): NodeSelector {
  return { terms: (terms ?? []).map(compileTerm) };
}

export function termMatches(term: CompiledTerm, labels: Labels, nodeName: string): boolean {
  if (term.invalid) return false;
  if (term.labels.length === 0 && term.fields.length === 0) return false; // empty term matches nothing
  for (const r of term.labels) if (!matchReq(r, labels)) return false;
  if (term.fields.length > 0) {
    const fields = { "metadata.name": nodeName };
    for (const r of term.fields) if (!matchReq(r, fields)) return false;
  }
  return true;
}

/** Terms are ORed; no terms matches nothing. */
export function nodeSelectorMatches(sel: NodeSelector, labels: Labels, nodeName: string): boolean {
  for (const t of sel.terms) if (termMatches(t, labels, nodeName)) return true;
  return false;
}

export function compileNodeSelectorTerm(t: NodeSelectorTermSpec): CompiledTerm {
  return compileTerm(t);
}

// ---- taints and tolerations ----

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

export interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

export function tolerates(tol: Toleration, taint: Taint): boolean {
  if (tol.effect && tol.effect !== taint.effect) return false;
  if (tol.key && tol.key !== taint.key) return false;
  // An empty key with Exists matches every taint.
  const op = tol.operator || "Equal";
  if (op === "Exists") return true;
  if (op === "Equal") return (tol.value ?? "") === (taint.value ?? "");
  return false;
}

export function toleratesTaint(tols: Toleration[] | undefined, taint: Taint): boolean {
  if (!tols) return false;
  for (const t of tols) if (tolerates(t, taint)) return true;
  return false;
}

/** First taint with one of the effects that no toleration matches. */
export function findUntoleratedTaint(
  taints: Taint[] | undefined,
  tols: Toleration[] | undefined,
  noScheduleOrExecuteOnly: boolean,
): Taint | undefined {
  if (!taints) return undefined;
  for (const taint of taints) {
    if (noScheduleOrExecuteOnly && taint.effect !== "NoSchedule" && taint.effect !== "NoExecute") continue;
    if (!toleratesTaint(tols, taint)) return taint;
  }
  return undefined;
}
