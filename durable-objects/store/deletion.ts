// How a DELETE lands: removed at once, or marked with a deletionTimestamp and left for
// finalizers (garbage collector, namespace controller) or the node (graceful pod deletion).
import type { ResourceDef } from "../../api/resource";
import { rfc3339 } from "../../api/time";
import type { KubeObject } from "../../api/types";
import type { DeleteOptions } from "./protocol";

export type DeleteDecision =
  | { action: "remove" }
  | { action: "mark"; object: KubeObject }
  | { action: "unchanged" };

/** Grace period for a pod: none when it never reached a node or already finished. */
function podGrace(pod: KubeObject, requested: number | undefined): number {
  const phase = pod.status?.phase;
  if (!pod.spec?.nodeName || phase === "Succeeded" || phase === "Failed") return 0;
  const g = requested ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
  // upstream: a requested 0 on a bound pod means "now" (force), stored as 1s for the kubelet unless forced
  return Math.max(0, g);
}

/** A namespace also waits for its spec.finalizers (the namespace controller's "kubernetes"). */
function specFinalizers(obj: KubeObject): number {
  return obj.kind === "Namespace" && Array.isArray(obj.spec?.finalizers) ? obj.spec.finalizers.length : 0;
}

export function decideDelete(
  def: ResourceDef,
  current: KubeObject,
  opts: DeleteOptions,
  now: Date,
): DeleteDecision {
  const obj: KubeObject = structuredClone(current);
  if (!obj.metadata.deletionTimestamp) def.strategy.markForDeletion?.(obj);
  const meta = obj.metadata;
  const finalizers = new Set(meta.finalizers ?? []);
  if (specFinalizers(obj) > 0) {
    if (meta.deletionTimestamp) return { action: "unchanged" };
    meta.deletionTimestamp = rfc3339(now.getTime());
    meta.deletionGracePeriodSeconds = 0;
    obj.status = { ...obj.status, phase: "Terminating" };
    return { action: "mark", object: obj };
  }
  if (opts.propagationPolicy === "Orphan") {
    finalizers.add("orphan");
    finalizers.delete("foregroundDeletion");
  } else if (opts.propagationPolicy === "Foreground") {
    finalizers.add("foregroundDeletion");
    finalizers.delete("orphan");
  } else if (opts.propagationPolicy === "Background") {
    finalizers.delete("orphan");
    finalizers.delete("foregroundDeletion");
  }
  const grace = def.kind === "Pod" && def.group === "" ? podGrace(obj, opts.gracePeriodSeconds) : 0;

  if (meta.deletionTimestamp) {
    // Already being deleted: only a shorter grace period or the end of finalizers changes anything.
    const currentGrace = meta.deletionGracePeriodSeconds ?? 0;
    if (finalizers.size === 0 && (grace === 0 || opts.gracePeriodSeconds === 0)) return { action: "remove" };
    if (grace < currentGrace) {
      meta.deletionGracePeriodSeconds = grace;
      meta.deletionTimestamp = rfc3339(now.getTime() + grace * 1000);
      return { action: "mark", object: obj };
    }
    return { action: "unchanged" };
  }
  if (finalizers.size === 0 && grace === 0) return { action: "remove" };
  meta.finalizers = finalizers.size ? [...finalizers] : undefined;
  if (!meta.finalizers) delete meta.finalizers;
  meta.deletionGracePeriodSeconds = grace;
  meta.deletionTimestamp = rfc3339(now.getTime() + grace * 1000);
  return { action: "mark", object: obj };
}

/** Whether an update leaves a marked object with nothing left to wait for. */
export function readyToRemove(obj: KubeObject): boolean {
  const m = obj.metadata;
  return (
    !!m.deletionTimestamp &&
    (m.finalizers?.length ?? 0) === 0 &&
    (m.deletionGracePeriodSeconds ?? 0) === 0 &&
    specFinalizers(obj) === 0
  );
}
