// ValidatingAdmissionPolicy: CEL validations from policies, applied through their bindings
// (with optional params), with Deny/Warn/Audit actions and failurePolicy.

import { evaluate, evaluateBool, toCel } from "../../api/cel";
import { qualifiedResource, StatusError, type StatusReason } from "../../api/errors";
import { lookupKind } from "../../api/registry";
import type { KubeObject } from "../../api/types";
import { selectorMatches } from "../../api/validation/metadata";
import { Store } from "../../durable-objects/store/client";
import {
  anyRuleMatches,
  configObjects,
  isExempt,
  NamespaceLoader,
  objectSelectorMatches,
  requestView,
  ruleTarget,
} from "./dynamic-match";
import type { AdmissionAttributes, AdmissionPlugin } from "./index";
import { admissionName } from "./util";

export interface Decision {
  policy: string;
  binding: string;
  message: string;
  reason: StatusReason;
  actions: string[];
}

const REASON_CODE: Record<string, number> = { Forbidden: 403, Unauthorized: 401, RequestEntityTooLarge: 413 };

/** Whether matchConstraints / matchResources select the request. */
export async function resourcesMatch(m: any, a: AdmissionAttributes, ns: NamespaceLoader): Promise<boolean> {
  if (!m) return true;
  const t = ruleTarget(a);
  if (Array.isArray(m.resourceRules) && m.resourceRules.length && !anyRuleMatches(m.resourceRules, t))
    return false;
  if (anyRuleMatches(m.excludeResourceRules, t)) return false;
  if (!objectSelectorMatches(m.objectSelector, a)) return false;
  return ns.selectorMatches(m.namespaceSelector);
}

/** The params a binding names: none (undefined entry), found objects, or "missing". */
async function paramsFor(
  policy: KubeObject,
  binding: KubeObject,
  a: AdmissionAttributes,
): Promise<(KubeObject | null)[] | "missing"> {
  const pk = policy.spec?.paramKind;
  if (!pk) return [null];
  const ref = binding.spec?.paramRef;
  if (!ref) throw new Error(`policy '${policy.metadata.name}' has paramKind but binding has no paramRef`);
  const def = lookupKind(pk.apiVersion, pk.kind);
  if (!def)
    throw new Error(`failed to find resource referenced by paramKind: '${pk.apiVersion}, Kind=${pk.kind}'`);
  const store = new Store(a.w.c.env, def);
  let namespace = "";
  if (def.namespaced) {
    namespace = ref.namespace || ruleTarget(a).namespace;
    if (!namespace)
      throw new Error(
        "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources",
      );
  }
  let found: KubeObject[];
  if (ref.name) {
    const o = await store.find(namespace, ref.name);
    found = o ? [o] : [];
  } else {
    const items = (JSON.parse(await store.listText({ namespace: namespace || undefined })).items ??
      []) as KubeObject[];
    found = items.filter((o) => selectorMatches(ref.selector ?? {}, o.metadata.labels ?? {}));
  }
  if (found.length === 0) return ref.parameterNotFoundAction === "Allow" ? [] : "missing";
  return found;
}

/** Evaluates one policy with one param; returns the failed validations as decisions (without actions). */
export function evaluatePolicy(
  spec: any,
  vars: { object: unknown; oldObject: unknown; request: unknown; params: unknown; namespaceObject: unknown },
): { message: string; reason: StatusReason }[] {
  const failOnError = spec.failurePolicy !== "Ignore";
  const out: { message: string; reason: StatusReason }[] = [];
  const variables: Record<string, unknown> = {};
  const bindings: Record<string, unknown> = {
    object: toCel(vars.object ?? null),
    oldObject: toCel(vars.oldObject ?? null),
    request: toCel(vars.request),
    params: toCel(vars.params ?? null),
    namespaceObject: toCel(vars.namespaceObject ?? null),
    variables,
  };
  for (const v of Array.isArray(spec.variables) ? spec.variables : []) {
    const r = evaluate(v.expression, bindings);
    if (!("error" in r)) variables[v.name] = r.value;
  }
  for (const c of Array.isArray(spec.matchConditions) ? spec.matchConditions : []) {
    const r = evaluateBool(c.expression, bindings);
    if ("error" in r) {
      if (failOnError)
        out.push({
          message: `failed to evaluate match condition "${c.name}": ${r.error}`,
          reason: "Invalid",
        });
      return out;
    }
    if (!r.value) return out;
  }
  for (const v of Array.isArray(spec.validations) ? spec.validations : []) {
    const expr = String(v.expression ?? "");
    const r = evaluateBool(expr, bindings);
    const reason = (v.reason || "Invalid") as StatusReason;
    if ("error" in r) {
      if (failOnError) out.push({ message: `expression '${expr}' resulted in error: ${r.error}`, reason });
      continue;
    }
    if (r.value) continue;
    let message = v.message || `failed expression: ${expr.trim()}`;
    if (v.messageExpression) {
      const m = evaluate(v.messageExpression, bindings);
      if (!("error" in m) && typeof m.value === "string" && m.value.trim() && !m.value.includes("\n"))
        message = m.value.trim();
    }
    out.push({ message, reason });
  }
  return out;
}

