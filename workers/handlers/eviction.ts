// pods/eviction (what `kubectl drain` posts): a policy/v1 Eviction deletes the pod with the
// eviction's deleteOptions, graceful as any delete, unless the PodDisruptionBudget covering
// the pod has no disruption to spare: then 429, and kubectl drain tries again. An allowed
// eviction spends one (status.disruptionsAllowed down, the pod in status.disruptedPods) before
// the pod is deleted, so two evictions at once cannot both spend the last one.

import { badRequest, conflict, forbidden, StatusError } from "../../api/errors";
import { isPodReady } from "../../api/pod-state";
import { lookupGVR } from "../../api/registry";
import { statusJSON } from "../../api/status-json";
import { isObject } from "../../api/strategies/common";
import { pdbCovers } from "../../api/strategies/poddisruptionbudgets";
import { rfc3339 } from "../../api/time";
import type { KubeObject } from "../../api/types";
import { Store } from "../../durable-objects/store/client";
import { admitMutating, admitValidating } from "../admission";
import { decodeBody } from "../encoding/request-body";
import { checkFields, objectFound } from "./field-validation";
import { isConflict, requestNamespace } from "./prepare";
import { respondWith, type WriteContext } from "./write-context";

/** upstream's answer to a binding or an eviction */
export const SUCCESS_201 = statusJSON({ status: "Success", code: 201 });

const PDB = lookupGVR("policy", "v1", "poddisruptionbudgets")!;
const PODS = { group: "", resource: "pods" };
const EVICTED = {
  type: "DisruptionTarget",
  status: "True",
  reason: "EvictionByEvictionAPI",
  message: "Eviction API: evicting",
};
/** upstream MaxDisruptedPodSize: past this many evictions the controller has not yet seen, no more */
const MAX_DISRUPTED_PODS = 2000;
const ATTEMPTS = 20;
const REFUSED = "Cannot evict pod as it would violate the pod's disruption budget.";

/** 429 with the budget named in a DisruptionBudget cause (and a retry delay when it is only stale). */
function refused(message: string, retryAfterSeconds?: number): StatusError {
  return new StatusError(429, "TooManyRequests", REFUSED, {
    ...(retryAfterSeconds ? { retryAfterSeconds } : {}),
    causes: [{ type: "DisruptionBudget", message }],
  });
}

const pdbForbidden = (name: string, why: string) =>
  forbidden(`poddisruptionbudget.policy "${name}" is forbidden: ${why}`, {
    name,
    group: "policy",
    kind: "poddisruptionbudget",
  });

/**
 * Spends one disruption of the budget covering `pod`, or throws why not. A pod that is not
 * Ready may go without spending one when its budget allows that.
 */
async function spendBudget(w: WriteContext, pod: KubeObject, dryRun: boolean): Promise<void> {
  const store = new Store(w.c.env, PDB);
  for (let attempt = 0; ; attempt++) {
    const list = JSON.parse(await store.listText({ namespace: pod.metadata.namespace }));
    const budgets = (list.items as KubeObject[]).filter((b) => pdbCovers(b, pod));
    if (budgets.length === 0) return;
    if (budgets.length > 1)
      throw new StatusError(
        500,
        "InternalError",
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
      );
    const pdb = budgets[0]!;
    const name = pdb.metadata.name!;
    const status = pdb.status ?? {};
    // a pod that is not Ready costs nothing when the budget allows it
    if (!isPodReady(pod)) {
      if (pdb.spec?.unhealthyPodEvictionPolicy === "AlwaysAllow") return;
      if ((status.currentHealthy ?? 0) >= (status.desiredHealthy ?? 0) && (status.desiredHealthy ?? 0) > 0)
        return;
    }
    if ((status.observedGeneration ?? 0) < (pdb.metadata.generation ?? 0))
      throw refused(`The disruption budget ${name} is still being processed by the server.`, 10);
    const allowed = status.disruptionsAllowed ?? 0;
    if (allowed < 0) throw pdbForbidden(name, "pdb disruptions allowed is negative");
    if (Object.keys(status.disruptedPods ?? {}).length > MAX_DISRUPTED_PODS)
      throw pdbForbidden(
        name,
        "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
      );
    if (allowed === 0)
      throw refused(
        `The disruption budget ${name} needs ${status.desiredHealthy ?? 0} healthy pods and has ${status.currentHealthy ?? 0} currently`,
      );
    if (dryRun) return;
    const next = structuredClone(pdb);
    next.status = { ...status, disruptionsAllowed: allowed - 1 };
    next.status.disruptedPods = { ...status.disruptedPods, [pod.metadata.name!]: rfc3339() };
    if (allowed - 1 === 0)
      next.status.conditions = (status.conditions ?? []).map((c: any) =>
        c.type === "DisruptionAllowed" && c.status === "True"
          ? { ...c, status: "False", reason: "InsufficientPods", lastTransitionTime: rfc3339() }
          : c,
      );
    try {
      await store.update(next, { expectRV: pdb.metadata.resourceVersion });
      return;
    } catch (e) {
      if (!isConflict(e) || attempt + 1 >= ATTEMPTS) throw e;
    }
  }
}

