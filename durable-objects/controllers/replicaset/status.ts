// The pure parts of the ReplicaSet controller: the pod made from a template, the status
// computed from the pods, and upstream's slow-start batching of creations.

import { isPodAvailable, isPodReady } from "../../../api/pod-state";
import { rfc3339 } from "../../../api/time";
import type { KubeObject } from "../../../api/types";
import { errorMessage } from "../lib/api-errors";
import { type Condition, getCondition, removeCondition } from "../lib/conditions";
import { jsonEqual } from "../lib/json-equal";
import { newControllerRef } from "../lib/owners";

/** A pod as a workload controller creates it from its template (upstream GetPodFromTemplate). */
export function podFromTemplate(owner: KubeObject, apiVersion: string, kind: string): KubeObject {
  const tpl = structuredClone(owner.spec?.template ?? {});
  const meta = tpl.metadata ?? {};
  const pod: KubeObject = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      generateName: `${owner.metadata.name}-`,
      namespace: owner.metadata.namespace,
      ownerReferences: [newControllerRef(owner, apiVersion, kind)],
    },
    spec: tpl.spec ?? {},
  };
  if (meta.labels) pod.metadata.labels = meta.labels;
  if (meta.annotations) pod.metadata.annotations = meta.annotations;
  if (meta.finalizers) pod.metadata.finalizers = meta.finalizers;
  return pod;
}

function fullyLabeled(pod: KubeObject, templateLabels: Record<string, string>): boolean {
  const labels = pod.metadata.labels ?? {};
  return Object.entries(templateLabels).every(([k, v]) => labels[k] === v);
}

/** Status of a ReplicaSet (or any pod-template owner) from its active pods. */
export function calculateReplicaSetStatus(
  rs: KubeObject,
  activePods: KubeObject[],
  manageError: unknown,
  now: number,
): any {
  const tplLabels = rs.spec?.template?.metadata?.labels ?? {};
  const minReady = rs.spec?.minReadySeconds ?? 0;
  let fully = 0;
  let ready = 0;
  let available = 0;
  for (const p of activePods) {
    if (fullyLabeled(p, tplLabels)) fully++;
    if (isPodReady(p)) {
      ready++;
      if (isPodAvailable(p, minReady, now)) available++;
    }
  }
  let conditions: Condition[] = rs.status?.conditions ?? [];
  const failure = getCondition(conditions, "ReplicaFailure");
  if (manageError && !failure) {
    const diff = activePods.length - (rs.spec?.replicas ?? 1);
    conditions = [
      ...conditions,
      {
        type: "ReplicaFailure",
        status: "True",
        reason: diff < 0 ? "FailedCreate" : "FailedDelete",
        message: errorMessage(manageError),
        lastTransitionTime: rfc3339(now),
      },
    ];
  } else if (!manageError && failure) {
    conditions = removeCondition(conditions, "ReplicaFailure");
  }
  const status: any = {
    replicas: activePods.length,
    fullyLabeledReplicas: fully,
    readyReplicas: ready,
    availableReplicas: available,
    observedGeneration: rs.metadata.generation ?? 1,
  };
  // replicas is always written; the other counts are omitempty upstream
  for (const k of ["fullyLabeledReplicas", "readyReplicas", "availableReplicas"])
    if (status[k] === 0) delete status[k];
  if (conditions.length) status.conditions = conditions;
  return status;
}

/** Whether a stored status differs from a computed one (zero counts are omitted on the wire). */
export function statusChanged(old: any, next: any): boolean {
  const o = old ?? {};
  for (const k of [
    "replicas",
    "fullyLabeledReplicas",
    "readyReplicas",
    "availableReplicas",
    "observedGeneration",
  ]) {
    if ((o[k] ?? 0) !== (next[k] ?? 0)) return true;
  }
  return !jsonEqual(o.conditions ?? [], next.conditions ?? []);
}

/**
 * Calls fn `count` times in batches of 1, 2, 4, ... (upstream slowStartBatch); stops after
 * the first batch with a failure. Returns how many calls succeeded and the first error.
 */
export async function slowStartBatch(
  count: number,
  initial: number,
  fn: () => Promise<void>,
): Promise<{ ok: number; error?: unknown }> {
  let remaining = count;
  let ok = 0;
  for (let size = Math.min(remaining, initial); size > 0; size = Math.min(2 * size, remaining)) {
    const results = await Promise.allSettled(Array.from({ length: size }, () => fn()));
    const failed = results.find((r) => r.status === "rejected") as PromiseRejectedResult | undefined;
    ok += results.filter((r) => r.status === "fulfilled").length;
    if (failed) return { ok, error: failed.reason };
    remaining -= size;
  }
  return { ok };
}
