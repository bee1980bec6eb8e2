// The audit policy (audit.k8s.io/v1 Policy, a subset): rules are tried in order and the first
// that matches the request gives its level and extra omitted stages; no match is level None.
// Read from EDGEPLANE_AUDIT_POLICY as YAML or JSON (or either base64-encoded); no policy at
// all means no auditing, as upstream without --audit-policy-file.
import { parse as parseYaml } from "yaml";
import { decodeEnvText } from "../authz/abac";
import {
  type AuditAttributes,
  type AuditPolicy,
  type GroupResources,
  LEVELS,
  type Level,
  type PolicyRule,
  STAGES,
  type Stage,
} from "./types";

export class AuditPolicyError extends Error {}

function strings(v: unknown, where: string): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.some((s) => typeof s !== "string"))
    throw new AuditPolicyError(`${where}: must be a list of strings`);
  return v as string[];
}

function stages(v: unknown, where: string): Stage[] | undefined {
  const list = strings(v, where);
  for (const s of list ?? [])
    if (!STAGES.includes(s as Stage))
      throw new AuditPolicyError(`${where}: unknown stage ${JSON.stringify(s)}`);
  return list as Stage[] | undefined;
}

function groupResources(v: unknown, where: string): GroupResources[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw new AuditPolicyError(`${where}: must be a list`);
  return v.map((g, i) => {
    if (!g || typeof g !== "object") throw new AuditPolicyError(`${where}[${i}]: must be an object`);
    const r = g as Record<string, unknown>;
    if (r.group !== undefined && typeof r.group !== "string")
      throw new AuditPolicyError(`${where}[${i}].group: must be a string`);
    return {
      group: (r.group as string | undefined) ?? "",
      resources: strings(r.resources, `${where}[${i}].resources`),
      resourceNames: strings(r.resourceNames, `${where}[${i}].resourceNames`),
    };
  });
}

function rule(v: unknown, i: number): PolicyRule {
  const where = `rules[${i}]`;
  if (!v || typeof v !== "object") throw new AuditPolicyError(`${where}: must be an object`);
  const r = v as Record<string, unknown>;
  if (!LEVELS.includes(r.level as Level))
    throw new AuditPolicyError(`${where}.level: unknown level ${JSON.stringify(r.level)}`);
  const out: PolicyRule = {
    level: r.level as Level,
    users: strings(r.users, `${where}.users`),
    userGroups: strings(r.userGroups, `${where}.userGroups`),
    verbs: strings(r.verbs, `${where}.verbs`),
    resources: groupResources(r.resources, `${where}.resources`),
    namespaces: strings(r.namespaces, `${where}.namespaces`),
    nonResourceURLs: strings(r.nonResourceURLs, `${where}.nonResourceURLs`),
    omitStages: stages(r.omitStages, `${where}.omitStages`),
  };
  if (out.nonResourceURLs?.length && (out.resources?.length || out.namespaces?.length))
    throw new AuditPolicyError(
      `${where}: rules cannot apply to both regular resources and non-resource URLs`,
    );
  return out;
}

/** Parses policy text (YAML or JSON, optionally base64). */
export function parseAuditPolicy(text: string): AuditPolicy {
  let doc: unknown;
  try {
    doc = parseYaml(decodeEnvText(text));
  } catch (e) {
    throw new AuditPolicyError(`audit policy does not parse: ${(e as Error).message}`);
  }
  if (!doc || typeof doc !== "object") throw new AuditPolicyError("audit policy must be an object");
  const d = doc as Record<string, unknown>;
  if (d.kind !== undefined && d.kind !== "Policy") throw new AuditPolicyError(`unexpected kind ${d.kind}`);
  if (!Array.isArray(d.rules)) throw new AuditPolicyError("audit policy has no rules");
  return { rules: d.rules.map(rule), omitStages: stages(d.omitStages, "omitStages") };
}

const has = (list: string[] | undefined, v: string) => !!list?.includes(v);

function matchesNonResource(r: PolicyRule, a: AuditAttributes): boolean {
  if (a.isResourceRequest) return false;
  return (r.nonResourceURLs ?? []).some(
    (u) => u === "*" || u === a.path || (u.endsWith("*") && a.path.startsWith(u.slice(0, -1))),
  );
}

function matchesResource(r: PolicyRule, a: AuditAttributes): boolean {
  if (!a.isResourceRequest) return false;
  if (r.namespaces?.length && !has(r.namespaces, a.namespace)) return false;
  if (!r.resources?.length) return true;
  const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  for (const gr of r.resources) {
    if ((gr.group ?? "") !== a.apiGroup) continue;
    if (!gr.resources?.length) return true;
    if (gr.resourceNames?.length && !has(gr.resourceNames, a.name)) continue;
    for (const res of gr.resources) {
      if (res === combined || res === "*") return true;
      if (a.subresource && res.startsWith("*/") && res.slice(2) === a.subresource) return true;
      if (res.endsWith("/*") && res.slice(0, -2) === a.resource) return true;
    }
  }
  return false;
}

export function ruleMatches(r: PolicyRule, a: AuditAttributes): boolean {
  if (r.users?.length && !(a.user && has(r.users, a.user.name))) return false;
  if (r.userGroups?.length && !a.user?.groups.some((g) => has(r.userGroups, g))) return false;
  if (r.verbs?.length && !has(r.verbs, a.verb)) return false;
  if (r.namespaces?.length || r.resources?.length) return matchesResource(r, a);
  if (r.nonResourceURLs?.length) return matchesNonResource(r, a);
  return true;
}

export interface PolicyDecision {
  level: Level;
  omitStages: Stage[];
}

/** The level and omitted stages for one request: the first matching rule's, else None. */
export function evaluatePolicy(policy: AuditPolicy, a: AuditAttributes): PolicyDecision {
  for (const r of policy.rules) {
    if (ruleMatches(r, a))
      return { level: r.level, omitStages: [...(policy.omitStages ?? []), ...(r.omitStages ?? [])] };
  }
  return { level: "None", omitStages: [...(policy.omitStages ?? [])] };
}

const FALLBACK: AuditPolicy = { rules: [{ level: "Metadata" }] };
let cached: { text: string; policy: AuditPolicy | undefined } | undefined;

/**
 * The policy for an env: undefined (no auditing) when EDGEPLANE_AUDIT_POLICY is unset. A
 * policy that does not parse is logged and replaced by Metadata for everything, so a typo
 * never switches auditing off silently.
 */
export function policyFromEnv(env: { EDGEPLANE_AUDIT_POLICY?: string }): AuditPolicy | undefined {
  const text = env.EDGEPLANE_AUDIT_POLICY ?? "";
  if (cached?.text === text) return cached.policy;
  let policy: AuditPolicy | undefined;
  if (text.trim()) {
    try {
      policy = parseAuditPolicy(text);
    } catch (e) {
      console.error(`audit: ${(e as Error).message}; auditing every request at Metadata level`);
      policy = FALLBACK;
    }
  }
  cached = { text, policy };
  return policy;
}
