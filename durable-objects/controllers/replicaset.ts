// The ReplicaSet controller (upstream pkg/controller/replicaset): keeps spec.replicas active
// pods matching the selector, owning them through a controller ownerReference.

import { lookupGVR } from "../../api/registry";
import type { KubeObject } from "../../api/types";
import { byController, claim, INDEX_CONTROLLER, ownerKeys } from "./claim";
import { controllerRefOf, isActivePod, isGone, isNotFound, keyOf, splitKey } from "./controller-utils";
import { createPods, deletePods } from "./pod-control";
import { podsToDelete } from "./pod-ranking";
import { calculateReplicaSetStatus, podFromTemplate, statusChanged } from "./replicaset-status";
import type { Controller, ControllerContext } from "./runtime/controller";

const RS = lookupGVR("apps", "v1", "replicasets")!;
const POD = lookupGVR("", "v1", "pods")!;
/** upstream BurstReplicas: at most this many creations or deletions per sync */
export const BURST_REPLICAS = 500;

async function manageReplicas(ctx: ControllerContext, rs: KubeObject, pods: KubeObject[]): Promise<void> {
  const want = rs.spec?.replicas ?? 1;
  const diff = pods.length - want;
  if (diff < 0) {
    const n = Math.min(-diff, BURST_REPLICAS);
    await createPods(ctx, rs, n, () => podFromTemplate(rs, "apps/v1", "ReplicaSet"));
  } else if (diff > 0) {
    const n = Math.min(diff, BURST_REPLICAS);
    await deletePods(ctx, rs, podsToDelete(pods, relatedPods(ctx, rs, pods), n, ctx.now()));
  }
}

/** Active pods of every ReplicaSet that shares this one's controller (a Deployment's sets). */
function relatedPods(ctx: ControllerContext, rs: KubeObject, own: KubeObject[]): KubeObject[] {
  const ref = controllerRefOf(rs);
  if (!ref) return own;
  const out: KubeObject[] = [];
  for (const sib of ctx.informers.byIndex("apps/replicasets", INDEX_CONTROLLER, ref.uid)) {
    out.push(...ctx.informers.byIndex("/pods", INDEX_CONTROLLER, sib.metadata.uid!).filter(isActivePod));
  }
  return out;
}

export async function syncReplicaSet(key: string, ctx: ControllerContext): Promise<void> {
  try {
    await syncReplicaSetOnce(key, ctx);
  } catch (e) {
    // the ReplicaSet (or its namespace) went away under us: nothing left to do
    if (
      isNotFound(e) &&
      (!ctx.informers.get("apps/replicasets", key) || isGone(e, "replicasets", splitKey(key).name))
    )
      return;
    throw e;
  }
}

async function syncReplicaSetOnce(key: string, ctx: ControllerContext): Promise<void> {
  const rs = ctx.informers.get("apps/replicasets", key);
  if (!rs) return;
  const { namespace } = splitKey(key);
  const candidates = ctx.informers.list("/pods", namespace).filter(isActivePod);
  const pods = await claim(ctx, rs, "apps/v1", "ReplicaSet", POD, candidates);
  let manageError: unknown;
  if (!rs.metadata.deletionTimestamp) {
    try {
      await manageReplicas(ctx, rs, pods);
    } catch (e) {
      manageError = e;
    }
  }
  // re-read: the writes above went through to the cache
  const current = ctx.informers.get("apps/replicasets", key) ?? rs;
  const active = ctx.informers
    .list("/pods", namespace)
    .filter((p) => isActivePod(p) && controllerRefOf(p)?.uid === rs.metadata.uid);
  const status = calculateReplicaSetStatus(current, active, manageError, ctx.now());
  if (statusChanged(current.status, status)) {
    try {
      await ctx.api.update(RS, { ...current, status }, "status");
    } catch (e) {
      if (!isNotFound(e)) throw e;
      return;
    }
  }
  const minReady = rs.spec?.minReadySeconds ?? 0;
  if (minReady > 0 && status.readyReplicas !== status.availableReplicas) ctx.enqueue(key, minReady * 1000);
  if (manageError) throw manageError;
}

export const replicaSetController: Controller = {
  name: "replicaset-controller",
  setup(ctx) {
    ctx.informers.addIndex("/pods", INDEX_CONTROLLER, byController);
    ctx.informers.addIndex("apps/replicasets", INDEX_CONTROLLER, byController);
  },
  watches: {
    "apps/replicasets": (rs) => [keyOf(rs)],
    "/pods": ownerKeys("ReplicaSet", "apps/replicasets"),
  },
  resync: (ctx) => ctx.informers.keys("apps/replicasets"),
  sync: syncReplicaSet,
};
