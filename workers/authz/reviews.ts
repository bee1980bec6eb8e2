// authorization.k8s.io/v1 reviews, answered by the same chain that guards requests, so
// `kubectl auth can-i` says what the server enforces. Each takes the decoded body and the
// caller, validates as upstream (422 Invalid, 400 BadRequest) and returns the object with
// its status filled. Nothing is stored.
import { badRequest, field, invalid, type StatusCause } from "../../api/errors";
import type { KubeObject } from "../../api/types";
import type { UserInfo } from "../../api/user";
import type { Env } from "../../durable-objects/env";
import { authorizationModes, authorize, rulesFor } from "./chain";
import type { Attributes } from "./types";

const GROUP = "authorization.k8s.io";
const API_VERSION = `${GROUP}/v1`;

const isObj = (v: unknown): v is Record<string, any> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function asReview(body: unknown, kind: string): KubeObject {
  if (!isObj(body)) throw badRequest(`not a ${kind}: ${JSON.stringify(body)}`);
  if (body.kind !== undefined && body.kind !== kind)
    throw badRequest(`the kind in the data (${body.kind}) does not match the expected kind (${kind})`);
  const o = structuredClone(body) as KubeObject;
  o.apiVersion = API_VERSION;
  o.kind = kind;
  o.metadata = isObj(o.metadata) ? o.metadata : {};
  if (!("creationTimestamp" in o.metadata)) o.metadata.creationTimestamp = null as unknown as string;
  o.spec = isObj(o.spec) ? o.spec : {};
  return o;
}

/** ValidateSubjectAccessReviewSpec / ValidateSelfSubjectAccessReviewSpec. */
function specCauses(spec: Record<string, any>, needsSubject: boolean): StatusCause[] {
  const causes: StatusCause[] = [];
  const hasRes = isObj(spec.resourceAttributes);
  const hasNonRes = isObj(spec.nonResourceAttributes);
  if (hasRes && hasNonRes)
    causes.push(
      field.invalid(
        "spec.nonResourceAttributes",
        spec.nonResourceAttributes,
        "cannot be specified in combination with resourceAttributes",
      ),
    );
  if (!hasRes && !hasNonRes)
    causes.push(
      field.invalid(
        "spec.resourceAttributes",
        null,
        "exactly one of nonResourceAttributes or resourceAttributes must be specified",
      ),
    );
  const groups = Array.isArray(spec.groups) ? spec.groups : [];
  if (needsSubject && !spec.user && groups.length === 0)
    causes.push(
      field.invalid("spec.user", spec.user ?? "", "at least one of user or group must be specified"),
    );
  return causes;
}

function metadataEmpty(meta: Record<string, any>, allow: string[]): boolean {
  return Object.entries(meta).every(
    ([k, v]) =>
      allow.includes(k) ||
      k === "managedFields" ||
      v === null ||
      v === undefined ||
      v === "" ||
      (isObj(v) && Object.keys(v).length === 0),
  );
}

function fail(kind: string, causes: StatusCause[]): never {
  throw invalid({ group: GROUP, kind }, "", causes);
}

/** ResourceAttributesFrom / NonResourceAttributesFrom. */
function attributesOf(user: UserInfo, spec: Record<string, any>): Attributes {
  const ra = spec.resourceAttributes;
  if (isObj(ra))
    return {
      user,
      verb: String(ra.verb ?? ""),
      apiGroup: String(ra.group ?? ""),
      apiVersion: String(ra.version ?? ""),
      resource: String(ra.resource ?? ""),
      subresource: String(ra.subresource ?? ""),
      namespace: String(ra.namespace ?? ""),
      name: String(ra.name ?? ""),
      path: "",
      isResourceRequest: true,
      fieldSelector:
        typeof ra.fieldSelector?.rawSelector === "string" ? ra.fieldSelector.rawSelector : undefined,
      labelSelector:
        typeof ra.labelSelector?.rawSelector === "string" ? ra.labelSelector.rawSelector : undefined,
    };
  const nra = isObj(spec.nonResourceAttributes) ? spec.nonResourceAttributes : {};
  return {
    user,
    verb: String(nra.verb ?? ""),
    apiGroup: "",
    resource: "",
    subresource: "",
    namespace: "",
    name: "",
    path: String(nra.path ?? ""),
    isResourceRequest: false,
  };
}

