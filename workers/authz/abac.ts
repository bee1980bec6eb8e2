// The ABAC authorizer (upstream's --authorization-mode=ABAC): a policy file of one JSON
// Policy object per line, read from EDGEPLANE_ABAC_POLICY (the file's text, or that text
// base64-encoded, since a Worker has no file system). A request is allowed when some policy
// matches it; otherwise ABAC has no opinion ("No policy matched."). ABAC never denies.
//
// Matching, as upstream: the subject (user and/or group; v1beta1 "*" for either means every
// authenticated user), then the verb (read-only requests, get/list/watch, pass every policy;
// others need readonly false), then either the resource part (namespace, resource, apiGroup:
// "*" or equal) for resource requests or nonResourcePath ("*", exact, or a prefix ending in
// "*") for the others. Unversioned (v0) lines are converted as upstream converts them.
import type { UserInfo } from "../../api/user";
import type { Env } from "../../durable-objects/env";
import type { Attributes, AuthorizerResult, RulesResult } from "./types";

export const ABAC_API_VERSION = "abac.authorization.kubernetes.io/v1beta1";
const ALL_AUTHENTICATED = "system:authenticated";
const READ_ONLY_VERBS = new Set(["get", "list", "watch"]);

export interface AbacPolicySpec {
  user: string;
  group: string;
  readonly: boolean;
  apiGroup: string;
  resource: string;
  namespace: string;
  nonResourcePath: string;
}

export class AbacPolicyError extends Error {}

/**
 * Env text that may be base64 (the dev.vars writer mangles double quotes): decoded when it
 * is nothing but base64 characters and decodes to UTF-8 text, otherwise returned as is.
 */
export function decodeEnvText(raw: string | undefined): string {
  const text = (raw ?? "").trim();
  if (!text || !/^[A-Za-z0-9+/=_\-\s]+$/.test(text) || text.length % 4 === 1) return raw ?? "";
  try {
    const bin = atob(text.replace(/\s+/g, "").replaceAll("-", "+").replaceAll("_", "/"));
    const bytes = Uint8Array.from(bin, (ch) => ch.charCodeAt(0));
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return raw ?? "";
  }
}

function str(v: unknown, field: string, line: number): string {
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw new AbacPolicyError(`line ${line}: ${field} must be a string`);
  return v;
}

function fromV1beta1(spec: Record<string, unknown>, line: number): AbacPolicySpec {
  const out: AbacPolicySpec = {
    user: str(spec.user, "user", line),
    group: str(spec.group, "group", line),
    readonly: spec.readonly === true,
    apiGroup: str(spec.apiGroup, "apiGroup", line),
    resource: str(spec.resource, "resource", line),
    namespace: str(spec.namespace, "namespace", line),
    nonResourcePath: str(spec.nonResourcePath, "nonResourcePath", line),
  };
  // v1beta1: a "*" user or group means every authenticated subject
  if (out.user === "*" || out.group === "*") {
    out.group = ALL_AUTHENTICATED;
    out.user = "";
  }
  return out;
}

function fromV0(obj: Record<string, unknown>, line: number): AbacPolicySpec {
  const user = str(obj.user, "user", line);
  const group = str(obj.group, "group", line);
  const namespace = str(obj.namespace, "namespace", line);
  const resource = str(obj.resource, "resource", line);
  const out: AbacPolicySpec = {
    user,
    group,
    readonly: obj.readonly === true,
    apiGroup: "*",
    resource: resource || "*",
    namespace: namespace || "*",
    nonResourcePath: !namespace && !resource ? "*" : "",
  };
  if ((!user && !group) || user === "*" || group === "*") {
    out.group = ALL_AUTHENTICATED;
    out.user = "";
  }
  return out;
}

/** Parses a policy file: blank lines and lines starting with "#" are skipped. */
export function parseAbacPolicy(text: string): AbacPolicySpec[] {
  const out: AbacPolicySpec[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const trimmed = lines[i].trim();
    if (!trimmed || trimmed.startsWith("#")) continue;
    let obj: unknown;
    try {
      obj = JSON.parse(trimmed);
    } catch (e) {
      throw new AbacPolicyError(`line ${i + 1}: ${(e as Error).message}`);
    }
    if (!obj || typeof obj !== "object" || Array.isArray(obj))
      throw new AbacPolicyError(`line ${i + 1}: not a JSON object`);
    const rec = obj as Record<string, unknown>;
    if (rec.apiVersion === undefined && rec.kind === undefined) {
      out.push(fromV0(rec, i + 1));
      continue;
    }
    if (rec.apiVersion !== ABAC_API_VERSION || rec.kind !== "Policy")
      throw new AbacPolicyError(`line ${i + 1}: unrecognized apiVersion/kind ${rec.apiVersion}/${rec.kind}`);
    const spec = rec.spec;
    if (!spec || typeof spec !== "object") throw new AbacPolicyError(`line ${i + 1}: spec is required`);
    out.push(fromV1beta1(spec as Record<string, unknown>, i + 1));
  }
  return out;
}

