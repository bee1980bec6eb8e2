// RBAC rule evaluation, as rbac.authorization.k8s.io/v1 defines it: which request a
// PolicyRule allows, which binding subjects name a user, and whether one set of rules
// covers another (the escalation check). Pure functions; no I/O.

export interface PolicyRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

export interface Subject {
  kind: string;
  name: string;
  namespace?: string;
  apiGroup?: string;
}

export interface RoleRef {
  apiGroup?: string;
  kind: string;
  name: string;
}

/** The parts of a user an RBAC decision reads. */
export interface RuleUser {
  name: string;
  groups: string[];
}

/** What a request asks for, in the authorizer's terms. */
export interface RuleRequest {
  verb: string;
  isResourceRequest: boolean;
  apiGroup?: string;
  resource?: string;
  subresource?: string;
  name?: string;
  path?: string;
}

export const VERB_ALL = "*";
export const GROUP_ALL = "*";
export const RESOURCE_ALL = "*";
export const NON_RESOURCE_ALL = "*";

const list = (v: string[] | undefined): string[] => v ?? [];

export function verbMatches(rule: PolicyRule, verb: string): boolean {
  return list(rule.verbs).some((v) => v === VERB_ALL || v === verb);
}

export function apiGroupMatches(rule: PolicyRule, group: string): boolean {
  return list(rule.apiGroups).some((g) => g === GROUP_ALL || g === group);
}

/**
 * `combined` is "resource" or "resource/subresource". A rule resource matches when it is
 * "*", equal to `combined`, or "*\/<subresource>" for a request on that subresource.
 */
export function resourceMatches(rule: PolicyRule, combined: string, subresource: string): boolean {
  for (const r of list(rule.resources)) {
    if (r === RESOURCE_ALL || r === combined) return true;
    if (subresource && r === `*/${subresource}`) return true;
  }
  return false;
}

/** No resourceNames means any name; otherwise the request must name one of them. */
export function resourceNameMatches(rule: PolicyRule, name: string): boolean {
  const names = list(rule.resourceNames);
  if (names.length === 0) return true;
  return names.includes(name);
}

/** "*" matches every path; a trailing "*" matches by prefix; otherwise exact. */
export function nonResourceURLMatches(rule: PolicyRule, path: string): boolean {
  for (const u of list(rule.nonResourceURLs)) {
    if (u === NON_RESOURCE_ALL || u === path) return true;
    if (u.endsWith("*") && path.startsWith(u.slice(0, -1))) return true;
  }
  return false;
}

export function ruleAllows(req: RuleRequest, rule: PolicyRule): boolean {
  if (!verbMatches(rule, req.verb)) return false;
  if (req.isResourceRequest) {
    const resource = req.resource ?? "";
    const sub = req.subresource ?? "";
    const combined = sub ? `${resource}/${sub}` : resource;
    return (
      apiGroupMatches(rule, req.apiGroup ?? "") &&
      resourceMatches(rule, combined, sub) &&
      resourceNameMatches(rule, req.name ?? "")
    );
  }
  return nonResourceURLMatches(rule, req.path ?? "");
}

export function rulesAllow(req: RuleRequest, rules: readonly PolicyRule[]): boolean {
  return rules.some((r) => ruleAllows(req, r));
}

// ---- subjects

export const SA_PREFIX = "system:serviceaccount:";

export function serviceAccountUsername(namespace: string, name: string): string {
  return `${SA_PREFIX}${namespace}:${name}`;
}

/**
 * Whether one binding subject names the user. A ServiceAccount subject without a namespace
 * takes the binding's namespace (RoleBindings); with neither, it names nobody.
 */
export function appliesToUser(user: RuleUser, s: Subject, bindingNamespace = ""): boolean {
  switch (s.kind) {
    case "User":
      return user.name === s.name;
    case "Group":
      return user.groups.includes(s.name);
    case "ServiceAccount": {
      const ns = s.namespace || bindingNamespace;
      if (!ns) return false;
      return user.name === serviceAccountUsername(ns, s.name);
    }
    default:
      return false;
  }
}

/** Index of the first subject that names the user, or -1. */
export function appliesTo(
  user: RuleUser,
  subjects: readonly Subject[] | undefined,
  bindingNamespace = "",
): number {
  const all = subjects ?? [];
  for (let i = 0; i < all.length; i++) if (appliesToUser(user, all[i], bindingNamespace)) return i;
  return -1;
}

// ---- covers (escalation)

/** Splits a rule into single group/resource/verb(/name) and single url/verb rules. */
export function breakdownRule(rule: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const g of list(rule.apiGroups))
    for (const r of list(rule.resources))
      for (const v of list(rule.verbs)) {
        const names = list(rule.resourceNames);
        if (names.length > 0)
          for (const n of names) out.push({ apiGroups: [g], resources: [r], verbs: [v], resourceNames: [n] });
        else out.push({ apiGroups: [g], resources: [r], verbs: [v] });
      }
  for (const u of list(rule.nonResourceURLs))
    for (const v of list(rule.verbs)) out.push({ nonResourceURLs: [u], verbs: [v] });
  return out;
}

