// MutatingAdmissionWebhook and ValidatingAdmissionWebhook: call the webhooks whose rules,
// selectors and match conditions select the request; apply mutating patches; reject on a
// denial, or on a failed call when failurePolicy is Fail.

import { evaluateBool, toCel } from "../../api/cel";
import { badRequest, StatusError, type StatusReason } from "../../api/errors";
import { applyJsonPatch } from "../../api/patch/json-patch";
import type { KubeObject } from "../../api/types";
import { validateObject } from "../handlers/prepare";
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
import {
  type AdmissionResponse,
  callWebhook,
  decodePatch,
  type ReviewRequest,
  WebhookCallError,
} from "./webhook-client";

export interface Webhook {
  name: string;
  rules?: unknown[];
  failurePolicy?: string;
  sideEffects?: string;
  timeoutSeconds?: number;
  namespaceSelector?: unknown;
  objectSelector?: unknown;
  matchConditions?: { name: string; expression: string }[];
  reinvocationPolicy?: string;
  clientConfig?: { url?: string; service?: Record<string, any> };
}

/** upstream ToStatusErr: a webhook's denial as the request's error. */
export function deniedError(name: string, status: AdmissionResponse["status"]): StatusError {
  const s = status ?? {};
  const code = typeof s.code === "number" && s.code >= 400 ? s.code : 400;
  const by = `admission webhook "${name}" denied the request`;
  const message = s.message
    ? `${by}: ${s.message}`
    : s.reason
      ? `${by}: ${s.reason}`
      : `${by} without explanation`;
  return new StatusError(code, (s.reason ?? "") as StatusReason, message, s.details as never);
}

/** A failed call under failurePolicy Fail: apierrors.NewInternalError. */
export function callFailedError(e: WebhookCallError): StatusError {
  return new StatusError(500, "InternalError", `Internal error occurred: ${e.message}`, {
    causes: [{ message: e.message }],
  });
}

/** Whether the webhook should be called for this request (rules, selectors, match conditions). */
export async function shouldCall(
  h: Webhook,
  a: AdmissionAttributes,
  ns: NamespaceLoader,
  request: ReviewRequest,
): Promise<boolean> {
  if (!anyRuleMatches(h.rules, ruleTarget(a))) return false;
  if (!objectSelectorMatches(h.objectSelector, a)) return false;
  if (!(await ns.selectorMatches(h.namespaceSelector))) return false;
  const conds = h.matchConditions ?? [];
  if (conds.length === 0) return true;
  const bindings = {
    object: toCel(a.object ?? null),
    oldObject: toCel(a.old ?? null),
    request: toCel({ ...request, object: undefined, oldObject: undefined }),
  };
  for (const c of conds) {
    const r = evaluateBool(c.expression, bindings);
    if ("error" in r)
      throw new WebhookCallError(h.name, `failed to evaluate match condition "${c.name}": ${r.error}`);
    if (!r.value) return false;
  }
  return true;
}

function checkDryRun(h: Webhook, a: AdmissionAttributes): void {
  if (a.w.dryRun && h.sideEffects !== "None" && h.sideEffects !== "NoneOnDryRun")
    throw badRequest(`admission webhook "${h.name}" does not support dry run`);
}

/** Replaces `target`'s contents with `next`'s, keeping the same object (the caller holds it). */
function replaceInPlace(target: KubeObject, next: KubeObject): void {
  for (const k of Object.keys(target)) delete (target as Record<string, unknown>)[k];
  Object.assign(target, next);
}

function hooksOf(configs: KubeObject[]): Webhook[] {
  return configs.flatMap((c) => (Array.isArray(c.webhooks) ? (c.webhooks as Webhook[]) : []));
}

type Outcome = "skipped" | "unchanged" | "changed";

