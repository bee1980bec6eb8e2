// Binding a pod to a node (upstream's BindingREST): a Binding posted to pods/<name>/binding,
// or, the older way upstream still serves, to the namespace's bindings with the pod's name as
// its own. Either sets spec.nodeName once and records PodScheduled=True.

import { badRequest, conflict, field, invalid } from "../../api/errors";
import { pods, validatePodBinding } from "../../api/strategies/pods";
import { rfc3339 } from "../../api/time";
import type { KubeObject } from "../../api/types";
import { Store } from "../../durable-objects/store/client";
import { admitMutating, admitValidating } from "../admission";
import { decodeBody } from "../encoding/request-body";
import { bindingTrace } from "../trace/status";
import { SUCCESS_201 } from "./eviction";
import { checkFields, objectFound } from "./field-validation";
import { checkDecodedTypeMeta, isConflict, requestNamespace } from "./prepare";
import { respondWith, type WriteContext } from "./write-context";

const BINDING = { group: "", resource: "pods/binding" };

async function decodeBinding(w: WriteContext, namespace: string): Promise<KubeObject> {
  const decoded = await decodeBody(w.c.req.raw, "Binding");
  const b = checkDecodedTypeMeta({ ...w.def, kind: "Binding" }, decoded.value, "Binding", "v1");
  checkFields(w, b, objectFound(decoded, b, "Binding"));
  requestNamespace(b, namespace);
  return b;
}

/** POST pods/<name>/binding: a Binding without a name is the URL's pod's. */
export async function podBinding(w: WriteContext, namespace: string): Promise<Response> {
  const b = await decodeBinding(w, namespace);
  if (b.metadata.name && b.metadata.name !== w.info.name)
    throw badRequest("name in URL does not match name in Binding object");
  return bind(w, w.store, namespace, w.info.name, b);
}

/** POST namespaces/<ns>/bindings: the Binding names the pod. */
export async function legacyBinding(w: WriteContext, namespace: string): Promise<Response> {
  const b = await decodeBinding(w, namespace);
  const name = b.metadata.name;
  if (!name) throw invalid({ group: "", kind: "Binding" }, "", [field.required("metadata.name")]);
  return bind(w, new Store(w.c.env, pods), namespace, name, b);
}

async function bind(
  w: WriteContext,
  store: Store,
  namespace: string,
  name: string,
  b: KubeObject,
): Promise<Response> {
  const start = Date.now();
  // a CREATE of pods/binding (or of bindings), kind v1 Binding, admitted as upstream's
  // BindingREST does: mutated, validated, then the validating plugins
  await admitMutating(w, "CREATE", b, undefined);
  const causes = validatePodBinding(b);
  if (causes.length) throw invalid({ group: "", kind: "Binding" }, name, causes);
  await admitValidating(w, "CREATE", b, undefined);
  for (let attempt = 0; ; attempt++) {
    const pod = await store.get(namespace, name);
    if (b.metadata.uid && b.metadata.uid !== pod.metadata.uid)
      throw conflict(
        BINDING,
        name,
        `Precondition failed: UID in precondition: ${b.metadata.uid}, UID in object meta: ${pod.metadata.uid}`,
      );
    if (pod.metadata.deletionTimestamp)
      throw conflict(BINDING, name, `pod ${name} is being deleted, cannot be assigned to a host`);
    if (pod.spec?.nodeName)
      throw conflict(BINDING, name, `pod ${name} is already assigned to node "${pod.spec.nodeName}"`);
    pod.spec.nodeName = String(b.target.name);
    if (b.metadata.annotations)
      pod.metadata.annotations = { ...pod.metadata.annotations, ...b.metadata.annotations };
    pod.status ??= {};
    const conditions: any[] = (pod.status.conditions ?? []).filter((c: any) => c.type !== "PodScheduled");
    conditions.push({
      type: "PodScheduled",
      status: "True",
      lastProbeTime: null,
      lastTransitionTime: rfc3339(),
    });
    pod.status.conditions = conditions;
    try {
      // the pod as read is the update's base: encoded here, staged by the shard as sent
      // (prepared.ts), where a whole update is parsed, compared and encoded again there
      await store.update(
        pod,
        { expectRV: pod.metadata.resourceVersion, dryRun: w.dryRun },
        pod,
        bindingTrace(w, pod, start),
      );
      return respondWith(w, SUCCESS_201, 201);
    } catch (e) {
      if (isConflict(e) && attempt < 8) continue;
      throw e;
    }
  }
}
