// ClusterRole aggregation (aggregationRule.clusterRoleSelectors): an aggregated role's rules
// are the union of the rules of every other ClusterRole its selectors match, taken in name
// order with duplicates dropped, as upstream's clusterrole-aggregation controller writes them.
// Computed here to a fixed point (admin aggregates edit, which aggregates view, ...), so the
// authorizer sees the converged result at once.
import { fromLabelSelector, type LabelSelectorObject, matches } from "../selectors";
import type { PolicyRule } from "./rules";

export interface ClusterRoleLike {
  metadata: { name?: string; labels?: Record<string, string> };
  rules?: PolicyRule[] | null;
  aggregationRule?: { clusterRoleSelectors?: LabelSelectorObject[] | null } | null;
}

export function isAggregated(role: ClusterRoleLike): boolean {
  return !!role.aggregationRule && typeof role.aggregationRule === "object";
}

function sameRule(a: PolicyRule, b: PolicyRule): boolean {
  const eq = (x?: string[], y?: string[]) => JSON.stringify(x ?? []) === JSON.stringify(y ?? []);
  return (
    eq(a.verbs, b.verbs) &&
    eq(a.apiGroups, b.apiGroups) &&
    eq(a.resources, b.resources) &&
    eq(a.resourceNames, b.resourceNames) &&
    eq(a.nonResourceURLs, b.nonResourceURLs)
  );
}

/**
 * The effective rules of every ClusterRole by name: stored rules for plain roles, the
 * aggregated union for roles with an aggregationRule (cycles resolve to what is reachable).
 */
export function effectiveClusterRoleRules(roles: readonly ClusterRoleLike[]): Map<string, PolicyRule[]> {
  const byName = new Map<string, ClusterRoleLike>();
  for (const r of roles) if (r.metadata.name) byName.set(r.metadata.name, r);
  const sorted = [...byName.values()].sort((a, b) => (a.metadata.name! < b.metadata.name! ? -1 : 1));
  const out = new Map<string, PolicyRule[]>();
  const visiting = new Set<string>();

  const resolve = (role: ClusterRoleLike): PolicyRule[] => {
    const name = role.metadata.name!;
    const done = out.get(name);
    if (done) return done;
    if (!isAggregated(role)) {
      const rules = Array.isArray(role.rules) ? role.rules : [];
      out.set(name, rules);
      return rules;
    }
    if (visiting.has(name)) return Array.isArray(role.rules) ? role.rules : [];
    visiting.add(name);
    const rules: PolicyRule[] = [];
    for (const sel of role.aggregationRule?.clusterRoleSelectors ?? []) {
      let selector: ReturnType<typeof fromLabelSelector>;
      try {
        selector = fromLabelSelector(sel);
      } catch {
        continue;
      }
      if (!selector) continue;
      for (const other of sorted) {
        if (other.metadata.name === name || !matches(selector, other.metadata.labels)) continue;
        for (const rule of resolve(other)) if (!rules.some((r) => sameRule(r, rule))) rules.push(rule);
      }
    }
    visiting.delete(name);
    out.set(name, rules);
    return rules;
  };

  for (const r of sorted) resolve(r);
  return out;
}

/** Whether two rule lists are the same, in order (the controller only writes on change). */
export function sameRules(a: readonly PolicyRule[], b: readonly PolicyRule[]): boolean {
  return a.length === b.length && a.every((r, i) => sameRule(r, b[i]));
}