const hasAll = (set: string[], want: string[]) => want.every((w) => set.includes(w));

function resourcesCoverAll(owner: string[], wanted: string[]): boolean {
  if (owner.includes(RESOURCE_ALL) || hasAll(owner, wanted)) return true;
  for (const path of wanted) {
    if (owner.includes(path)) continue;
    const slash = path.indexOf("/");
    if (slash < 0) return false;
    if (!owner.includes(`*/${path.slice(slash + 1)}`)) return false;
  }
  return true;
}

function urlCovers(owner: string, sub: string): boolean {
  if (owner === sub) return true;
  return owner.endsWith("*") && sub.startsWith(owner.replace(/\*+$/, ""));
}

function urlsCoverAll(owner: string[], wanted: string[]): boolean {
  return wanted.every((w) => owner.some((o) => urlCovers(o, w)));
}

/** Whether an owner rule covers a broken-down rule (at most one verb/resource/name). */
export function ruleCovers(owner: PolicyRule, sub: PolicyRule): boolean {
  const ov = list(owner.verbs);
  const og = list(owner.apiGroups);
  const on = list(owner.resourceNames);
  const sn = list(sub.resourceNames);
  const verbs = ov.includes(VERB_ALL) || hasAll(ov, list(sub.verbs));
  const groups = og.includes(GROUP_ALL) || hasAll(og, list(sub.apiGroups));
  const resources = resourcesCoverAll(list(owner.resources), list(sub.resources));
  const urls = urlsCoverAll(list(owner.nonResourceURLs), list(sub.nonResourceURLs));
  const names = sn.length === 0 ? on.length === 0 : on.length === 0 || hasAll(on, sn);
  return verbs && groups && resources && urls && names;
}

/** Whether `owner` rules hold everything `requested` rules grant; `missing` lists what they lack. */
export function covers(
  owner: readonly PolicyRule[],
  requested: readonly PolicyRule[],
): { covers: boolean; missing: PolicyRule[] } {
  const missing: PolicyRule[] = [];
  for (const rule of requested)
    for (const sub of breakdownRule(rule)) if (!owner.some((o) => ruleCovers(o, sub))) missing.push(sub);
  return { covers: missing.length === 0, missing };
}

/** Merges single group/resource(/name) rules that differ only by verb (for messages). */
export function compactRules(rules: readonly PolicyRule[]): PolicyRule[] {
  const out: PolicyRule[] = [];
  const simple = new Map<string, PolicyRule>();
  for (const r of rules) {
    const names = list(r.resourceNames);
    const isSimple =
      names.length <= 1 &&
      list(r.nonResourceURLs).length === 0 &&
      list(r.apiGroups).length === 1 &&
      list(r.resources).length === 1;
    if (!isSimple) {
      out.push(r);
      continue;
    }
    const key = JSON.stringify([r.apiGroups![0], r.resources![0], names.length ? names[0] : null]);
    const prev = simple.get(key);
    if (prev) prev.verbs = [...prev.verbs, ...list(r.verbs)];
    else simple.set(key, { ...r, verbs: [...list(r.verbs)] });
  }
  return [...out, ...simple.values()];
}

/** Go's %q of a []string: ["a" "b"]. */
export function goQuotedList(v: string[]): string {
  return `[${v.map((s) => JSON.stringify(s)).join(" ")}]`;
}

/** Upstream's compact form, e.g. {APIGroups:[""], Resources:["pods"], Verbs:["create"]}. */
export function compactString(r: PolicyRule): string {
  const parts: string[] = [];
  if (list(r.apiGroups).length) parts.push(`APIGroups:${goQuotedList(r.apiGroups!)}`);
  if (list(r.resources).length) parts.push(`Resources:${goQuotedList(r.resources!)}`);
  if (list(r.nonResourceURLs).length) parts.push(`NonResourceURLs:${goQuotedList(r.nonResourceURLs!)}`);
  if (list(r.resourceNames).length) parts.push(`ResourceNames:${goQuotedList(r.resourceNames!)}`);
  if (list(r.verbs).length) parts.push(`Verbs:${goQuotedList(r.verbs)}`);
  return `{${parts.join(", ")}}`;
}

/** The escalation message upstream's ConfirmNoEscalation builds (without the resource prefix). */
export function escalationMessage(
  user: RuleUser,
  missing: readonly PolicyRule[],
  resolutionErrors: string[] = [],
): string {
  const lines = [...new Set(compactRules(missing).map(compactString))].sort();
  let msg = `user ${JSON.stringify(user.name)} (groups=${goQuotedList(user.groups)}) is attempting to grant RBAC permissions not currently held:\n${lines.join("\n")}`;
  if (resolutionErrors.length) msg += `; resolution errors: [${resolutionErrors.join(" ")}]`;
  return msg;
}

/** The full authority: what it takes to set an aggregationRule. */
export const FULL_AUTHORITY: PolicyRule[] = [
  { verbs: ["*"], apiGroups: ["*"], resources: ["*"] },
  { verbs: ["*"], nonResourceURLs: ["*"] },
];