/** The rejection for the first denied decision, as upstream builds it. */
export function policyDeniedError(a: AdmissionAttributes, d: Decision): StatusError {
  const message = `ValidatingAdmissionPolicy '${d.policy}' with binding '${d.binding}' denied request: ${d.message}`;
  const name = admissionName(a);
  return new StatusError(
    REASON_CODE[d.reason] ?? 422,
    d.reason,
    `${qualifiedResource(a.w.def)} "${name}" is forbidden: ${message}`,
    {
      name,
      group: a.w.def.group || undefined,
      kind: a.w.def.resource,
      causes: [{ message }],
    },
  );
}

export const validatingAdmissionPolicy: AdmissionPlugin = {
  name: "ValidatingAdmissionPolicy",
  async validate(a) {
    if (isExempt(a)) return;
    const env = a.w.c.env;
    const bindings = await configObjects(env, "validatingadmissionpolicybindings");
    if (bindings.length === 0) return;
    const policies = new Map(
      (await configObjects(env, "validatingadmissionpolicies")).map((p) => [p.metadata.name ?? "", p]),
    );
    const ns = new NamespaceLoader(a);
    const request = requestView(a);
    const decisions: Decision[] = [];
    for (const b of bindings) {
      const p = policies.get(b.spec?.policyName ?? "");
      if (!p) continue;
      const spec = p.spec ?? {};
      if (!(await resourcesMatch(spec.matchConstraints, a, ns))) continue;
      if (b.spec?.matchResources && !(await resourcesMatch(b.spec.matchResources, a, ns))) continue;
      const actions: string[] = Array.isArray(b.spec?.validationActions) ? b.spec.validationActions : [];
      const decide = (message: string, reason: StatusReason) =>
        decisions.push({
          policy: p.metadata.name ?? "",
          binding: b.metadata.name ?? "",
          message,
          reason,
          actions,
        });
      let params: (KubeObject | null)[] | "missing";
      try {
        params = await paramsFor(p, b, a);
      } catch (e) {
        if (spec.failurePolicy !== "Ignore") decide(e instanceof Error ? e.message : String(e), "Invalid");
        continue;
      }
      if (params === "missing") {
        if (spec.failurePolicy !== "Ignore")
          decide("no params found for policy binding with `Deny` parameterNotFoundAction", "Invalid");
        continue;
      }
      const namespaceObject = (await ns.get()) ?? null;
      for (const param of params) {
        const failed = evaluatePolicy(spec, {
          object: a.object ?? null,
          oldObject: a.old ?? null,
          request,
          params: param,
          namespaceObject: a.w.def.group === "" && a.w.def.resource === "namespaces" ? null : namespaceObject,
        });
        for (const f of failed) decide(f.message, f.reason);
      }
    }
    for (const d of decisions)
      if (d.actions.includes("Warn"))
        a.w.warnings.push(
          `Validation failed for ValidatingAdmissionPolicy '${d.policy}' with binding '${d.binding}': ${d.message}`,
        );
    const denied = decisions.find((d) => d.actions.includes("Deny"));
    if (denied) throw policyDeniedError(a, denied);
  },
};
