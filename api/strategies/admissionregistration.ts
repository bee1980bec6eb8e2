// admissionregistration.k8s.io/v1: mutating and validating webhook configurations,
// validating admission policies and their bindings. All cluster-scoped.

import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { validateLabelSelector, validateMeta } from "../validation/metadata";
import { isDNS1123Subdomain, nameIsDNSSubdomain } from "../validation/names";
import { ageColumn, column, ensureObject, isObject, nameColumn } from "./common";

const GROUP = "admissionregistration.k8s.io";
const arr = (v: unknown): any[] => (Array.isArray(v) ? v : []);

const OPERATIONS = ["*", "CREATE", "UPDATE", "DELETE", "CONNECT"];
const SCOPES = ["*", "Cluster", "Namespaced"];

// ---- defaults (upstream SetDefaults_*) ----

function defaultRule(r: any): void {
  if (isObject(r) && r.scope === undefined) r.scope = "*";
}

function defaultSelectors(o: Record<string, any>): void {
  if (!isObject(o.namespaceSelector)) o.namespaceSelector = {};
  if (!isObject(o.objectSelector)) o.objectSelector = {};
}

function defaultWebhook(h: any, mutating: boolean): void {
  if (!isObject(h)) return;
  h.failurePolicy ??= "Fail";
  h.matchPolicy ??= "Equivalent";
  defaultSelectors(h);
  h.timeoutSeconds ??= 10;
  if (mutating) h.reinvocationPolicy ??= "Never";
  for (const r of arr(h.rules)) defaultRule(r);
  const svc = h.clientConfig?.service;
  if (isObject(svc)) svc.port ??= 443;
}

function defaultMatchResources(m: any): void {
  if (!isObject(m)) return;
  m.matchPolicy ??= "Equivalent";
  defaultSelectors(m);
  for (const r of arr(m.resourceRules)) defaultRule(r);
  for (const r of arr(m.excludeResourceRules)) defaultRule(r);
}

// ---- validation ----

function validateRule(r: any, path: string, allowSub = true): StatusCause[] {
  const causes: StatusCause[] = [];
  const ops = arr(r?.operations);
  if (ops.length === 0) causes.push(field.required(`${path}.operations`));
  if (ops.length > 1 && ops.includes("*"))
    causes.push(
      field.invalid(`${path}.operations`, ops, "if '*' is present, must not specify other operations"),
    );
  ops.forEach((op, i) => {
    if (!OPERATIONS.includes(op)) causes.push(field.notSupported(`${path}.operations[${i}]`, op, OPERATIONS));
  });
  for (const key of ["apiGroups", "apiVersions"]) {
    const v = arr(r?.[key]);
    if (v.length === 0) causes.push(field.required(`${path}.${key}`));
    if (v.length > 1 && v.includes("*"))
      causes.push(field.invalid(`${path}.${key}`, v, "if '*' is present, must not specify other API groups"));
  }
  const res = arr(r?.resources);
  if (res.length === 0) causes.push(field.required(`${path}.resources`));
  res.forEach((x, i) => {
    if (typeof x !== "string" || x === "") causes.push(field.required(`${path}.resources[${i}]`));
    else if (!allowSub && x.includes("/"))
      causes.push(field.invalid(`${path}.resources[${i}]`, x, "must not contain subresources"));
    else if (x.split("/").length > 2)
      causes.push(field.invalid(`${path}.resources[${i}]`, x, "resource must be a name or name/subresource"));
  });
  if (r?.scope !== undefined && !SCOPES.includes(r.scope))
    causes.push(field.notSupported(`${path}.scope`, r.scope, SCOPES));
  return causes;
}

function validateSelectorsAt(o: any, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (isObject(o?.namespaceSelector))
    causes.push(...validateLabelSelector(o.namespaceSelector, `${path}.namespaceSelector`));
  if (isObject(o?.objectSelector))
    causes.push(...validateLabelSelector(o.objectSelector, `${path}.objectSelector`));
  return causes;
}

function validateMatchConditions(list: unknown, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const seen = new Set<string>();
  arr(list).forEach((m, i) => {
    const p = `${path}[${i}]`;
    if (!m?.name) causes.push(field.required(`${p}.name`));
    else if (seen.has(m.name)) causes.push(field.duplicate(`${p}.name`, m.name));
    else seen.add(m.name);
    if (!m?.expression) causes.push(field.required(`${p}.expression`));
  });
  return causes;
}

