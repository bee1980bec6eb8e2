// The built-in provisioner of the "local-path" class (after Rancher's local-path-provisioner,
// the default class of k3s): a claim handed to it (the PV controller's storage-provisioner
// annotation) on the node the scheduler picked (the selected-node annotation) gets a volume
// pvc-<claim uid>, a hostPath directory under /var/lib/edgeplane/storage on that node, pinned
// to it by node affinity and pre-bound to the claim; the node agent makes the directory when a
// pod first mounts it. A released volume of reclaim policy Delete is deleted. (The directory
// stays on the node: no helper pod runs there to remove it.)
import { lookupGVR } from "../../../api/registry";
import { storageClassOf } from "../../../api/strategies/persistentvolumes";
import { LOCAL_PATH_PROVISIONER } from "../../../api/strategies/storageclasses";
import type { KubeObject } from "../../../api/types";
import { isAlreadyExists } from "../lib/api-errors";
import { keyOf } from "../lib/objects";
import type { Controller, ControllerContext } from "../runtime/controller";
import { ANN, CLASSES, claimReference, PVCS, PVS } from "./persistentvolume-binder";

const PV = lookupGVR("", "v1", "persistentvolumes")!;
export const STORAGE_ROOT = "/var/lib/edgeplane/storage";
const HOSTNAME = "kubernetes.io/hostname";
const DELETE = "delete:";

/** Why this provisioner cannot make a volume for the claim, if it cannot (local-path's checks). */
function refusal(claim: KubeObject, node: string | undefined): string | undefined {
  if (claim.spec?.selector) return "claim.Spec.Selector is not supported";
  const modes: string[] = claim.spec?.accessModes ?? [];
  if (modes.some((m) => m !== "ReadWriteOnce" && m !== "ReadWriteOncePod"))
    return "NodePath only supports ReadWriteOnce and ReadWriteOncePod (1.22+) access modes";
  if (!node) return "configuration error, no node was specified";
  return undefined;
}

/** The volume made for a claim on a node. */
export function localVolume(claim: KubeObject, sc: KubeObject, node: KubeObject): KubeObject {
  const name = `pvc-${claim.metadata.uid}`;
  const host = node.metadata.labels?.[HOSTNAME] ?? node.metadata.name;
  return {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name, annotations: { [ANN.provisionedBy]: LOCAL_PATH_PROVISIONER } },
    spec: {
      persistentVolumeReclaimPolicy: (sc as any).reclaimPolicy ?? "Delete",
      accessModes: claim.spec?.accessModes,
      volumeMode: "Filesystem",
      capacity: { storage: claim.spec?.resources?.requests?.storage },
      storageClassName: storageClassOf(claim),
      claimRef: claimReference(claim),
      hostPath: {
        path: `${STORAGE_ROOT}/${name}_${claim.metadata.namespace}_${claim.metadata.name}`,
        type: "DirectoryOrCreate",
      },
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: HOSTNAME, operator: "In", values: [host] }] }],
        },
      },
    },
  };
}

async function provision(ctx: ControllerContext, claim: KubeObject): Promise<void> {
  const annotations = claim.metadata.annotations ?? {};
  if (claim.spec?.volumeName || claim.metadata.deletionTimestamp) return;
  if (annotations[ANN.storageProvisioner] !== LOCAL_PATH_PROVISIONER) return;
  const sc = ctx.informers.get(CLASSES, storageClassOf(claim));
  if (!sc || (sc as any).provisioner !== LOCAL_PATH_PROVISIONER) return;
  const nodeName = annotations[ANN.selectedNode];
  if ((sc as any).volumeBindingMode === "WaitForFirstConsumer" && !nodeName) return;
  if (ctx.informers.get(PVS, `pvc-${claim.metadata.uid}`)) return;
  const node = nodeName ? ctx.informers.get("/nodes", nodeName) : undefined;
  const why = refusal(claim, node && nodeName);
  if (why) {
    void ctx.recorder.event(
      claim,
      "Warning",
      "ProvisioningFailed",
      `failed to provision volume with StorageClass "${sc.metadata.name}": ${why}`,
    );
    return;
  }
  void ctx.recorder.event(
    claim,
    "Normal",
    "Provisioning",
    `External provisioner is provisioning volume for claim "${keyOf(claim)}"`,
  );
  const pv = localVolume(claim, sc, node!);
  try {
    await ctx.api.create(PV, pv);
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
    return;
  }
  void ctx.recorder.event(
    claim,
    "Normal",
    "ProvisioningSucceeded",
    `Successfully provisioned volume ${pv.metadata.name}`,
  );
}

/** A released volume this provisioner made, of reclaim policy Delete, goes. */
async function reclaim(ctx: ControllerContext, name: string): Promise<void> {
  const pv = ctx.informers.get(PVS, name);
  if (!pv || pv.metadata.deletionTimestamp || pv.status?.phase !== "Released") return;
  if (pv.metadata.annotations?.[ANN.provisionedBy] !== LOCAL_PATH_PROVISIONER) return;
  if (pv.spec?.persistentVolumeReclaimPolicy !== "Delete") return;
  await ctx.api.remove(PV, undefined, name, { preconditions: { uid: pv.metadata.uid } });
}

export const localPathProvisioner: Controller = {
  name: LOCAL_PATH_PROVISIONER,
  watches: {
    [PVCS]: (claim) => [keyOf(claim)],
    [PVS]: (pv) => [`${DELETE}${pv.metadata.name}`],
  },
  resync: (ctx) => [...ctx.informers.keys(PVCS), ...ctx.informers.keys(PVS).map((k) => `${DELETE}${k}`)],
  sync: async (key, ctx) => {
    if (key.startsWith(DELETE)) return reclaim(ctx, key.slice(DELETE.length));
    const claim = ctx.informers.get(PVCS, key);
    if (claim) await provision(ctx, claim);
  },
};
