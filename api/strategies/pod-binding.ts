// A Binding applied to its pod (upstream's BindingREST assignPod/setPodHostAndAnnotations):
// spec.nodeName set once, the Binding's annotations merged in, PodScheduled=True recorded.
// Pure: the pods shard applies it to the stored pod in the same call that writes it, so a
// bind is one call to the shard and one staged write, with no read of the pod before it.
import { conflict } from "../errors";
import type { KubeObject } from "../types";

const BINDING = { group: "", resource: "pods/binding" };

/** What the apiserver sends the shard of a Binding it admitted. */
export interface PodBinding {
  /** the target Node's name */
  node: string;
  /** the Binding's own annotations, merged into the pod's */
  annotations?: Record<string, string>;
  /** the pod's uid the Binding names as a precondition */
  uid?: string;
  /** PodScheduled's lastTransitionTime (RFC 3339) */
  at: string;
}

/** Binds `pod` in place; throws 409 Conflict as upstream words it when it cannot be bound. */
export function applyPodBinding(pod: KubeObject, b: PodBinding): void {
  const name = pod.metadata.name ?? "";
  if (b.uid && b.uid !== pod.metadata.uid)
    throw conflict(
      BINDING,
      name,
      `Precondition failed: UID in precondition: ${b.uid}, UID in object meta: ${pod.metadata.uid}`,
    );
  if (pod.metadata.deletionTimestamp)
    throw conflict(BINDING, name, `pod ${name} is being deleted, cannot be assigned to a host`);
  const spec = (pod.spec ??= {}) as { nodeName?: string };
  if (spec.nodeName)
    throw conflict(BINDING, name, `pod ${name} is already assigned to node "${spec.nodeName}"`);
  spec.nodeName = b.node;
  if (b.annotations) pod.metadata.annotations = { ...pod.metadata.annotations, ...b.annotations };
  const status = (pod.status ??= {}) as { conditions?: { type?: string }[] };
  const conditions = (status.conditions ?? []).filter((c) => c.type !== "PodScheduled");
  conditions.push({ type: "PodScheduled", status: "True", lastProbeTime: null, lastTransitionTime: b.at } as {
    type: string;
  });
  status.conditions = conditions;
}