function validateWebhook(h: any, path: string, mutating: boolean): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!h?.name) causes.push(field.required(`${path}.name`));
  else {
    for (const m of isDNS1123Subdomain(h.name)) causes.push(field.invalid(`${path}.name`, h.name, m));
    if (h.name.split(".").length < 3)
      causes.push(
        field.invalid(
          `${path}.name`,
          h.name,
          "should be a domain with at least three segments separated by dots",
        ),
      );
  }
  arr(h?.rules).forEach((r, i) => {
    causes.push(...validateRule(r, `${path}.rules[${i}]`));
  });
  const fp = ["Ignore", "Fail"];
  if (h?.failurePolicy !== undefined && !fp.includes(h.failurePolicy))
    causes.push(field.notSupported(`${path}.failurePolicy`, h.failurePolicy, fp));
  const mp = ["Exact", "Equivalent"];
  if (h?.matchPolicy !== undefined && !mp.includes(h.matchPolicy))
    causes.push(field.notSupported(`${path}.matchPolicy`, h.matchPolicy, mp));
  const se = ["None", "NoneOnDryRun"];
  if (h?.sideEffects === undefined)
    causes.push(field.required(`${path}.sideEffects`, `must specify one of ${se.join(", ")}`));
  else if (!se.includes(h.sideEffects))
    causes.push(field.notSupported(`${path}.sideEffects`, h.sideEffects, se));
  const t = h?.timeoutSeconds;
  if (t !== undefined && (typeof t !== "number" || t < 1 || t > 30))
    causes.push(
      field.invalid(`${path}.timeoutSeconds`, t, "the timeout value must be between 1 and 30 seconds"),
    );
  if (
    mutating &&
    h?.reinvocationPolicy !== undefined &&
    !["Never", "IfNeeded"].includes(h.reinvocationPolicy)
  )
    causes.push(
      field.notSupported(`${path}.reinvocationPolicy`, h.reinvocationPolicy, ["Never", "IfNeeded"]),
    );
  const versions = arr(h?.admissionReviewVersions);
  if (versions.length === 0)
    causes.push(field.required(`${path}.admissionReviewVersions`, "must specify one of v1, v1beta1"));
  else if (!versions.some((v) => v === "v1" || v === "v1beta1"))
    causes.push(
      field.invalid(`${path}.admissionReviewVersions`, versions, "must include at least one of v1, v1beta1"),
    );
  const cc = h?.clientConfig;
  const hasURL = typeof cc?.url === "string" && cc.url !== "";
  const hasSvc = isObject(cc?.service);
  if (hasURL === hasSvc)
    causes.push(field.required(`${path}.clientConfig`, "exactly one of url or service is required"));
  if (hasURL) {
    let u: URL | undefined;
    try {
      u = new URL(cc.url);
    } catch {
      causes.push(field.invalid(`${path}.clientConfig.url`, cc.url, "host must be specified"));
    }
    if (u && u.protocol !== "https:" && u.protocol !== "http:")
      causes.push(
        field.invalid(`${path}.clientConfig.url`, cc.url, "'https' is the only allowed URL scheme"),
      );
    if (u && (u.hash || u.search))
      causes.push(
        field.invalid(`${path}.clientConfig.url`, cc.url, "query parameters and fragments are not allowed"),
      );
  }
  if (hasSvc) {
    if (!cc.service.name) causes.push(field.required(`${path}.clientConfig.service.name`));
    if (!cc.service.namespace) causes.push(field.required(`${path}.clientConfig.service.namespace`));
  }
  causes.push(...validateSelectorsAt(h, path));
  causes.push(...validateMatchConditions(h?.matchConditions, `${path}.matchConditions`));
  return causes;
}

function validateWebhookConfig(
  obj: KubeObject,
  old: KubeObject | undefined,
  mutating: boolean,
): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: false, name: nameIsDNSSubdomain });
  const seen = new Set<string>();
  arr(obj.webhooks).forEach((h, i) => {
    if (h?.name && seen.has(h.name)) causes.push(field.duplicate(`webhooks[${i}].name`, h.name));
    if (h?.name) seen.add(h.name);
    causes.push(...validateWebhook(h, `webhooks[${i}]`, mutating));
  });
  return causes;
}

