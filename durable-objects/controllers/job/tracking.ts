// The job-tracking finalizer (batch.kubernetes.io/job-tracking): a Job's pods carry it until the
// Job controller has counted them. This module takes it off, and off pods whose Job is gone or
// that were orphaned, so that nothing holds them once no Job will count them.
import { lookupGVR } from "../../../api/registry";
import { JOB_TRACKING_FINALIZER } from "../../../api/strategies/jobs";
import type { KubeObject } from "../../../api/types";
import { isNotFound } from "../lib/api-errors";
import { splitKey } from "../lib/objects";
import { controllerRefOf } from "../lib/owners";
import type { ControllerContext } from "../runtime/controller";

const POD = lookupGVR("", "v1", "pods")!;
const JOBS = "batch/jobs";

export const tracked = (pod: KubeObject) => !!pod.metadata.finalizers?.includes(JOB_TRACKING_FINALIZER);

export async function releasePod(ctx: ControllerContext, pod: KubeObject): Promise<boolean> {
  try {
    await ctx.api.patch(
      POD,
      pod.metadata.namespace,
      pod.metadata.name!,
      { metadata: { [`$deleteFromPrimitiveList/finalizers`]: [JOB_TRACKING_FINALIZER] } },
      "application/strategic-merge-patch+json",
    );
    return true;
  } catch (e) {
    if (isNotFound(e)) return true;
    throw e;
  }
}

/** Keys of this controller that name a pod, not a Job: an orphan holding the finalizer. */
export const ORPHAN_POD = "pod:";

/** A tracked pod whose controlling Job is gone (or that was orphaned) loses the finalizer. */
export function isOrphanTracked(pod: KubeObject, ctx: ControllerContext): boolean {
  if (!tracked(pod)) return false;
  const ref = controllerRefOf(pod);
  if (!ref) return true;
  if (ref.kind !== "Job") return false;
  return ctx.informers.get(JOBS, `${pod.metadata.namespace}/${ref.name}`)?.metadata.uid !== ref.uid;
}

export async function syncOrphanPod(ctx: ControllerContext, key: string): Promise<void> {
  const pod = ctx.informers.get("/pods", key);
  if (pod && isOrphanTracked(pod, ctx)) await releasePod(ctx, pod);
}

/** A deleted Job's pods keep no finalizer of it (the garbage collector then deletes them). */
export async function releaseOrphans(ctx: ControllerContext, key: string): Promise<void> {
  const { namespace, name } = splitKey(key);
  const pods = ctx.informers
    .list("/pods", namespace)
    .filter((p) => controllerRefOf(p)?.name === name && isOrphanTracked(p, ctx));
  for (const p of pods) await releasePod(ctx, p);
}
