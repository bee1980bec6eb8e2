// The PersistentVolume controller (upstream pkg/controller/volume/persistentvolume): binds
// each claim to a matching volume, both ways (the volume's claimRef, the claim's volumeName),
// keeps both phases (PV Available/Bound/Released/Failed, PVC Pending/Bound/Lost), hands a claim
// with no matching volume to its class's provisioner (or waits for the first consumer), and
// reclaims a released volume as its reclaim policy says. Provisioners are external to it, as
// upstream's CSI and local-path ones are: see volume/local-path-provisioner.ts.

import { parseQuantity } from "../../../api/quantity";
import { lookupGVR } from "../../../api/registry";
import { storageClassOf } from "../../../api/strategies/persistentvolumes";
import type { KubeObject } from "../../../api/types";
import { isNotFound } from "../lib/api-errors";
import { jsonEqual } from "../lib/json-equal";
import { keyOf } from "../lib/objects";
import type { Controller, ControllerContext } from "../runtime/controller";
import { findMatchingVolume, isBoundToClaim, requestedStorage } from "./match";

const PV = lookupGVR("", "v1", "persistentvolumes")!;
const PVC = lookupGVR("", "v1", "persistentvolumeclaims")!;
export const PVS = "/persistentvolumes";
export const PVCS = "/persistentvolumeclaims";
export const CLASSES = "storage.k8s.io/storageclasses";

export const ANN = {
  bindCompleted: "pv.kubernetes.io/bind-completed",
  boundByController: "pv.kubernetes.io/bound-by-controller",
  selectedNode: "volume.kubernetes.io/selected-node",
  provisionedBy: "pv.kubernetes.io/provisioned-by",
  storageProvisioner: "volume.kubernetes.io/storage-provisioner",
  betaStorageProvisioner: "volume.beta.kubernetes.io/storage-provisioner",
};

const CLAIM = "claim:";
const VOLUME = "volume:";
const YES = "yes";

/** Whether a claim's class binds on first consumer (a class that does not exist does not). */
export function isDelayBinding(
  claim: KubeObject,
  classOf: (name: string) => KubeObject | undefined,
): boolean {
  const name = storageClassOf(claim);
  return !!name && classOf(name)?.volumeBindingMode === "WaitForFirstConsumer";
}

const classGetter = (ctx: ControllerContext) => (name: string) => ctx.informers.get(CLASSES, name);

/** The reference a volume's claimRef holds (upstream reference.GetReference). */
export function claimReference(claim: KubeObject) {
  return {
    kind: "PersistentVolumeClaim",
    namespace: claim.metadata.namespace,
    name: claim.metadata.name,
    uid: claim.metadata.uid,
    apiVersion: "v1",
    resourceVersion: claim.metadata.resourceVersion,
  };
}

/** A claim's phase; Pending and Lost clear what binding recorded in its status. Returns whether it changed. */
async function setClaimPhase(ctx: ControllerContext, claim: KubeObject, phase: string): Promise<boolean> {
  const status = { ...(claim.status ?? {}), phase };
  delete status.accessModes;
  delete status.capacity;
  if (jsonEqual(status, claim.status ?? {})) return false;
  await ctx.api.update(PVC, { ...claim, status }, "status");
  return claim.status?.phase !== phase;
}

async function setVolumePhase(ctx: ControllerContext, pv: KubeObject, phase: string, message?: string) {
  if (pv.status?.phase === phase && (message === undefined || pv.status?.message === message)) return pv;
  const status = { ...(pv.status ?? {}), phase };
  if (message !== undefined) status.message = message;
  else delete status.message;
  return ctx.api.update(PV, { ...pv, status }, "status");
}

/** Binds volume and claim, each step written only when it changes something (upstream's bind). */
async function bind(ctx: ControllerContext, pv: KubeObject, claim: KubeObject): Promise<void> {
  const ref = pv.spec?.claimRef;
  if (
    !ref ||
    ref.name !== claim.metadata.name ||
    ref.namespace !== claim.metadata.namespace ||
    ref.uid !== claim.metadata.uid
  ) {
    const annotations = { ...(pv.metadata.annotations ?? {}) };
    if (!isBoundToClaim(pv, claim)) annotations[ANN.boundByController] = YES;
    pv = await ctx.api.update(PV, {
      ...pv,
      metadata: { ...pv.metadata, annotations },
      spec: { ...pv.spec, claimRef: claimReference(claim) },
    });
  }
  pv = await setVolumePhase(ctx, pv, "Bound", "");
  const annotations = { ...(claim.metadata.annotations ?? {}) };
  const spec = { ...claim.spec };
  if (spec.volumeName !== pv.metadata.name) {
    spec.volumeName = pv.metadata.name;
    annotations[ANN.boundByController] ??= YES;
  }
  annotations[ANN.bindCompleted] = YES;
  if (!jsonEqual(spec, claim.spec) || !jsonEqual(annotations, claim.metadata.annotations ?? {}))
    claim = await ctx.api.update(PVC, { ...claim, metadata: { ...claim.metadata, annotations }, spec });
  const status = { ...(claim.status ?? {}), phase: "Bound", accessModes: pv.spec?.accessModes };
  if (claim.status?.phase !== "Bound") status.capacity = pv.spec?.capacity;
  if (!jsonEqual(status, claim.status ?? {})) await ctx.api.update(PVC, { ...claim, status }, "status");
}

