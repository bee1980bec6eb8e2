// The ReplicaSet controller (upstream pkg/controller/replicaset): keeps spec.replicas active
// pods matching the selector, owning them through a controller ownerReference. The same loop
// runs core/v1 ReplicationControllers (upstream runs it for them too, with their map selector).

import { isActivePod } from "../../../api/pod-state";
import { lookupGVR } from "../../../api/registry";
import type { ResourceDef } from "../../../api/resource";
import type { KubeObject } from "../../../api/types";
import { isGone, isNotFound } from "../lib/api-errors";
import {
  byController,
  claim,
  controlledPods,
  INDEX_CONTROLLER,
  indexPodsByController,
  ownerKeys,
} from "../lib/claim";
import { keyOf, splitKey } from "../lib/objects";
import { controllerRefOf } from "../lib/owners";
import { createPods, deletePods } from "../lib/pod-control";
import type { Controller, ControllerContext } from "../runtime/controller";
import { podsToDelete } from "./pod-ranking";
import { calculateReplicaSetStatus, podFromTemplate, statusChanged } from "./status";

const POD = lookupGVR("", "v1", "pods")!;

/** What the loop runs over: ReplicaSets, or ReplicationControllers. */
interface ReplicaKind {
  def: ResourceDef;
  /** the informer cache of the owners */
  res: string;
  apiVersion: string;
  kind: string;
}

/** upstream BurstReplicas: at most this many creations or deletions per sync */
export const BURST_REPLICAS = 500;

async function manageReplicas(
  ctx: ControllerContext,
  k: ReplicaKind,
  rs: KubeObject,
  pods: KubeObject[],
): Promise<void> {
  const want = rs.spec?.replicas ?? 1;
  const diff = pods.length - want;
  if (diff < 0) {
    const n = Math.min(-diff, BURST_REPLICAS);
    await createPods(ctx, rs, n, () => podFromTemplate(rs, k.apiVersion, k.kind));
  } else if (diff > 0) {
    const n = Math.min(diff, BURST_REPLICAS);
    await deletePods(ctx, rs, podsToDelete(pods, relatedPods(ctx, k, rs, pods), n, ctx.now()));
  }
}

/** Active pods of every owner that shares this one's controller (a Deployment's ReplicaSets). */
function relatedPods(
  ctx: ControllerContext,
  k: ReplicaKind,
  rs: KubeObject,
  own: KubeObject[],
): KubeObject[] {
  const ref = controllerRefOf(rs);
  if (!ref) return own;
  const out: KubeObject[] = [];
  for (const sib of ctx.informers.byIndex(k.res, INDEX_CONTROLLER, ref.uid)) {
    out.push(...ctx.informers.byIndex("/pods", INDEX_CONTROLLER, sib.metadata.uid!).filter(isActivePod));
  }
  return out;
}

/** The sync of one owner of `k`'s kind. */
function syncOf(k: ReplicaKind) {
  const once = async (key: string, ctx: ControllerContext): Promise<void> => {
    const rs = ctx.informers.get(k.res, key);
    if (!rs) return;
    const { namespace } = splitKey(key);
    const candidates = ctx.informers.list("/pods", namespace).filter(isActivePod);
    const pods = await claim(ctx, rs, k.apiVersion, k.kind, POD, candidates);
    let manageError: unknown;
    if (!rs.metadata.deletionTimestamp) {
      try {
        await manageReplicas(ctx, k, rs, pods);
      } catch (e) {
        manageError = e;
      }
    }
    // re-read: the writes above went through to the cache
    const current = ctx.informers.get(k.res, key) ?? rs;
    const active = controlledPods(ctx, rs).filter(isActivePod);
    const status = calculateReplicaSetStatus(current, active, manageError, ctx.now());
    if (statusChanged(current.status, status)) {
      try {
        await ctx.api.update(k.def, { ...current, status }, "status");
      } catch (e) {
        if (!isNotFound(e)) throw e;
        return;
      }
    }
    const minReady = rs.spec?.minReadySeconds ?? 0;
    if (minReady > 0 && status.readyReplicas !== status.availableReplicas) ctx.enqueue(key, minReady * 1000);
    if (manageError) throw manageError;
  };
  return async (key: string, ctx: ControllerContext): Promise<void> => {
    try {
      await once(key, ctx);
    } catch (e) {
      // the owner (or its namespace) went away under us: nothing left to do
      if (isNotFound(e) && (!ctx.informers.get(k.res, key) || isGone(e, k.def.resource, splitKey(key).name)))
        return;
      throw e;
    }
  };
}

function replicaController(name: string, k: ReplicaKind): Controller {
  return {
    name,
    setup(ctx) {
      indexPodsByController(ctx);
      ctx.informers.addIndex(k.res, INDEX_CONTROLLER, byController);
    },
    watches: {
      [k.res]: (rs) => [keyOf(rs)],
      "/pods": ownerKeys(k.kind, k.res),
    },
    resync: (ctx) => ctx.informers.keys(k.res),
    sync: syncOf(k),
  };
}

const REPLICASETS: ReplicaKind = {
  def: lookupGVR("apps", "v1", "replicasets")!,
  res: "apps/replicasets",
  apiVersion: "apps/v1",
  kind: "ReplicaSet",
};

export const syncReplicaSet = syncOf(REPLICASETS);
export const replicaSetController = replicaController("replicaset-controller", REPLICASETS);
export const replicationControllerController = replicaController("replicationcontroller-controller", {
  def: lookupGVR("", "v1", "replicationcontrollers")!,
  res: "/replicationcontrollers",
  apiVersion: "v1",
  kind: "ReplicationController",
});
