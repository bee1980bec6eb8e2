// Create-only, never-stored review kinds: authorization.k8s.io/v1 access and rules
// reviews, authentication.k8s.io/v1 token and self-subject reviews. They have no name.

import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import type { KubeObject } from "../types";
import { isObject } from "./common";

const AUTHZ = "authorization.k8s.io";
const AUTHN = "authentication.k8s.io";

function accessSpec(o: KubeObject): StatusCause[] {
  const spec = isObject(o.spec) ? o.spec : {};
  const hasResource = isObject(spec.resourceAttributes);
  const hasNonResource = isObject(spec.nonResourceAttributes);
  if (hasResource && hasNonResource)
    return [
      field.invalid(
        "spec.resourceAttributes",
        spec.resourceAttributes,
        "cannot be specified in combination with nonResourceAttributes",
      ),
    ];
  if (!hasResource && !hasNonResource)
    return [
      field.required(
        "spec.resourceAttributes",
        "exactly one of nonResourceAttributes or resourceAttributes must be specified",
      ),
    ];
  return [];
}

function subjectAccess(o: KubeObject): StatusCause[] {
  const causes = accessSpec(o);
  const spec = isObject(o.spec) ? o.spec : {};
  if (!spec.user && !(Array.isArray(spec.groups) && spec.groups.length > 0) && !spec.uid)
    causes.push(
      field.invalid("spec.user", spec.user ?? "", "at least one of user or group must be specified"),
    );
  return causes;
}

function localSubjectAccess(o: KubeObject): StatusCause[] {
  const causes = subjectAccess(o);
  const ns = o.spec?.resourceAttributes?.namespace;
  if (isObject(o.spec?.nonResourceAttributes))
    causes.push(
      field.invalid(
        "spec.nonResourceAttributes",
        o.spec.nonResourceAttributes,
        "disallowed on this kind of request",
      ),
    );
  if (ns !== undefined && ns !== (o.metadata?.namespace ?? ""))
    causes.push(field.invalid("spec.resourceAttributes.namespace", ns, "must match metadata.namespace"));
  return causes;
}

function review(
  group: string,
  resource: string,
  kind: string,
  namespaced: boolean,
  validate?: (o: KubeObject) => StatusCause[],
): ResourceDef {
  return {
    group,
    version: "v1",
    resource,
    kind,
    listKind: `${kind}List`,
    singular: resource.slice(0, -1),
    namespaced,
    verbs: ["create"],
    strategy: { validate: validate ? (o) => validate(o) : () => [], generation: false },
  };
}

export const selfsubjectaccessreviews = review(
  AUTHZ,
  "selfsubjectaccessreviews",
  "SelfSubjectAccessReview",
  false,
  accessSpec,
);
export const selfsubjectrulesreviews = review(
  AUTHZ,
  "selfsubjectrulesreviews",
  "SelfSubjectRulesReview",
  false,
);
export const subjectaccessreviews = review(
  AUTHZ,
  "subjectaccessreviews",
  "SubjectAccessReview",
  false,
  subjectAccess,
);
export const localsubjectaccessreviews = review(
  AUTHZ,
  "localsubjectaccessreviews",
  "LocalSubjectAccessReview",
  true,
  localSubjectAccess,
);
export const tokenreviews = review(AUTHN, "tokenreviews", "TokenReview", false);
export const selfsubjectreviews = review(AUTHN, "selfsubjectreviews", "SelfSubjectReview", false);