async function decide(o: KubeObject, attrs: Attributes, env: Env): Promise<KubeObject> {
  const r = await authorize(authorizationModes(env), attrs, env);
  const status: Record<string, unknown> = { allowed: r.decision === "allow" };
  if (r.decision === "deny") status.denied = true;
  if (r.reason) status.reason = r.reason;
  o.status = status;
  return o;
}

/** The user a (Local)SubjectAccessReview asks about: exactly what the spec names, no implied groups. */
function specUser(spec: Record<string, any>): UserInfo {
  const u: UserInfo = {
    name: String(spec.user ?? ""),
    uid: String(spec.uid ?? ""),
    groups: Array.isArray(spec.groups) ? spec.groups.map(String) : [],
  };
  if (isObj(spec.extra)) u.extra = spec.extra as Record<string, string[]>;
  return u;
}

/** POST selfsubjectaccessreviews: may the caller do this? */
export async function selfSubjectAccessReview(body: unknown, user: UserInfo, env: Env): Promise<KubeObject> {
  const kind = "SelfSubjectAccessReview";
  const o = asReview(body, kind);
  const causes = specCauses(o.spec, false);
  if (causes.length) fail(kind, causes);
  return decide(o, attributesOf(user, o.spec), env);
}

/** POST subjectaccessreviews: may spec.user/groups do this? */
export async function subjectAccessReview(body: unknown, _user: UserInfo, env: Env): Promise<KubeObject> {
  const kind = "SubjectAccessReview";
  const o = asReview(body, kind);
  const causes = specCauses(o.spec, true);
  if (!metadataEmpty(o.metadata, ["creationTimestamp"]))
    causes.push(field.invalid("metadata", o.metadata, "must be empty"));
  if (causes.length) fail(kind, causes);
  return decide(o, attributesOf(specUser(o.spec), o.spec), env);
}

/**
 * POST namespaces/<ns>/localsubjectaccessreviews: the same, inside one namespace.
 * `namespace` is the one in the request path.
 */
export async function localSubjectAccessReview(
  body: unknown,
  _user: UserInfo,
  env: Env,
  namespace: string,
): Promise<KubeObject> {
  const kind = "LocalSubjectAccessReview";
  const o = asReview(body, kind);
  if (!namespace) throw badRequest(`namespace is required on this type: ${namespace}`);
  if (!o.metadata.namespace) o.metadata.namespace = namespace;
  else if (o.metadata.namespace !== namespace)
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  const causes = specCauses(o.spec, true);
  if (!metadataEmpty(o.metadata, ["creationTimestamp", "namespace"]))
    causes.push(field.invalid("metadata", o.metadata, "must be empty except for namespace"));
  const ra = o.spec.resourceAttributes;
  if (isObj(ra) && (ra.namespace ?? "") !== o.metadata.namespace)
    causes.push(
      field.invalid("spec.resourceAttributes.namespace", ra.namespace ?? "", "must match metadata.namespace"),
    );
  if (isObj(o.spec.nonResourceAttributes))
    causes.push(
      field.invalid(
        "spec.nonResourceAttributes",
        o.spec.nonResourceAttributes,
        "disallowed on this kind of request",
      ),
    );
  if (causes.length) fail(kind, causes);
  return decide(o, attributesOf(specUser(o.spec), o.spec), env);
}

/** POST selfsubjectrulesreviews: every rule the caller holds in spec.namespace. */
export async function selfSubjectRulesReview(body: unknown, user: UserInfo, env: Env): Promise<KubeObject> {
  const kind = "SelfSubjectRulesReview";
  const o = asReview(body, kind);
  const namespace = typeof o.spec.namespace === "string" ? o.spec.namespace : "";
  if (!namespace) throw badRequest("no namespace on request");
  const r = await rulesFor(authorizationModes(env), user, namespace, env);
  const status: Record<string, unknown> = {
    resourceRules: r.resourceRules,
    nonResourceRules: r.nonResourceRules,
    incomplete: r.incomplete,
  };
  const errors = [...new Set(r.errors)];
  if (errors.length) status.evaluationError = errors.length === 1 ? errors[0] : `[${errors.join(", ")}]`;
  // upstream answers with a fresh object: only the status is filled
  return {
    apiVersion: API_VERSION,
    kind,
    metadata: { creationTimestamp: null as unknown as string },
    spec: {},
    status,
  };
}
