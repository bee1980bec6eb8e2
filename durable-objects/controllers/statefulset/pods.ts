// The pure parts of the StatefulSet controller (upstream pkg/controller/statefulset): pod
// identity (names <set>-<ordinal>, hostname and subdomain, the identity labels), the template
// of a revision, pod health as the controller judges it, and the status counted from the pods.

import { isPodAvailable, isPodReady, isTerminal } from "../../../api/pod-state";
import type { KubeObject } from "../../../api/types";
import { podFromTemplate } from "../replicaset/status";
import { withClaimVolumes } from "./claims";

/** The name of the revision a pod was made from (for a StatefulSet, the revision's name). */
export const POD_REVISION = "controller-revision-hash";
export const POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name";
export const POD_INDEX_LABEL = "apps.kubernetes.io/pod-index";

const NAME_AND_ORDINAL = /^(.*)-(\d+)$/;

/** A pod's ordinal in `set`, or -1 when its name is not <set>-<ordinal>. */
export function ordinalOf(set: KubeObject, pod: KubeObject): number {
  const m = NAME_AND_ORDINAL.exec(pod.metadata.name ?? "");
  if (!m || m[1] !== set.metadata.name) return -1;
  const n = Number(m[2]);
  return Number.isSafeInteger(n) ? n : -1;
}

export const startOrdinal = (set: KubeObject): number => set.spec?.ordinals?.start ?? 0;
export const replicasOf = (set: KubeObject): number => set.spec?.replicas ?? 1;
export const podRevision = (pod: KubeObject): string | undefined => pod.metadata.labels?.[POD_REVISION];

/** The template a revision holds (its data is the patch that puts the template back). */
export function revisionTemplate(revision: KubeObject): any {
  const t = structuredClone(revision.data?.spec?.template ?? {});
  delete t.$patch;
  if (t.metadata?.creationTimestamp === null) delete t.metadata.creationTimestamp;
  return t;
}

/** The pod of `ordinal`, from `revision`'s template, with its stable identity. */
export function statefulPod(set: KubeObject, revision: KubeObject, ordinal: number): KubeObject {
  const name = `${set.metadata.name}-${ordinal}`;
  const pod = podFromTemplate(
    { ...set, spec: { ...set.spec, template: revisionTemplate(revision) } },
    "apps/v1",
    "StatefulSet",
  );
  delete pod.metadata.generateName;
  pod.metadata.name = name;
  pod.metadata.labels = {
    ...pod.metadata.labels,
    [POD_NAME_LABEL]: name,
    [POD_INDEX_LABEL]: String(ordinal),
    [POD_REVISION]: revision.metadata.name!,
  };
  pod.spec!.hostname = name;
  if (set.spec?.serviceName) pod.spec!.subdomain = set.spec.serviceName;
  withClaimVolumes(set, pod, ordinal);
  return pod;
}

const isRunningAndReady = (p: KubeObject) => p.status?.phase === "Running" && isPodReady(p);

/** Running, Ready, and available for minReadySeconds, and not being deleted (upstream isHealthy and isRunningAndAvailable). */
export function isHealthy(p: KubeObject, minReadySeconds: number, now: number): boolean {
  return !p.metadata.deletionTimestamp && isRunningAndReady(p) && isPodAvailable(p, minReadySeconds, now);
}

/** The StatefulSet's counters from its pods (upstream computeReplicaStatus). */
export function statefulSetCounts(
  set: KubeObject,
  pods: KubeObject[],
  current: string,
  update: string,
  now: number,
) {
  let replicas = 0;
  let ready = 0;
  let available = 0;
  let currentReplicas = 0;
  let updated = 0;
  const minReady = set.spec?.minReadySeconds ?? 0;
  for (const p of pods) {
    replicas++;
    if (isRunningAndReady(p)) {
      ready++;
      if (isPodAvailable(p, minReady, now)) available++;
    }
    if (p.metadata.deletionTimestamp || isTerminal(p)) continue;
    if (podRevision(p) === current) currentReplicas++;
    if (podRevision(p) === update) updated++;
  }
  return {
    replicas,
    readyReplicas: ready,
    availableReplicas: available,
    currentReplicas,
    updatedReplicas: updated,
  };
}