function validateMatchResources(m: any, path: string, required: boolean): StatusCause[] {
  if (!isObject(m)) return required ? [field.required(path)] : [];
  const causes = validateSelectorsAt(m, path);
  const rules = arr(m.resourceRules);
  if (required && rules.length === 0) causes.push(field.required(`${path}.resourceRules`));
  rules.forEach((r, i) => {
    causes.push(...validateRule(r, `${path}.resourceRules[${i}]`));
  });
  arr(m.excludeResourceRules).forEach((r, i) => {
    causes.push(...validateRule(r, `${path}.excludeResourceRules[${i}]`));
  });
  return causes;
}

function validatePolicy(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: false, name: nameIsDNSSubdomain });
  const spec = isObject(obj.spec) ? obj.spec : {};
  const pk = spec.paramKind;
  if (pk !== undefined) {
    if (!pk?.apiVersion) causes.push(field.required("spec.paramKind.apiVersion"));
    if (!pk?.kind) causes.push(field.required("spec.paramKind.kind"));
  }
  causes.push(...validateMatchResources(spec.matchConstraints, "spec.matchConstraints", true));
  const fp = ["Ignore", "Fail"];
  if (spec.failurePolicy !== undefined && !fp.includes(spec.failurePolicy))
    causes.push(field.notSupported("spec.failurePolicy", spec.failurePolicy, fp));
  const validations = arr(spec.validations);
  if (validations.length === 0 && arr(spec.auditAnnotations).length === 0)
    causes.push(
      field.required("spec.validations", "validations or auditAnnotations must contain at least one item"),
    );
  const reasons = ["Unauthorized", "Forbidden", "Invalid", "RequestEntityTooLarge"];
  validations.forEach((v, i) => {
    const p = `spec.validations[${i}]`;
    if (!v?.expression) causes.push(field.required(`${p}.expression`));
    if (typeof v?.message === "string" && v.message.includes("\n"))
      causes.push(field.invalid(`${p}.message`, v.message, "message must not contain line breaks"));
    if (v?.reason !== undefined && !reasons.includes(v.reason))
      causes.push(field.notSupported(`${p}.reason`, v.reason, reasons));
  });
  arr(spec.variables).forEach((v, i) => {
    const p = `spec.variables[${i}]`;
    if (!v?.name) causes.push(field.required(`${p}.name`));
    else if (!/^[_a-zA-Z][_a-zA-Z0-9]*$/.test(v.name))
      causes.push(field.invalid(`${p}.name`, v.name, "name is not a valid CEL identifier"));
    if (!v?.expression) causes.push(field.required(`${p}.expression`));
  });
  causes.push(...validateMatchConditions(spec.matchConditions, "spec.matchConditions"));
  return causes;
}

function validateBinding(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: false, name: nameIsDNSSubdomain });
  const spec = isObject(obj.spec) ? obj.spec : {};
  if (!spec.policyName) causes.push(field.required("spec.policyName"));
  const pr = spec.paramRef;
  if (isObject(pr)) {
    if (pr.name && pr.selector)
      causes.push(field.forbidden("spec.paramRef.name", "name and selector are mutually exclusive"));
    if (!pr.name && !pr.selector)
      causes.push(field.required("spec.paramRef", "one of name or selector must be set"));
    if (pr.selector) causes.push(...validateLabelSelector(pr.selector, "spec.paramRef.selector"));
    const actions = ["Allow", "Deny"];
    if (pr.parameterNotFoundAction === undefined)
      causes.push(field.required("spec.paramRef.parameterNotFoundAction"));
    else if (!actions.includes(pr.parameterNotFoundAction))
      causes.push(
        field.notSupported("spec.paramRef.parameterNotFoundAction", pr.parameterNotFoundAction, actions),
      );
  }
  causes.push(...validateMatchResources(spec.matchResources, "spec.matchResources", false));
  const actions = arr(spec.validationActions);
  const allowed = ["Deny", "Warn", "Audit"];
  if (actions.length === 0)
    causes.push(field.required("spec.validationActions", "at least one validation action is required"));
  const seen = new Set<string>();
  actions.forEach((a, i) => {
    if (!allowed.includes(a)) causes.push(field.notSupported(`spec.validationActions[${i}]`, a, allowed));
    if (seen.has(a)) causes.push(field.duplicate(`spec.validationActions[${i}]`, a));
    seen.add(a);
  });
  if (seen.has("Deny") && seen.has("Warn"))
    causes.push(
      field.invalid(
        "spec.validationActions",
        actions,
        "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
      ),
    );
  return causes;
}

