// rbac.authorization.k8s.io/v1 roles, clusterroles, rolebindings, clusterrolebindings.

import { field, type StatusCause } from "../errors";
import type { ResourceDef, TableColumn } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { validateLabelSelector, validateMeta } from "../validation/metadata";
import { isDNS1123Subdomain, isValidPathSegmentName, nameIsPathSegment } from "../validation/names";
import { ageColumn, column, createdAtColumn, isObject, nameColumn } from "./common";

const GROUP = "rbac.authorization.k8s.io";
const arr = (v: unknown): any[] => (Array.isArray(v) ? v : []);

export function validateRules(rules: unknown, namespaced: boolean, path = "rules"): StatusCause[] {
  const causes: StatusCause[] = [];
  arr(rules).forEach((rule, i) => {
    const p = `${path}[${i}]`;
    if (arr(rule?.verbs).length === 0)
      causes.push(field.required(`${p}.verbs`, "verbs must contain at least one value"));
    const nonResource = arr(rule?.nonResourceURLs);
    if (nonResource.length > 0) {
      if (namespaced)
        causes.push(
          field.invalid(
            `${p}.nonResourceURLs`,
            nonResource,
            "namespaced rules cannot apply to non-resource URLs",
          ),
        );
      if (arr(rule?.apiGroups).length || arr(rule?.resources).length || arr(rule?.resourceNames).length)
        causes.push(
          field.invalid(
            `${p}.nonResourceURLs`,
            nonResource,
            "rules cannot apply to both regular resources and non-resource URLs",
          ),
        );
      return;
    }
    if (arr(rule?.apiGroups).length === 0)
      causes.push(field.required(`${p}.apiGroups`, "resource rules must supply at least one api group"));
    if (arr(rule?.resources).length === 0)
      causes.push(field.required(`${p}.resources`, "resource rules must supply at least one resource"));
  });
  return causes;
}

function validateRole(obj: KubeObject, old: KubeObject | undefined, namespaced: boolean): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced, name: nameIsPathSegment });
  if (!namespaced && isObject(obj.aggregationRule)) {
    const selectors = arr(obj.aggregationRule.clusterRoleSelectors);
    if (selectors.length === 0)
      causes.push(
        field.required(
          "aggregationRule.clusterRoleSelectors",
          "at least one clusterRoleSelector required if aggregationRule is non-nil",
        ),
      );
    selectors.forEach((s, i) => {
      causes.push(...validateLabelSelector(s, `aggregationRule.clusterRoleSelectors[${i}]`));
    });
    return causes;
  }
  causes.push(...validateRules(obj.rules, namespaced));
  return causes;
}

function defaultBinding(obj: KubeObject): void {
  if (isObject(obj.roleRef) && !obj.roleRef.apiGroup) obj.roleRef.apiGroup = GROUP;
  for (const s of arr(obj.subjects)) {
    if (!isObject(s) || s.apiGroup) continue;
    if (s.kind === "User" || s.kind === "Group") s.apiGroup = GROUP;
    else if (s.kind === "ServiceAccount") s.apiGroup = "";
  }
}

