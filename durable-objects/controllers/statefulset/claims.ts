// A StatefulSet's volumeClaimTemplates (upstream stateful_set_utils.go, stateful_pod_control.go):
// each pod <set>-<n> gets, per template, its own claim <template>-<set>-<n>, made before the pod
// and kept when the pod is replaced, so that the pod finds its data again. The claims' owners
// follow spec.persistentVolumeClaimRetentionPolicy: whenDeleted=Delete hands them to the set
// (they go with it), whenScaled=Delete hands a condemned pod's claims to that pod (they go with
// it on scale-down); Retain keeps them.
import { lookupGVR } from "../../../api/registry";
import { withTemplateClaims } from "../../../api/strategies/statefulsets";
import type { KubeObject, OwnerReference } from "../../../api/types";
import { errorMessage, isAlreadyExists } from "../lib/api-errors";
import { jsonEqual } from "../lib/json-equal";
import { newControllerRef } from "../lib/owners";
import type { ControllerContext } from "../runtime/controller";
import { PVCS } from "../volume/persistentvolume-binder";

const PVC = lookupGVR("", "v1", "persistentvolumeclaims")!;

const templatesOf = (set: KubeObject): any[] =>
  Array.isArray(set.spec?.volumeClaimTemplates) ? set.spec.volumeClaimTemplates : [];

export const claimName = (set: KubeObject, template: any, ordinal: number) =>
  `${template?.metadata?.name}-${set.metadata.name}-${ordinal}`;

/** The pod's volumes with one claim volume per template first (a template volume of the same name is dropped). */
export function withClaimVolumes(set: KubeObject, pod: KubeObject, ordinal: number): void {
  const templates = templatesOf(set);
  if (!templates.length) return;
  pod.spec!.volumes = withTemplateClaims(pod.spec!.volumes, templates, (t) => claimName(set, t, ordinal));
}

/** The claim a template makes for an ordinal: its labels with the set's matchLabels over them. */
function newClaim(set: KubeObject, template: any, ordinal: number): KubeObject {
  const meta = template?.metadata ?? {};
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: claimName(set, template, ordinal),
      namespace: set.metadata.namespace,
      labels: { ...(meta.labels ?? {}), ...(set.spec?.selector?.matchLabels ?? {}) },
      ...(meta.annotations ? { annotations: { ...meta.annotations } } : {}),
    },
    spec: structuredClone(template?.spec ?? {}),
  };
}

/**
 * Makes the pod's claims that do not exist yet (events as upstream's); a claim being deleted
 * stops the pod from being made until it is gone.
 */
export async function createMissingClaims(
  ctx: ControllerContext,
  set: KubeObject,
  podName: string,
  ordinal: number,
): Promise<void> {
  const ns = set.metadata.namespace;
  const errors: string[] = [];
  for (const t of templatesOf(set)) {
    const name = claimName(set, t, ordinal);
    const existing = ctx.informers.get(PVCS, `${ns}/${name}`);
    if (existing) {
      if (existing.metadata.deletionTimestamp) errors.push(`pvc ${name} is being deleted`);
      continue;
    }
    const what = `Claim ${name} Pod ${podName} in StatefulSet ${set.metadata.name}`;
    try {
      await ctx.api.create(PVC, newClaim(set, t, ordinal));
      void ctx.recorder.event(set, "Normal", "SuccessfulCreate", `create ${what} success`);
    } catch (e) {
      if (isAlreadyExists(e)) continue;
      errors.push(`failed to create PVC ${name}: ${errorMessage(e)}`);
      void ctx.recorder.event(
        set,
        "Warning",
        "FailedCreate",
        `create Claim ${name} for Pod ${podName} in StatefulSet ${set.metadata.name} failed error: ${errorMessage(e)}`,
      );
    }
  }
  if (errors.length) throw new Error(errors.length === 1 ? errors[0] : `[${errors.join(", ")}]`);
}

/** Who owns a pod's claims under the retention policy: the set, the (condemned) pod, or no one. */
function claimOwner(set: KubeObject, pod: KubeObject, condemned: boolean): OwnerReference | undefined {
  const policy = set.spec?.persistentVolumeClaimRetentionPolicy ?? {};
  if (condemned && policy.whenScaled === "Delete") return newControllerRef(pod, "v1", "Pod");
  if (policy.whenDeleted === "Delete") return newControllerRef(set, "apps/v1", "StatefulSet");
  return undefined;
}

/** Sets the owner the retention policy gives the pod's claims (dropping the set's or the pod's otherwise). */
export async function updateClaimOwners(
  ctx: ControllerContext,
  set: KubeObject,
  pod: KubeObject,
  ordinal: number,
  condemned: boolean,
): Promise<void> {
  const owner = claimOwner(set, pod, condemned);
  const ours = new Set([set.metadata.uid, pod.metadata.uid]);
  for (const t of templatesOf(set)) {
    const claim = ctx.informers.get(PVCS, `${set.metadata.namespace}/${claimName(set, t, ordinal)}`);
    if (!claim || claim.metadata.deletionTimestamp) continue;
    const refs = (claim.metadata.ownerReferences ?? []).filter((r) => !ours.has(r.uid));
    if (refs.some((r) => r.controller)) {
      void ctx.recorder.event(
        set,
        "Warning",
        "ConflictingController",
        `None of the PVCs for StatefulSet ${set.metadata.name} pod ${pod.metadata.name} are owned by it: ${claim.metadata.name} has another controller`,
      );
      continue;
    }
    const next = owner ? [...refs, owner] : refs;
    if (jsonEqual(next, claim.metadata.ownerReferences ?? [])) continue;
    await ctx.api.update(PVC, {
      ...claim,
      metadata: { ...claim.metadata, ownerReferences: next.length ? next : undefined },
    });
  }
}