/** Runs one webhook; says whether it was called and changed the object. Throws the request's rejection. */
async function runMutating(h: Webhook, a: AdmissionAttributes, ns: NamespaceLoader): Promise<Outcome> {
  const request: ReviewRequest = {
    ...requestView(a),
    object: a.object ?? null,
    oldObject: a.old ?? null,
  };
  let resp: AdmissionResponse;
  try {
    if (!(await shouldCall(h, a, ns, request))) return "skipped";
    checkDryRun(h, a);
    resp = await callWebhook(h, request, true);
  } catch (e) {
    if (!(e instanceof WebhookCallError)) throw e;
    if (h.failurePolicy === "Ignore") return "unchanged";
    throw callFailedError(e);
  }
  for (const msg of resp.warnings ?? []) if (msg) a.w.warnings.push(msg);
  if (!resp.allowed) throw deniedError(h.name, resp.status);
  if (!resp.patch || !a.object) return "unchanged";
  let next: KubeObject;
  try {
    next = applyJsonPatch(a.object, decodePatch(resp.patch)) as KubeObject;
  } catch (e) {
    throw new StatusError(
      500,
      "InternalError",
      `Internal error occurred: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
  if (JSON.stringify(next) === JSON.stringify(a.object)) return "unchanged";
  // the patched object is defaulted again, as upstream decodes it with defaulting
  if (!a.w.info.subresource) a.w.def.strategy.defaults?.(next);
  replaceInPlace(a.object, next);
  return "changed";
}

export const mutatingWebhooks: AdmissionPlugin = {
  name: "MutatingAdmissionWebhook",
  async mutate(a) {
    if (isExempt(a)) return;
    const hooks = hooksOf(await configObjects(a.w.c.env, "mutatingwebhookconfigurations"));
    if (hooks.length === 0) return;
    const ns = new NamespaceLoader(a);
    // reinvocationPolicy IfNeeded: a webhook called before a later change runs once more
    let lastChange = -1;
    const called: number[] = [];
    for (let i = 0; i < hooks.length; i++) {
      const outcome = await runMutating(hooks[i], a, ns);
      if (outcome !== "skipped") called.push(i);
      if (outcome === "changed") lastChange = i;
    }
    const again = called.filter((i) => i < lastChange && hooks[i].reinvocationPolicy === "IfNeeded");
    for (const i of again) await runMutating(hooks[i], a, ns);
    // the request was validated before admission: a webhook's changes are validated here
    if (lastChange >= 0 && a.object && !a.w.info.subresource) validateObject(a.w.def, a.object, a.old);
  },
};

async function runValidating(
  h: Webhook,
  a: AdmissionAttributes,
  ns: NamespaceLoader,
): Promise<StatusError | undefined> {
  const request: ReviewRequest = {
    ...requestView(a),
    object: a.object ?? null,
    oldObject: a.old ?? null,
  };
  let resp: AdmissionResponse;
  try {
    if (!(await shouldCall(h, a, ns, request))) return undefined;
    checkDryRun(h, a);
    resp = await callWebhook(h, request, false);
  } catch (e) {
    if (e instanceof StatusError) return e;
    if (!(e instanceof WebhookCallError)) throw e;
    return h.failurePolicy === "Ignore" ? undefined : callFailedError(e);
  }
  for (const msg of resp.warnings ?? []) if (msg) a.w.warnings.push(msg);
  return resp.allowed ? undefined : deniedError(h.name, resp.status);
}

export const validatingWebhooks: AdmissionPlugin = {
  name: "ValidatingAdmissionWebhook",
  async validate(a) {
    if (isExempt(a)) return;
    const hooks = hooksOf(await configObjects(a.w.c.env, "validatingwebhookconfigurations"));
    if (hooks.length === 0) return;
    const ns = new NamespaceLoader(a);
    // called in parallel, as upstream does; the first rejection in webhook order wins
    const errs = await Promise.all(hooks.map((h) => runValidating(h, a, ns)));
    const first = errs.find((e) => e !== undefined);
    if (first) throw first;
  },
};