export function subjectMatches(p: AbacPolicySpec, user: UserInfo | undefined): boolean {
  if (!user) return false;
  let matched = false;
  if (p.user) {
    if (p.user === "*") matched = true;
    else if (p.user === user.name) matched = true;
    else return false;
  }
  if (p.group) {
    if (p.group === "*") matched = true;
    else {
      matched = user.groups.includes(p.group);
      if (!matched) return false;
    }
  }
  return matched;
}

function verbMatches(p: AbacPolicySpec, a: Attributes): boolean {
  return READ_ONLY_VERBS.has(a.verb) || !p.readonly;
}

function resourceMatches(p: AbacPolicySpec, a: Attributes): boolean {
  if (!a.isResourceRequest) return false;
  return (
    (p.namespace === "*" || p.namespace === a.namespace) &&
    (p.resource === "*" || p.resource === a.resource) &&
    (p.apiGroup === "*" || p.apiGroup === a.apiGroup)
  );
}

function nonResourceMatches(p: AbacPolicySpec, a: Attributes): boolean {
  if (a.isResourceRequest) return false;
  const want = p.nonResourcePath;
  if (want === "*" || want === a.path) return true;
  return want.endsWith("*") && a.path.startsWith(want.replace(/\*+$/, ""));
}

export function policyMatches(p: AbacPolicySpec, a: Attributes): boolean {
  return (
    subjectMatches(p, a.user) && verbMatches(p, a) && (resourceMatches(p, a) || nonResourceMatches(p, a))
  );
}

export class AbacAuthorizer {
  constructor(readonly policies: AbacPolicySpec[]) {}

  authorize(a: Attributes): AuthorizerResult {
    if (this.policies.some((p) => policyMatches(p, a))) return { decision: "allow", reason: "" };
    return { decision: "noOpinion", reason: "No policy matched." };
  }

  /** What SelfSubjectRulesReview reports: one rule per policy the user matches in `namespace`. */
  rulesFor(user: UserInfo, namespace: string): RulesResult {
    const out: RulesResult = { resourceRules: [], nonResourceRules: [], incomplete: false, errors: [] };
    for (const p of this.policies) {
      if (!subjectMatches(p, user) || (p.namespace !== "*" && p.namespace !== namespace)) continue;
      const verbs = p.readonly ? ["get", "list", "watch"] : ["*"];
      if (p.resource) out.resourceRules.push({ verbs, apiGroups: [p.apiGroup], resources: [p.resource] });
      if (p.nonResourcePath) out.nonResourceRules.push({ verbs, nonResourceURLs: [p.nonResourcePath] });
    }
    return out;
  }
}

let cached: { text: string; authorizer: AbacAuthorizer | Error } | undefined;

/**
 * The authorizer for this env's policy, parsed once per isolate (re-parsed when the text
 * changes). A policy that does not parse is an error the chain reports, never an allow.
 */
export function abacAuthorizerFor(env: Env): AbacAuthorizer | Error {
  const raw = (env as Env & { EDGEPLANE_ABAC_POLICY?: string }).EDGEPLANE_ABAC_POLICY ?? "";
  if (cached?.text !== raw) {
    let authorizer: AbacAuthorizer | Error;
    try {
      authorizer = new AbacAuthorizer(parseAbacPolicy(decodeEnvText(raw)));
    } catch (e) {
      authorizer = e instanceof Error ? e : new Error(String(e));
    }
    cached = { text: raw, authorizer };
  }
  return cached.authorizer;
}

export const abacAuthorizer = {
  authorize(a: Attributes, env: Env): AuthorizerResult {
    const az = abacAuthorizerFor(env);
    if (az instanceof Error) return { decision: "noOpinion", reason: `ABAC policy error: ${az.message}` };
    return az.authorize(a);
  },
  rulesFor(user: UserInfo, namespace: string, env: Env): RulesResult {
    const az = abacAuthorizerFor(env);
    if (az instanceof Error)
      return { resourceRules: [], nonResourceRules: [], incomplete: true, errors: [az.message] };
    return az.rulesFor(user, namespace);
  },
};
