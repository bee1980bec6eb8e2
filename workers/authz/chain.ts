// The authorizer chain (upstream's union authorizer): members of system:masters are always
// allowed, then the configured modes run in order (EDGEPLANE_AUTHORIZATION_MODES, default
// "Node,RBAC"); the first allow or deny decides, and no decision at all is a deny. The 403
// it produces reads as upstream's, with every authorizer's reason appended.
import { forbidden, qualifiedResource } from "../../api/errors";
import { parseFieldSelector } from "../../api/selectors";
import type { UserInfo } from "../../api/user";
import { isValidPathSegmentName } from "../../api/validation/names";
import type { Env } from "../../durable-objects/env";
import type { RequestInfo } from "../request-info";
import { abacAuthorizer } from "./abac";
import { nodeAuthorizer } from "./node";
import { rbacAuthorizer } from "./rbac";
import type { Attributes, AuthorizerResult, RulesResult } from "./types";
import { webhookAuthorizer } from "./webhook";

export const DEFAULT_MODES = ["Node", "RBAC"];
export const PRIVILEGED_GROUP = "system:masters";

/** The configured modes: EDGEPLANE_AUTHORIZATION_MODES as a comma list, default Node,RBAC. */
export function authorizationModes(env: Env): string[] {
  const raw = (env as Env & { EDGEPLANE_AUTHORIZATION_MODES?: string }).EDGEPLANE_AUTHORIZATION_MODES;
  if (!raw?.trim()) return DEFAULT_MODES;
  return raw
    .split(",")
    .map((m) => m.trim())
    .filter(Boolean);
}

async function runMode(mode: string, attrs: Attributes, env: Env): Promise<AuthorizerResult> {
  switch (mode) {
    case "Node":
      return nodeAuthorizer.authorize(attrs, env);
    case "RBAC":
      return rbacAuthorizer.authorize(attrs, env);
    case "AlwaysAllow":
      return { decision: "allow", reason: "" };
    case "AlwaysDeny":
      return { decision: "deny", reason: "Everything is forbidden." };
    case "ABAC":
      return abacAuthorizer.authorize(attrs, env);
    case "Webhook":
      return webhookAuthorizer.authorize(attrs, env);
    default:
      return { decision: "noOpinion", reason: "" };
  }
}

/** Runs the chain: the first allow or deny wins; otherwise "noOpinion" with the joined reasons. */
export async function authorize(modes: string[], attrs: Attributes, env: Env): Promise<AuthorizerResult> {
  return (await decide(modes, attrs, env)).result;
}

/** The chain's decision and the mode that made it (for a pod's flow trace). */
async function decide(
  modes: string[],
  attrs: Attributes,
  env: Env,
): Promise<{ result: AuthorizerResult; mode?: string }> {
  if (attrs.user.groups.includes(PRIVILEGED_GROUP))
    return { result: { decision: "allow", reason: "" }, mode: PRIVILEGED_GROUP };
  const reasons: string[] = [];
  for (const mode of modes) {
    const r = await runMode(mode, attrs, env);
    if (r.decision !== "noOpinion") return { result: r, mode };
    if (r.reason) reasons.push(r.reason);
  }
  return { result: { decision: "noOpinion", reason: reasons.join("\n") } };
}

/** The union of every mode's rules for SelfSubjectRulesReview (system:masters adds none, as upstream). */
export async function rulesFor(
  modes: string[],
  user: UserInfo,
  namespace: string,
  env: Env,
): Promise<RulesResult> {
  const out: RulesResult = { resourceRules: [], nonResourceRules: [], incomplete: false, errors: [] };
  for (const mode of modes) {
    let r: RulesResult | undefined;
    if (mode === "Node") r = nodeAuthorizer.rulesFor(user);
    else if (mode === "RBAC") r = await rbacAuthorizer.rulesFor(user, namespace, env);
    else if (mode === "ABAC") r = abacAuthorizer.rulesFor(user, namespace, env);
    // a webhook cannot list rules: upstream reports the review as incomplete
    else if (mode === "Webhook")
      r = { resourceRules: [], nonResourceRules: [], incomplete: true, errors: [] };
    else if (mode === "AlwaysAllow")
      r = {
        resourceRules: [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }],
        nonResourceRules: [{ verbs: ["*"], nonResourceURLs: ["*"] }],
        incomplete: false,
        errors: [],
      };
    if (!r) continue;
    out.resourceRules.push(...r.resourceRules);
    out.nonResourceRules.push(...r.nonResourceRules);
    out.incomplete ||= r.incomplete;
    out.errors.push(...r.errors);
  }
  return out;
}

