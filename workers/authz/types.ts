// What an authorizer is asked and what it answers (upstream's authorizer.Attributes and
// Decision), shared by the Node and RBAC authorizers, the chain and the review handlers.
import type { UserInfo } from "../../api/user";

export interface Attributes {
  user: UserInfo;
  verb: string;
  apiGroup: string;
  apiVersion?: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  path: string;
  isResourceRequest: boolean;
  /** the request's raw fieldSelector (list/watch), when it had one */
  fieldSelector?: string;
  /** the request's raw labelSelector (list/watch), when it had one */
  labelSelector?: string;
}

export type Decision = "allow" | "deny" | "noOpinion";

export interface AuthorizerResult {
  decision: Decision;
  reason: string;
}

/** One rule of a rules review (authorization.k8s.io/v1 ResourceRule / NonResourceRule). */
export interface ResourceRuleInfo {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
}

export interface NonResourceRuleInfo {
  verbs: string[];
  nonResourceURLs?: string[];
}

export interface RulesResult {
  resourceRules: ResourceRuleInfo[];
  nonResourceRules: NonResourceRuleInfo[];
  incomplete: boolean;
  errors: string[];
}

export const NO_OPINION: AuthorizerResult = { decision: "noOpinion", reason: "" };
export const ALLOW: AuthorizerResult = { decision: "allow", reason: "" };
