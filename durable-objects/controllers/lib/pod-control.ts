// Creating and deleting a controller's pods with the events upstream's PodControl records:
// SuccessfulCreate / FailedCreate ("Created pod: x" / "Error creating: ..."), SuccessfulDelete /
// FailedDelete. Shared by the ReplicaSet and Job controllers.
import { lookupGVR } from "../../../api/registry";
import { TRACE_CAUSE_HEADER } from "../../../api/trace";
import type { KubeObject } from "../../../api/types";
import { slowStartBatch } from "../replicaset/status";
import type { ControllerContext } from "../runtime/controller";
import { errorMessage, isNamespaceTerminating, isNotFound } from "./api-errors";

const POD = lookupGVR("", "v1", "pods")!;

/**
 * Creates `n` pods made by `make`, in slow-start batches; a namespace being deleted ends it
 * quietly. Returns how many were created; throws the first failure.
 */
export async function createPods(
  ctx: ControllerContext,
  owner: KubeObject,
  n: number,
  make: () => KubeObject,
): Promise<number> {
  // the pods' flow traces name the controller and how long after its sync began each came
  const since = Date.now();
  const controller = /\/([a-z-]+)$/.exec(ctx.api.userAgent)?.[1] ?? "controller";
  const res = await slowStartBatch(n, 1, async () => {
    try {
      const made = make();
      const ref = made.metadata.ownerReferences?.find((r) => r.controller);
      const cause = {
        [TRACE_CAUSE_HEADER]: JSON.stringify({
          controller,
          owner: { kind: ref?.kind ?? owner.kind, name: owner.metadata.name, uid: owner.metadata.uid },
          since,
        }),
      };
      const pod = await ctx.api.create(POD, made, cause);
      void ctx.recorder.event(owner, "Normal", "SuccessfulCreate", `Created pod: ${pod.metadata.name}`);
    } catch (e) {
      if (isNamespaceTerminating(e)) return; // the namespace is going away: nothing to do
      void ctx.recorder.event(owner, "Warning", "FailedCreate", `Error creating: ${errorMessage(e)}`);
      throw e;
    }
  });
  if (res.error) throw res.error;
  return res.ok;
}

/** Deletes pods (each only if it is still the same pod); ones already gone are fine. */
export async function deletePods(
  ctx: ControllerContext,
  owner: KubeObject,
  pods: KubeObject[],
): Promise<void> {
  const results = await Promise.allSettled(
    pods.map(async (p) => {
      try {
        await ctx.api.remove(POD, p.metadata.namespace, p.metadata.name!, {
          preconditions: { uid: p.metadata.uid },
        });
        void ctx.recorder.event(owner, "Normal", "SuccessfulDelete", `Deleted pod: ${p.metadata.name}`);
      } catch (e) {
        if (isNotFound(e)) return;
        void ctx.recorder.event(owner, "Warning", "FailedDelete", `Error deleting: ${errorMessage(e)}`);
        throw e;
      }
    }),
  );
  const failed = results.find((r) => r.status === "rejected") as PromiseRejectedResult | undefined;
  if (failed) throw failed.reason;
}
