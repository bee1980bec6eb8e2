// Binding a pod to a node (upstream's BindingREST): a Binding posted to pods/<name>/binding,
// or, the older way upstream still serves, to the namespace's bindings with the pod's name as
// its own. Either sets spec.nodeName once and records PodScheduled=True.

import { badRequest, field, invalid } from "../../api/errors";
import { pods, validatePodBinding } from "../../api/strategies/pods";
import { rfc3339 } from "../../api/time";
import type { KubeObject } from "../../api/types";
import { Store } from "../../durable-objects/store/client";
import { admitMutating, admitValidating } from "../admission";
import { decodeBody } from "../encoding/request-body";
import { bindingTrace } from "../trace/status";
import { SUCCESS_201 } from "./eviction";
import { checkFields, objectFound } from "./field-validation";
import { checkDecodedTypeMeta, requestNamespace } from "./prepare";
import { respondWith, type WriteContext } from "./write-context";

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
  // applied to the stored pod by its shard, in the call that stages the write (pod-binding.ts)
  const node = String(b.target.name);
  const target = { metadata: { namespace, name, uid: "" }, spec: { nodeName: node } } as KubeObject;
  await store.bind(
    namespace,
    name,
    { node, annotations: b.metadata.annotations, uid: b.metadata.uid, at: rfc3339() },
    { dryRun: w.dryRun },
    bindingTrace(w, target, start),
  );
  return respondWith(w, SUCCESS_201, 201);
}
