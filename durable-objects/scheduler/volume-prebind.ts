// The scheduler object's side of VolumeBinding: the storage it reads (its informer caches) and
// PreBind, which writes what Reserve decided (a volume's claimRef, a claim's selected node) and
// then tells whether every claim of the pod is bound, so that the Binding may be written.
import { lookupGVR } from "../../api/registry";
import type { ApiClient } from "../controllers/runtime/client";
import type { Informers } from "../controllers/runtime/informers";
import { ANN, CLASSES, claimReference, PVCS, PVS } from "../controllers/volume/persistentvolume-binder";
import type { VolumeDecision, VolumeLister } from "./plugins/volumebinding";

export function volumeLister(informers: Informers): VolumeLister {
  return {
    claim: (ns, name) => informers.get(PVCS, `${ns}/${name}`),
    volume: (name) => informers.get(PVS, name),
    volumes: () => informers.list(PVS),
    storageClass: (name) => informers.get(CLASSES, name),
  };
}

/** Binds the chosen volumes to their claims, then marks the claims to provision with the node. */
export async function writeVolumeDecision(api: ApiClient, d: VolumeDecision): Promise<void> {
  const pv = lookupGVR("", "v1", "persistentvolumes")!;
  const pvc = lookupGVR("", "v1", "persistentvolumeclaims")!;
  for (const { volume, claim } of d.bind) {
    const annotations = { ...(volume.metadata.annotations ?? {}), [ANN.boundByController]: "yes" };
    await api.update(pv, {
      ...volume,
      metadata: { ...volume.metadata, annotations },
      spec: { ...volume.spec, claimRef: claimReference(claim) },
    });
  }
  for (const claim of d.provision)
    await api.patch(
      pvc,
      claim.metadata.namespace,
      claim.metadata.name!,
      { metadata: { annotations: { [ANN.selectedNode]: d.node } } },
      "application/merge-patch+json",
    );
}

/**
 * true once every claim is bound; a reason when binding can no longer succeed (upstream's
 * checkBindings messages); undefined while waiting.
 */
export function claimsBound(informers: Informers, d: VolumeDecision): true | string | undefined {
  for (const { volume } of d.bind) {
    const now = informers.get(PVS, volume.metadata.name!);
    if (!now?.spec?.claimRef?.uid) return `ClaimRef got reset for pv "${volume.metadata.name}"`;
  }
  for (const claim of d.provision) {
    const now = informers.get(PVCS, `${claim.metadata.namespace}/${claim.metadata.name}`);
    const selected = now?.metadata.annotations?.[ANN.selectedNode];
    if (selected === undefined) return `selectedNode annotation reset for PVC "${claim.metadata.name}"`;
    if (selected !== d.node) return `provisioning failed for PVC "${claim.metadata.name}"`;
  }
  for (const { namespace, name } of d.claims) {
    const claim = informers.get(PVCS, `${namespace}/${name}`);
    if (!claim) return `persistentvolumeclaim "${name}" not found`;
    if (!claim.spec?.volumeName || !claim.metadata.annotations?.[ANN.bindCompleted]) return undefined;
  }
  return true;
}