/**
 * The attributes of an HTTP request: its RequestInfo plus the list/watch selectors. As
 * upstream's RequestInfoFactory, a list or watch with `metadata.name=<n>` in its field
 * selector is about that one object (how kubelets watch single secrets and their Node).
 */
export function attributesFromRequest(user: UserInfo, info: RequestInfo, url?: URL): Attributes {
  const fieldSelector = url?.searchParams.get("fieldSelector") ?? undefined;
  const labelSelector = url?.searchParams.get("labelSelector") ?? undefined;
  let name = info.name;
  if (!name && (info.verb === "list" || info.verb === "watch") && fieldSelector) {
    try {
      const req = parseFieldSelector(fieldSelector).find((r) => r.key === "metadata.name" && r.op === "=");
      if (req && isValidPathSegmentName(req.values[0]).length === 0) name = req.values[0];
    } catch {
      // a malformed selector is the handler's 400 to give
    }
  }
  return {
    user,
    verb: info.verb,
    apiGroup: info.apiGroup,
    apiVersion: info.apiVersion,
    resource: info.resource,
    subresource: info.subresource,
    namespace: info.namespace,
    name,
    path: info.path,
    isResourceRequest: info.isResourceRequest,
    fieldSelector,
    labelSelector,
  };
}

/** Upstream's forbiddenMessage: User "x" cannot <verb> resource "r" in API group "g" ... */
export function forbiddenMessage(attrs: Attributes): string {
  const who = JSON.stringify(attrs.user.name);
  if (!attrs.isResourceRequest) return `User ${who} cannot ${attrs.verb} path ${JSON.stringify(attrs.path)}`;
  const res = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
  const head = `User ${who} cannot ${attrs.verb} resource ${JSON.stringify(res)} in API group ${JSON.stringify(attrs.apiGroup)}`;
  return attrs.namespace
    ? `${head} in the namespace ${JSON.stringify(attrs.namespace)}`
    : `${head} at the cluster scope`;
}

/** The 403 upstream sends: `<resource.group> "<name>" is forbidden: <message>[: <reason>]`. */
export function forbiddenError(attrs: Attributes, reason: string): Error {
  const msg = reason ? `${forbiddenMessage(attrs)}: ${reason}` : forbiddenMessage(attrs);
  const qualified = qualifiedResource({ group: attrs.apiGroup, resource: attrs.resource });
  let text: string;
  if (!qualified && !attrs.name) text = `forbidden: ${msg}`;
  else if (!attrs.name) text = `${qualified} is forbidden: ${msg}`;
  else text = `${qualified} ${JSON.stringify(attrs.name)} is forbidden: ${msg}`;
  return forbidden(text, {
    name: attrs.name || undefined,
    group: attrs.apiGroup || undefined,
    kind: attrs.resource || undefined,
  });
}

/**
 * Authorizes one request with the configured modes; throws the 403 when it is not allowed.
 * Answers the allow, with the mode that gave it.
 */
export async function authorizeRequest(
  attrs: Attributes,
  env: Env,
): Promise<AuthorizerResult & { mode?: string }> {
  const { result, mode } = await decide(authorizationModes(env), attrs, env);
  if (result.decision !== "allow") throw forbiddenError(attrs, result.reason);
  return { ...result, mode };
}
