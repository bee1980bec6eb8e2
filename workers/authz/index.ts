// workers/authz: the Node and RBAC authorizers, their chain, the access reviews, RBAC
// escalation prevention, NodeRestriction and the bootstrap policy. What the app wires in.
import type { KubeObject } from "../../api/types";
import type { UserInfo } from "../../api/user";
import type { Env } from "../../durable-objects/env";
import {
  localSubjectAccessReview,
  selfSubjectAccessReview,
  selfSubjectRulesReview,
  subjectAccessReview,
} from "./reviews";

export { authzAdmission } from "./admission";
export { ensureBootstrapPolicy, reconcileAggregatedClusterRoles } from "./bootstrap-policy";
export {
  attributesFromRequest,
  authorizationModes,
  authorize,
  authorizeRequest,
  forbiddenError,
  forbiddenMessage,
  rulesFor,
} from "./chain";
export { checkBindingEscalation, checkRoleEscalation } from "./escalation";
export { NodeAuthorizer, nodeAuthorizer } from "./node";
export { nodeRestriction } from "./node-restriction";
export { invalidateRbacCache, RBACAuthorizer, rbacAuthorizer } from "./rbac";
export type { Attributes, AuthorizerResult, Decision } from "./types";
export { localSubjectAccessReview, selfSubjectAccessReview, selfSubjectRulesReview, subjectAccessReview };

/**
 * POST on an authorization.k8s.io/v1 review resource: the answer object (respond 201).
 * `namespace` is the request path's (LocalSubjectAccessReview only); undefined for others.
 */
export function handleReview(
  resource: string,
  body: unknown,
  user: UserInfo,
  env: Env,
  namespace = "",
): Promise<KubeObject> {
  switch (resource) {
    case "selfsubjectaccessreviews":
      return selfSubjectAccessReview(body, user, env);
    case "selfsubjectrulesreviews":
      return selfSubjectRulesReview(body, user, env);
    case "subjectaccessreviews":
      return subjectAccessReview(body, user, env);
    case "localsubjectaccessreviews":
      return localSubjectAccessReview(body, user, env, namespace);
  }
  throw new Error(`not a review resource: ${resource}`);
}
