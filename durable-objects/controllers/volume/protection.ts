// The PVC and PV protection controllers (upstream pvcprotection, pvprotection): a claim being
// deleted keeps kubernetes.io/pvc-protection while a scheduled pod still uses it (finished pods
// included, as upstream), and a volume being deleted keeps kubernetes.io/pv-protection while it
// is Bound. Objects created without the finalizer (before admission added it) get it.
import { lookupGVR } from "../../../api/registry";
import { PV_PROTECTION, PVC_PROTECTION, podClaimNames } from "../../../api/strategies/persistentvolumes";
import type { KubeObject } from "../../../api/types";
import { isNotFound } from "../lib/api-errors";
import { keyOf } from "../lib/objects";
import type { Controller, ControllerContext } from "../runtime/controller";
import { PVCS, PVS } from "./persistentvolume-binder";

const PV = lookupGVR("", "v1", "persistentvolumes")!;
const PVC = lookupGVR("", "v1", "persistentvolumeclaims")!;
const CLAIM = "pvc:";
const VOLUME = "pv:";

function inUse(ctx: ControllerContext, claim: KubeObject): boolean {
  return ctx.informers
    .list("/pods", claim.metadata.namespace)
    .some((p) => !!p.spec?.nodeName && podClaimNames(p).includes(claim.metadata.name!));
}

/** Adds the finalizer, or takes it off. */
async function setFinalizer(
  ctx: ControllerContext,
  claim: boolean,
  obj: KubeObject,
  name: string,
  on: boolean,
) {
  const patch = on
    ? { metadata: { finalizers: [...(obj.metadata.finalizers ?? []), name] } }
    : { metadata: { [`$deleteFromPrimitiveList/finalizers`]: [name] } };
  try {
    const def = claim ? PVC : PV;
    await ctx.api.patch(
      def,
      obj.metadata.namespace,
      obj.metadata.name!,
      patch,
      "application/strategic-merge-patch+json",
    );
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}

async function sync(key: string, ctx: ControllerContext): Promise<void> {
  const claimKey = key.startsWith(CLAIM) ? key.slice(CLAIM.length) : undefined;
  const obj = claimKey ? ctx.informers.get(PVCS, claimKey) : ctx.informers.get(PVS, key.slice(VOLUME.length));
  if (!obj) return;
  const finalizer = claimKey ? PVC_PROTECTION : PV_PROTECTION;
  const has = !!obj.metadata.finalizers?.includes(finalizer);
  if (!obj.metadata.deletionTimestamp) {
    if (!has) await setFinalizer(ctx, !!claimKey, obj, finalizer, true);
    return;
  }
  if (!has) return;
  const used = claimKey ? inUse(ctx, obj) : obj.status?.phase === "Bound";
  if (!used) await setFinalizer(ctx, !!claimKey, obj, finalizer, false);
}

export const volumeProtectionController: Controller = {
  name: "pvc-protection-controller",
  watches: {
    [PVCS]: (claim) => [`${CLAIM}${keyOf(claim)}`],
    [PVS]: (pv) => [`${VOLUME}${pv.metadata.name}`],
    // a pod that goes, finishes or was never scheduled may free a claim being deleted
    "/pods": (pod, old, ctx) => {
      const ns = pod.metadata.namespace;
      return [...new Set([...podClaimNames(pod), ...(old ? podClaimNames(old) : [])])]
        .filter((c) => ctx.informers.get(PVCS, `${ns}/${c}`)?.metadata.deletionTimestamp)
        .map((c) => `${CLAIM}${ns}/${c}`);
    },
  },
  resync: (ctx) => [
    ...ctx.informers.keys(PVCS).map((k) => `${CLAIM}${k}`),
    ...ctx.informers.keys(PVS).map((k) => `${VOLUME}${k}`),
  ],
  sync,
};