/** The pod's DisruptionTarget condition, which says why it is going (upstream sets it before the delete). */
async function markDisruptionTarget(w: WriteContext, read: KubeObject): Promise<void> {
  let pod = read;
  for (let attempt = 0; attempt < 3; attempt++) {
    const conditions: any[] = pod.status?.conditions ?? [];
    if (
      conditions.some(
        (c) => c.type === "DisruptionTarget" && c.status === "True" && c.reason === EVICTED.reason,
      )
    )
      return;
    const next = structuredClone(pod);
    next.status = {
      ...next.status,
      conditions: [
        ...conditions.filter((c) => c.type !== "DisruptionTarget"),
        { ...EVICTED, lastProbeTime: null, lastTransitionTime: rfc3339() },
      ],
    };
    try {
      await w.store.update(next, { expectRV: pod.metadata.resourceVersion }, pod);
      return;
    } catch (e) {
      if (!isConflict(e)) throw e;
      pod = await w.store.get(pod.metadata.namespace!, pod.metadata.name!);
    }
  }
}

export async function eviction(w: WriteContext, namespace: string): Promise<Response> {
  const decoded = await decodeBody(w.c.req.raw, "Eviction");
  const body = decoded.value;
  if (!isObject(body)) throw badRequest("the body of the request must be an Eviction object");
  if (body.kind !== undefined && body.kind !== "Eviction")
    throw badRequest(
      `the kind in the data (${String(body.kind)}) does not match the expected kind (Eviction)`,
    );
  // a body without apiVersion and kind is read as the URL's type, and its fields checked so
  body.apiVersion ??= "policy/v1";
  body.kind ??= "Eviction";
  const evictionObj = body as KubeObject;
  checkFields(w, evictionObj, objectFound(decoded, evictionObj, "Eviction"));
  if (body.metadata !== undefined && body.metadata !== null && !isObject(body.metadata))
    throw badRequest("the body of the request must be an Eviction object");
  evictionObj.metadata ??= {};
  requestNamespace(evictionObj, namespace);
  // a CREATE of pods/eviction, kind policy/v1 Eviction, admitted as upstream's EvictionREST
  // does: NodeRestriction, policies and webhooks decide before a budget is spent or the pod touched
  await admitMutating(w, "CREATE", evictionObj, undefined);
  const name = evictionObj.metadata?.name;
  if (name && name !== w.info.name) throw badRequest(`name in URL does not match name in Eviction object`);
  await admitValidating(w, "CREATE", evictionObj, undefined);
  const opts = isObject(evictionObj.deleteOptions) ? evictionObj.deleteOptions : {};
  const dryRun = w.dryRun || (Array.isArray(opts.dryRun) && opts.dryRun.includes("All"));
  const pod = await w.store.get(namespace, w.info.name);
  // finished, pending and already-going pods are not counted by budgets: no check
  const phase = pod.status?.phase;
  const pre = isObject(opts.preconditions) ? opts.preconditions : {};
  if (pre.uid !== undefined && pre.uid !== pod.metadata.uid)
    throw conflict(
      PODS,
      pod.metadata.name!,
      `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${pod.metadata.uid}`,
    );
  if (pre.resourceVersion !== undefined && pre.resourceVersion !== pod.metadata.resourceVersion)
    throw conflict(
      PODS,
      pod.metadata.name!,
      `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${pod.metadata.resourceVersion}`,
    );
  if (phase !== "Succeeded" && phase !== "Failed" && phase !== "Pending" && !pod.metadata.deletionTimestamp)
    await spendBudget(w, pod, dryRun);
  if (!dryRun) await markDisruptionTarget(w, pod);
  await w.store.remove(namespace, w.info.name, {
    gracePeriodSeconds: typeof opts.gracePeriodSeconds === "number" ? opts.gracePeriodSeconds : undefined,
    preconditions: { uid: pod.metadata.uid },
    dryRun,
  });
  return respondWith(w, SUCCESS_201, 201);
}