// ---- columns ----

const webhooksColumn = column(
  "Webhooks",
  "integer",
  "Webhooks indicates the number of webhooks registered in this configuration",
  (o) => arr(o.webhooks).length,
);

function paramRefCell(o: KubeObject): string {
  const pr = o.spec?.paramRef;
  if (!isObject(pr)) return "<unset>";
  if (pr.name) return pr.namespace ? `${pr.namespace}/${pr.name}` : `*/${pr.name}`;
  return "*/*";
}

const base = { group: GROUP, version: "v1", verbs: STANDARD_VERBS, namespaced: false } as const;

export const mutatingwebhookconfigurations: ResourceDef = {
  ...base,
  verbs: STANDARD_VERBS,
  resource: "mutatingwebhookconfigurations",
  kind: "MutatingWebhookConfiguration",
  listKind: "MutatingWebhookConfigurationList",
  singular: "mutatingwebhookconfiguration",
  categories: ["api-extensions"],
  strategy: {
    defaults: (o) => {
      for (const h of arr(o.webhooks)) defaultWebhook(h, true);
    },
    validate: (o, old) => validateWebhookConfig(o, old, true),
    columns: [nameColumn, webhooksColumn, ageColumn],
    generation: true,
  },
};

export const validatingwebhookconfigurations: ResourceDef = {
  ...base,
  verbs: STANDARD_VERBS,
  resource: "validatingwebhookconfigurations",
  kind: "ValidatingWebhookConfiguration",
  listKind: "ValidatingWebhookConfigurationList",
  singular: "validatingwebhookconfiguration",
  categories: ["api-extensions"],
  strategy: {
    defaults: (o) => {
      for (const h of arr(o.webhooks)) defaultWebhook(h, false);
    },
    validate: (o, old) => validateWebhookConfig(o, old, false),
    columns: [nameColumn, webhooksColumn, ageColumn],
    generation: true,
  },
};

export const validatingadmissionpolicies: ResourceDef = {
  ...base,
  verbs: STANDARD_VERBS,
  resource: "validatingadmissionpolicies",
  kind: "ValidatingAdmissionPolicy",
  listKind: "ValidatingAdmissionPolicyList",
  singular: "validatingadmissionpolicy",
  categories: ["api-extensions"],
  subresources: { status: { kind: "ValidatingAdmissionPolicy", verbs: ["get", "patch", "update"] } },
  strategy: {
    defaults: (o) => {
      const spec = ensureObject(o as Record<string, any>, "spec");
      spec.failurePolicy ??= "Fail";
      defaultMatchResources(spec.matchConstraints);
    },
    validate: validatePolicy,
    columns: [
      nameColumn,
      column(
        "Validations",
        "integer",
        "Validations indicates the number of validation rules defined in this configuration",
        (o) => arr(o.spec?.validations).length,
      ),
      column(
        "ParamKind",
        "string",
        "ParamKind specifies the kind of resources used to parameterize this policy",
        (o) => {
          const pk = o.spec?.paramKind;
          return isObject(pk) ? `${pk.apiVersion ?? ""}/${pk.kind ?? ""}` : "<unset>";
        },
      ),
      ageColumn,
    ],
    generation: true,
  },
};

export const validatingadmissionpolicybindings: ResourceDef = {
  ...base,
  verbs: STANDARD_VERBS,
  resource: "validatingadmissionpolicybindings",
  kind: "ValidatingAdmissionPolicyBinding",
  listKind: "ValidatingAdmissionPolicyBindingList",
  singular: "validatingadmissionpolicybinding",
  categories: ["api-extensions"],
  strategy: {
    defaults: (o) => {
      const spec = ensureObject(o as Record<string, any>, "spec");
      if (isObject(spec.matchResources)) defaultMatchResources(spec.matchResources);
    },
    validate: validateBinding,
    columns: [
      nameColumn,
      column(
        "PolicyName",
        "string",
        "PolicyName indicates the policy definition which the policy binding binded to",
        (o) => o.spec?.policyName ?? "",
      ),
      column(
        "ParamRef",
        "string",
        "ParamRef indicates the param resource which sets the configration param",
        paramRefCell,
      ),
      ageColumn,
    ],
    generation: true,
  },
};