/** Why a volume a claim names cannot be its volume, if it cannot (upstream checkVolumeSatisfyClaim). */
function unsatisfied(pv: KubeObject, claim: KubeObject): string | undefined {
  if (pv.metadata.deletionTimestamp) return `the volume is marked for deletion "${pv.metadata.name}"`;
  if ((parseQuantity(pv.spec?.capacity?.storage) ?? 0) < requestedStorage(claim))
    return "requested PV is too small";
  if (storageClassOf(pv) !== storageClassOf(claim)) return "storageClassName does not match";
  if ((pv.spec?.volumeMode ?? "Filesystem") !== (claim.spec?.volumeMode ?? "Filesystem"))
    return "incompatible volumeMode";
  const modes = new Set(pv.spec?.accessModes ?? []);
  if (!(claim.spec?.accessModes ?? []).every((m: string) => modes.has(m))) return "incompatible accessMode";
  return undefined;
}

/** A claim with no matching volume: its class's provisioner is asked, or it waits. */
async function provision(ctx: ControllerContext, claim: KubeObject, className: string): Promise<void> {
  const sc = ctx.informers.get(CLASSES, className);
  if (!sc) {
    void ctx.recorder.event(
      claim,
      "Warning",
      "ProvisioningFailed",
      `storageclass.storage.k8s.io "${className}" not found`,
    );
    return;
  }
  const provisioner = String(sc.provisioner ?? "");
  if (provisioner.startsWith("kubernetes.io/")) {
    void ctx.recorder.event(
      claim,
      "Warning",
      "ProvisioningFailed",
      `no volume plugin matched name: ${provisioner}`,
    );
    return;
  }
  const annotations = claim.metadata.annotations ?? {};
  if (annotations[ANN.storageProvisioner] !== provisioner) {
    const next = {
      ...annotations,
      [ANN.betaStorageProvisioner]: provisioner,
      [ANN.storageProvisioner]: provisioner,
    };
    await ctx.api.update(PVC, { ...claim, metadata: { ...claim.metadata, annotations: next } });
  }
  void ctx.recorder.event(
    claim,
    "Normal",
    "ExternalProvisioning",
    `Waiting for a volume to be created either by the external provisioner '${provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.`,
  );
}

async function syncUnboundClaim(ctx: ControllerContext, claim: KubeObject): Promise<void> {
  const volumeName = claim.spec?.volumeName;
  if (!volumeName) {
    const delay = isDelayBinding(claim, classGetter(ctx));
    const pv = findMatchingVolume(claim, ctx.informers.list(PVS), { delayBinding: delay });
    if (pv) return bind(ctx, pv, claim);
    const className = storageClassOf(claim);
    if (delay && !claim.metadata.annotations?.[ANN.selectedNode]) {
      void ctx.recorder.event(
        claim,
        "Normal",
        "WaitForFirstConsumer",
        "waiting for first consumer to be created before binding",
      );
    } else if (className) {
      return provision(ctx, claim, className);
    } else {
      void ctx.recorder.event(
        claim,
        "Normal",
        "FailedBinding",
        "no persistent volumes available for this claim and no storage class is set",
      );
    }
    await setClaimPhase(ctx, claim, "Pending");
    return;
  }
  // the user named the volume
  const pv = ctx.informers.get(PVS, volumeName);
  if (!pv) {
    await setClaimPhase(ctx, claim, "Pending");
    return;
  }
  if (!pv.spec?.claimRef) {
    const why = unsatisfied(pv, claim);
    if (!why) return bind(ctx, pv, claim);
    void ctx.recorder.event(
      claim,
      "Warning",
      "VolumeMismatch",
      `Cannot bind to requested volume "${volumeName}": ${why}`,
    );
  } else if (isBoundToClaim(pv, claim)) {
    return bind(ctx, pv, claim);
  } else {
    void ctx.recorder.event(
      claim,
      "Warning",
      "FailedBinding",
      `volume "${volumeName}" already bound to a different claim.`,
    );
  }
  await setClaimPhase(ctx, claim, "Pending");
}

async function syncBoundClaim(ctx: ControllerContext, claim: KubeObject): Promise<void> {
  const volumeName = claim.spec?.volumeName;
  const lost = async (reason: string, message: string) => {
    if (await setClaimPhase(ctx, claim, "Lost")) void ctx.recorder.event(claim, "Warning", reason, message);
  };
  if (!volumeName)
    return lost(
      "ClaimLost",
      "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!",
    );
  const pv = ctx.informers.get(PVS, volumeName);
  if (!pv) return lost("ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!");
  const ref = pv.spec?.claimRef;
  if (!ref || ref.uid === claim.metadata.uid) return bind(ctx, pv, claim);
  return lost("ClaimMisbound", "Two claims are bound to the same volume, this one is bound incorrectly");
}