function validateBinding(obj: KubeObject, old: KubeObject | undefined, namespaced: boolean): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced, name: nameIsPathSegment });
  const ref = isObject(obj.roleRef) ? obj.roleRef : {};
  if (ref.apiGroup !== GROUP)
    causes.push(field.notSupported("roleRef.apiGroup", ref.apiGroup ?? "", [GROUP]));
  const kinds = namespaced ? ["Role", "ClusterRole"] : ["ClusterRole"];
  if (!kinds.includes(ref.kind)) causes.push(field.notSupported("roleRef.kind", ref.kind ?? "", kinds));
  if (!ref.name) causes.push(field.required("roleRef.name"));
  else
    for (const msg of isValidPathSegmentName(ref.name))
      causes.push(field.invalid("roleRef.name", ref.name, msg));
  arr(obj.subjects).forEach((s, i) => {
    const p = `subjects[${i}]`;
    if (!s?.name) causes.push(field.required(`${p}.name`));
    switch (s?.kind) {
      case "ServiceAccount":
        if (s.name)
          for (const msg of isDNS1123Subdomain(s.name)) causes.push(field.invalid(`${p}.name`, s.name, msg));
        if (s.apiGroup) causes.push(field.notSupported(`${p}.apiGroup`, s.apiGroup, [""]));
        if (!namespaced && !s.namespace) causes.push(field.required(`${p}.namespace`));
        break;
      case "User":
      case "Group":
        if (s.apiGroup !== GROUP) causes.push(field.notSupported(`${p}.apiGroup`, s.apiGroup ?? "", [GROUP]));
        break;
      default:
        causes.push(field.notSupported(`${p}.kind`, s?.kind ?? "", ["ServiceAccount", "User", "Group"]));
    }
  });
  if (old && JSON.stringify(old.roleRef ?? {}) !== JSON.stringify(obj.roleRef ?? {}))
    causes.push(field.invalid("roleRef", obj.roleRef ?? null, "cannot change roleRef"));
  return causes;
}

/** SubjectsStrings: users, groups and "namespace/name" service accounts. */
function subjects(o: KubeObject, kind: string): string {
  return arr(o.subjects)
    .filter((s) => s?.kind === kind)
    .map((s) => (kind === "ServiceAccount" ? `${s.namespace ?? ""}/${s.name}` : s.name))
    .join(", ");
}

const bindingColumns = (what: string): TableColumn[] => [
  nameColumn,
  column(
    "Role",
    "string",
    "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable.",
    (o) => `${o.roleRef?.kind ?? ""}/${o.roleRef?.name ?? ""}`,
  ),
  ageColumn,
  column("Users", "string", `Users in the ${what}`, (o) => subjects(o, "User"), 1),
  column("Groups", "string", `Groups in the ${what}`, (o) => subjects(o, "Group"), 1),
  column(
    "ServiceAccounts",
    "string",
    `ServiceAccounts in the ${what}`,
    (o) => subjects(o, "ServiceAccount"),
    1,
  ),
];

const base = { group: GROUP, version: "v1", verbs: STANDARD_VERBS } as const;

export const roles: ResourceDef = {
  ...base,
  verbs: STANDARD_VERBS,
  resource: "roles",
  kind: "Role",
  listKind: "RoleList",
  singular: "role",
  namespaced: true,
  strategy: {
    validate: (o, old) => validateRole(o, old, true),
    columns: [nameColumn, createdAtColumn],
    generation: false,
  },
};

export const clusterroles: ResourceDef = {
  ...base,
  verbs: STANDARD_VERBS,
  resource: "clusterroles",
  kind: "ClusterRole",
  listKind: "ClusterRoleList",
  singular: "clusterrole",
  namespaced: false,
  strategy: {
    validate: (o, old) => validateRole(o, old, false),
    columns: [nameColumn, createdAtColumn],
    generation: false,
  },
};

export const rolebindings: ResourceDef = {
  ...base,
  verbs: STANDARD_VERBS,
  resource: "rolebindings",
  kind: "RoleBinding",
  listKind: "RoleBindingList",
  singular: "rolebinding",
  namespaced: true,
  strategy: {
    defaults: defaultBinding,
    validate: (o, old) => validateBinding(o, old, true),
    columns: bindingColumns("roleBinding"),
    generation: false,
  },
};

export const clusterrolebindings: ResourceDef = {
  ...base,
  verbs: STANDARD_VERBS,
  resource: "clusterrolebindings",
  kind: "ClusterRoleBinding",
  listKind: "ClusterRoleBindingList",
  singular: "clusterrolebinding",
  namespaced: false,
  strategy: {
    defaults: defaultBinding,
    validate: (o, old) => validateBinding(o, old, false),
    columns: bindingColumns("clusterRoleBinding"),
    generation: false,
  },
};
