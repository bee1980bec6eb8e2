// RBAC escalation prevention (upstream's role and binding registries): a user may only write
// a Role/ClusterRole whose rules they already hold (or with `escalate` on it), and only bind a
// role whose rules they hold (or with `bind` on it). system:masters may do anything.
import { forbidden, qualifiedResource, StatusError } from "../../api/errors";
import { RBAC_GROUP } from "../../api/rbac/bootstrap";
import {
  covers,
  escalationMessage,
  FULL_AUTHORITY,
  type PolicyRule,
  type RoleRef,
} from "../../api/rbac/rules";
import type { KubeObject } from "../../api/types";
import type { UserInfo } from "../../api/user";
import type { Env } from "../../durable-objects/env";
import { PRIVILEGED_GROUP } from "./chain";
import { aggregate, rbacAuthorizer } from "./rbac";
import type { Attributes } from "./types";

const isPrivileged = (user: UserInfo) => user.groups.includes(PRIVILEGED_GROUP);

function forbiddenFor(resource: string, name: string, message: string): Error {
  const gr = { group: RBAC_GROUP, resource };
  return forbidden(`${qualifiedResource(gr)} ${JSON.stringify(name)} is forbidden: ${message}`, {
    name,
    group: RBAC_GROUP,
    kind: resource,
  });
}

function attrs(user: UserInfo, verb: string, resource: string, namespace: string, name: string): Attributes {
  return {
    user,
    verb,
    apiGroup: RBAC_GROUP,
    apiVersion: "*",
    resource,
    subresource: "",
    namespace,
    name,
    path: "",
    isResourceRequest: true,
  };
}

/** ConfirmNoEscalation: the user's rules in `namespace` must cover `rules`; returns the message when not. */
async function escalationProblem(
  user: UserInfo,
  namespace: string,
  rules: PolicyRule[],
  env: Env,
): Promise<string | undefined> {
  const snap = await rbacAuthorizer.snapshot(env);
  const held = snap.rulesFor(user, namespace);
  const result = covers(
    held.rules.map((r) => r.rule),
    rules,
  );
  if (result.covers) return undefined;
  return escalationMessage(user, result.missing, held.errors.length ? [aggregate(held.errors)] : []);
}

/** Only ownerReferences/finalizers (what the garbage collector writes) differ. */
function onlyGCFieldsChanged(obj: KubeObject, old: KubeObject | undefined): boolean {
  if (!old) return false;
  const strip = (o: KubeObject) => {
    const c = structuredClone(o);
    for (const k of [
      "ownerReferences",
      "finalizers",
      "resourceVersion",
      "managedFields",
      "generation",
      "creationTimestamp",
      "uid",
    ])
      delete c.metadata[k];
    delete c.apiVersion;
    delete c.kind;
    return JSON.stringify(c);
  };
  return strip(obj) === strip(old);
}

/** Whether an RBAC object is the cluster-scoped kind, and the resource, namespace and name to name it by. */
function scopeOf(obj: KubeObject, clusterKind: string, clusterResource: string, namespacedResource: string) {
  const cluster = obj.kind ? obj.kind === clusterKind : !obj.metadata?.namespace;
  return {
    cluster,
    resource: cluster ? clusterResource : namespacedResource,
    namespace: cluster ? "" : (obj.metadata?.namespace ?? ""),
    name: obj.metadata?.name ?? "",
  };
}

/**
 * Call on create/update of roles and clusterroles (after defaulting, before storing).
 * Throws 403 with upstream's message when the user would grant rules they do not hold.
 */
export async function checkRoleEscalation(
  user: UserInfo,
  obj: KubeObject,
  env: Env,
  old?: KubeObject,
): Promise<void> {
  if (isPrivileged(user)) return;
  if (onlyGCFieldsChanged(obj, old)) return;
  const { cluster, resource, namespace, name } = scopeOf(obj, "ClusterRole", "clusterroles", "roles");
  // `escalate` on the role lets a user write any rules into it
  const esc = await rbacAuthorizer.authorize(attrs(user, "escalate", resource, namespace, name), env);
  if (esc.decision === "allow") return;
  if (cluster && obj.aggregationRule) {
    const changed =
      !old || JSON.stringify(old.aggregationRule ?? null) !== JSON.stringify(obj.aggregationRule);
    if (changed && (await escalationProblem(user, "", FULL_AUTHORITY, env)))
      throw forbiddenFor(resource, name, "must have cluster-admin privileges to use the aggregationRule");
  }
  const rules = Array.isArray(obj.rules) ? (obj.rules as PolicyRule[]) : [];
  const problem = await escalationProblem(user, namespace, rules, env);
  if (problem) throw forbiddenFor(resource, name, problem);
}

/**
 * Call on create/update of rolebindings and clusterrolebindings. Allowed when the user has
 * `bind` on the referenced role (in the binding's namespace), or already holds its rules.
 */
export async function checkBindingEscalation(
  user: UserInfo,
  obj: KubeObject,
  env: Env,
  old?: KubeObject,
): Promise<void> {
  if (isPrivileged(user)) return;
  if (onlyGCFieldsChanged(obj, old)) return;
  const { resource, namespace, name } = scopeOf(
    obj,
    "ClusterRoleBinding",
    "clusterrolebindings",
    "rolebindings",
  );
  const ref = (obj.roleRef ?? {}) as RoleRef;
  const refResource = ref.kind === "ClusterRole" ? "clusterroles" : ref.kind === "Role" ? "roles" : "";
  if (refResource) {
    const bind = await rbacAuthorizer.authorize(
      { ...attrs(user, "bind", refResource, namespace, ref.name), apiGroup: ref.apiGroup ?? RBAC_GROUP },
      env,
    );
    if (bind.decision === "allow") return;
  }
  const snap = await rbacAuthorizer.snapshot(env);
  const { rules, error } = snap.roleRefRules(ref, namespace);
  if (error) {
    // upstream returns the lister's NotFound as is
    const missing = ref.kind === "ClusterRole" ? "clusterrole" : "role";
    throw new StatusError(404, "NotFound", error, { name: ref.name, group: RBAC_GROUP, kind: missing });
  }
  const problem = await escalationProblem(user, namespace, rules!, env);
  if (problem) throw forbiddenFor(resource, name, problem);
}
