// The ephemeral volume controller (upstream pkg/controller/volume/ephemeral): a pod's generic
// ephemeral volume (`ephemeral.volumeClaimTemplate`) gets its claim <pod>-<volume>, made from
// the template and owned by the pod, so that it is bound and provisioned like any claim and
// goes with the pod (the garbage collector deletes it).

import { isTerminal } from "../../../api/pod-state";
import { lookupGVR } from "../../../api/registry";
import type { KubeObject } from "../../../api/types";
import { errorMessage, isAlreadyExists } from "../lib/api-errors";
import { keyOf } from "../lib/objects";
import { newControllerRef } from "../lib/owners";
import type { Controller, ControllerContext } from "../runtime/controller";
import { PVCS } from "./persistentvolume-binder";

const PVC = lookupGVR("", "v1", "persistentvolumeclaims")!;

const ephemeralVolumes = (pod: KubeObject): any[] =>
  ((pod.spec?.volumes ?? []) as any[]).filter((v) => v?.ephemeral && v.name);

async function sync(key: string, ctx: ControllerContext): Promise<void> {
  const pod = ctx.informers.get("/pods", key);
  if (!pod || pod.metadata.deletionTimestamp || isTerminal(pod)) return;
  for (const v of ephemeralVolumes(pod)) {
    const name = `${pod.metadata.name}-${v.name}`;
    const existing = ctx.informers.get(PVCS, `${pod.metadata.namespace}/${name}`);
    if (existing) {
      // one the pod does not own is not its volume (the scheduler and the node refuse it)
      if (!existing.metadata.ownerReferences?.some((r) => r.controller && r.uid === pod.metadata.uid))
        void ctx.recorder.event(
          pod,
          "Warning",
          "FailedBinding",
          `PVC ${pod.metadata.namespace}/${name} was not created for pod ${keyOf(pod)} (pod is not owner)`,
        );
      continue;
    }
    const template = v.ephemeral.volumeClaimTemplate ?? {};
    try {
      await ctx.api.create(PVC, {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: {
          name,
          namespace: pod.metadata.namespace,
          ...(template.metadata?.labels ? { labels: { ...template.metadata.labels } } : {}),
          ...(template.metadata?.annotations ? { annotations: { ...template.metadata.annotations } } : {}),
          ownerReferences: [newControllerRef(pod, "v1", "Pod")],
        },
        spec: structuredClone(template.spec ?? {}),
      });
    } catch (e) {
      if (isAlreadyExists(e)) continue;
      void ctx.recorder.event(pod, "Warning", "FailedCreate", `create PVC ${name}: ${errorMessage(e)}`);
      throw e;
    }
  }
}

export const ephemeralVolumeController: Controller = {
  name: "ephemeral-volume-controller",
  watches: {
    "/pods": (pod) => (ephemeralVolumes(pod).length ? [keyOf(pod)] : []),
    [PVCS]: (claim) => {
      // a pod's claim that went is made again while the pod lives
      const owner = claim.metadata.ownerReferences?.find((r) => r.controller && r.kind === "Pod");
      return owner ? [`${claim.metadata.namespace}/${owner.name}`] : [];
    },
  },
  resync: (ctx) =>
    ctx.informers
      .list("/pods")
      .filter((p) => ephemeralVolumes(p).length)
      .map(keyOf),
  sync,
};