/** A Released volume, as its reclaim policy says; Delete of a provisioned one is its provisioner's. */
async function reclaim(ctx: ControllerContext, pv: KubeObject): Promise<void> {
  const policy = pv.spec?.persistentVolumeReclaimPolicy ?? "Retain";
  if (policy === "Retain") return;
  const fail = async (reason: string, message: string) => {
    await setVolumePhase(ctx, pv, "Failed", message);
    void ctx.recorder.event(pv, "Warning", reason, message);
  };
  if (policy === "Delete") {
    const by = pv.metadata.annotations?.[ANN.provisionedBy];
    if ((by && !by.startsWith("kubernetes.io/")) || pv.spec?.csi) return;
    return fail(
      "VolumeFailedDelete",
      `error getting deleter volume plugin for volume "${pv.metadata.name}": no deletable volume plugin matched`,
    );
  }
  if (policy === "Recycle") return fail("VolumeFailedRecycle", "No recycler plugin found for the volume!");
  return fail("VolumeUnknownReclaimPolicy", "Volume has unrecognized PersistentVolumeReclaimPolicy");
}

async function syncVolume(ctx: ControllerContext, name: string): Promise<void> {
  const pv = ctx.informers.get(PVS, name);
  if (!pv) return;
  const ref = pv.spec?.claimRef;
  if (!ref?.uid) {
    await setVolumePhase(ctx, pv, "Available");
    return;
  }
  const claim = ctx.informers.get(PVCS, `${ref.namespace}/${ref.name}`);
  const released = async () => {
    const phase = pv.status?.phase;
    const now = phase === "Released" || phase === "Failed" ? pv : await setVolumePhase(ctx, pv, "Released");
    await reclaim(ctx, now);
  };
  if (!claim || claim.metadata.uid !== ref.uid) return released();
  const volumeName = claim.spec?.volumeName;
  if (!volumeName) {
    ctx.enqueue(`${CLAIM}${keyOf(claim)}`);
    return;
  }
  if (volumeName === name) {
    await setVolumePhase(ctx, pv, "Bound");
    return;
  }
  // the claim is bound to another volume
  const annotations = { ...(pv.metadata.annotations ?? {}) };
  if (annotations[ANN.provisionedBy] && pv.spec?.persistentVolumeReclaimPolicy === "Delete")
    return released();
  let spec = { ...pv.spec, claimRef: { ...ref, uid: undefined } };
  if (annotations[ANN.boundByController]) {
    delete annotations[ANN.boundByController];
    spec = { ...pv.spec, claimRef: undefined };
  }
  const updated = await ctx.api.update(PV, { ...pv, metadata: { ...pv.metadata, annotations }, spec });
  await setVolumePhase(ctx, updated, "Available");
}

async function syncKey(key: string, ctx: ControllerContext): Promise<void> {
  try {
    if (key.startsWith(VOLUME)) return await syncVolume(ctx, key.slice(VOLUME.length));
    const claim = ctx.informers.get(PVCS, key.slice(CLAIM.length));
    if (!claim) return;
    if (claim.metadata.annotations?.[ANN.bindCompleted]) return await syncBoundClaim(ctx, claim);
    return await syncUnboundClaim(ctx, claim);
  } catch (e) {
    // a volume or claim deleted meanwhile: its own change brings the key back
    if (!isNotFound(e)) throw e;
  }
}

/** Keys of the claims not bound yet: a new volume or class may be theirs. */
const unboundClaims = (ctx: ControllerContext) =>
  ctx.informers
    .list(PVCS)
    .filter((c) => !c.spec?.volumeName && !c.metadata.deletionTimestamp)
    .map((c) => `${CLAIM}${keyOf(c)}`);

export const persistentVolumeController: Controller = {
  name: "persistentvolume-controller",
  watches: {
    [PVCS]: (claim, old) => {
      const keys = [`${CLAIM}${keyOf(claim)}`];
      const volume = claim.spec?.volumeName ?? old?.spec?.volumeName;
      if (volume) keys.push(`${VOLUME}${volume}`);
      return keys;
    },
    [PVS]: (pv, _old, ctx) => {
      const ref = pv.spec?.claimRef;
      const keys = [`${VOLUME}${pv.metadata.name}`];
      if (ref?.namespace && ref?.name) keys.push(`${CLAIM}${ref.namespace}/${ref.name}`);
      else keys.push(...unboundClaims(ctx)); // a new volume may match a waiting claim
      return keys;
    },
    [CLASSES]: (_sc, _old, ctx) => unboundClaims(ctx),
  },
  resync: (ctx) => [
    ...ctx.informers.keys(PVCS).map((k) => `${CLAIM}${k}`),
    ...ctx.informers.keys(PVS).map((k) => `${VOLUME}${k}`),
  ],
  sync: syncKey,
};
