// The Deployment controller (upstream pkg/controller/deployment): owns ReplicaSets through
// pod-template-hash, rolls templates out with RollingUpdate or Recreate, scales mid-rollout
// proportionally, keeps revision history and reports progress in status conditions.

import { isTerminal } from "../../../api/pod-state";
import type { KubeObject } from "../../../api/types";
import { isGone, isNotFound } from "../lib/api-errors";
import { byController, claim, INDEX_CONTROLLER } from "../lib/claim";
import { keyOf, splitKey } from "../lib/objects";
import { controllerRefOf, selectorOf, selects } from "../lib/owners";
import type { Controller, ControllerContext } from "../runtime/controller";
import { DESIRED_REPLICAS } from "./revisions";
import { DeploymentState, RS } from "./rollout";
import {
  activeReplicaSets,
  newRSNewReplicas,
  reconcileOldReplicaSets,
  replicasOf,
  scalePlan,
} from "./scaling";
import { deploymentComplete, hasProgressDeadline, newCondition, setDeploymentCondition } from "./status";

/** Upstream checkPausedConditions: Progressing Unknown with DeploymentPaused/DeploymentResumed. */
async function checkPausedConditions(s: DeploymentState): Promise<void> {
  const d = s.d;
  if (!hasProgressDeadline(d)) return;
  const cond = d.status?.conditions?.find((c: any) => c.type === "Progressing");
  if (cond?.reason === "ProgressDeadlineExceeded") return;
  const pausedCond = cond?.reason === "DeploymentPaused";
  const status = structuredClone(d.status ?? {});
  if (d.spec?.paused && !pausedCond) {
    setDeploymentCondition(
      status,
      newCondition("Progressing", "Unknown", "DeploymentPaused", "Deployment is paused", s.nowIso()),
    );
  } else if (!d.spec?.paused && pausedCond) {
    setDeploymentCondition(
      status,
      newCondition("Progressing", "Unknown", "DeploymentResumed", "Deployment is resumed", s.nowIso()),
    );
  } else return;
  await s.updateStatus(status);
}

/** A scaling event: an active set was sized for another replica count than the spec's. */
function isScalingEvent(s: DeploymentState, newRS: KubeObject | undefined, oldRSs: KubeObject[]): boolean {
  const all = newRS ? [...oldRSs, newRS] : oldRSs;
  for (const rs of activeReplicaSets(all)) {
    const desired = rs.metadata.annotations?.[DESIRED_REPLICAS];
    if (desired !== undefined && Number(desired) !== replicasOf(s.d)) return true;
  }
  return false;
}

/** Scale only, no rollout (paused deployments and scaling events; upstream sync()). */
async function scaleOnly(s: DeploymentState): Promise<void> {
  const newRS = await s.newReplicaSet(false);
  for (const op of scalePlan(s.d, newRS, s.oldOf(newRS))) await s.scale(op.rs, op.to);
  const fresh = s.findNew();
  if (s.d.spec?.paused) await s.cleanup(s.oldOf(fresh));
  await s.syncStatus(fresh);
}

async function rolloutRolling(s: DeploymentState): Promise<void> {
  const newRS = (await s.newReplicaSet(true))!;
  // scale the new set up as far as surge allows
  const target = newRSTarget(s, newRS);
  if (target !== undefined && (await s.scale(newRS, target))) return s.syncRolloutStatus(s.findNew());
  const cur = s.findNew()!;
  const oldRSs = s.oldOf(cur);
  let scaledDown = false;
  for (const op of reconcileOldReplicaSets(s.d, s.rsList, oldRSs, cur))
    if (await s.scale(op.rs, op.to)) scaledDown = true;
  if (scaledDown) return s.syncRolloutStatus(s.findNew());
  if (deploymentComplete(s.d, s.d.status ?? {})) await s.cleanup(s.oldOf(cur));
  await s.syncRolloutStatus(s.findNew());
}

function newRSTarget(s: DeploymentState, newRS: KubeObject): number | undefined {
  const want = replicasOf(s.d);
  const have = replicasOf(newRS);
  if (have === want) return undefined;
  if (have > want) return want;
  const rolling = (s.d.spec?.strategy?.type ?? "RollingUpdate") === "RollingUpdate";
  if (!rolling) return want;
  return newRSNewReplicas(s.d, s.rsList, newRS);
}

async function rolloutRecreate(s: DeploymentState, pods: KubeObject[]): Promise<void> {
  let newRS = await s.newReplicaSet(false);
  let scaled = false;
  for (const rs of activeReplicaSets(s.oldOf(newRS))) if (await s.scale(rs, 0)) scaled = true;
  if (scaled) return s.syncRolloutStatus(newRS && s.findNew());
  const oldUids = new Set(s.oldOf(newRS).map((rs) => rs.metadata.uid));
  const oldRunning =
    s.oldOf(newRS).some((rs) => (rs.status?.replicas ?? 0) > 0) ||
    pods.some((p) => oldUids.has(controllerRefOf(p)?.uid) && !isTerminal(p));
  if (oldRunning) return s.syncRolloutStatus(newRS && s.findNew());
  if (!newRS) newRS = await s.newReplicaSet(true);
  await s.scale(s.findNew()!, replicasOf(s.d));
  if (deploymentComplete(s.d, s.d.status ?? {})) await s.cleanup(s.oldOf(s.findNew()));
  await s.syncRolloutStatus(s.findNew());
}

export async function syncDeployment(key: string, ctx: ControllerContext): Promise<void> {
  try {
    await syncDeploymentOnce(key, ctx);
  } catch (e) {
    // the Deployment went away under us: nothing left to do
    if (
      isNotFound(e) &&
      (!ctx.informers.get("apps/deployments", key) || isGone(e, "deployments", splitKey(key).name))
    )
      return;
    throw e;
  }
}

async function syncDeploymentOnce(key: string, ctx: ControllerContext): Promise<void> {
  const d = ctx.informers.get("apps/deployments", key);
  if (!d) return;
  const { namespace } = splitKey(key);
  const sel = selectorOf(d);
  if (!sel || sel.length === 0) {
    if (d.metadata.generation !== d.status?.observedGeneration) {
      void ctx.recorder.event(
        d,
        "Warning",
        "SelectingAll",
        "This deployment is selecting all pods. A non-empty selector is required.",
      );
    }
    return;
  }
  const rsList = await claim(
    ctx,
    d,
    "apps/v1",
    "Deployment",
    RS,
    ctx.informers.list("apps/replicasets", namespace),
  );
  const s = new DeploymentState(ctx, d, rsList);
  if (d.metadata.deletionTimestamp) return s.syncStatus(s.findNew());
  await checkPausedConditions(s);
  if (s.d.spec?.paused) return scaleOnly(s);
  const existingNew = s.findNew();
  if (isScalingEvent(s, existingNew, s.oldOf(existingNew))) return scaleOnly(s);
  if (s.d.spec?.strategy?.type === "Recreate") {
    const uids = new Set(rsList.map((rs) => rs.metadata.uid));
    const pods = ctx.informers.list("/pods", namespace).filter((p) => uids.has(controllerRefOf(p)?.uid));
    return rolloutRecreate(s, pods);
  }
  return rolloutRolling(s);
}

function deploymentsForReplicaSet(rs: KubeObject, ctx: ControllerContext): string[] {
  const ref = controllerRefOf(rs);
  if (ref) return ref.kind === "Deployment" ? [`${rs.metadata.namespace}/${ref.name}`] : [];
  return ctx.informers
    .list("apps/deployments", rs.metadata.namespace)
    .filter((d) => selects(d, rs))
    .map(keyOf);
}

export const deploymentController: Controller = {
  name: "deployment-controller",
  setup(ctx) {
    ctx.informers.addIndex("apps/replicasets", INDEX_CONTROLLER, byController);
  },
  watches: {
    "apps/deployments": (d) => [keyOf(d)],
    "apps/replicasets": (rs, old, ctx) => {
      const keys = new Set(deploymentsForReplicaSet(rs, ctx));
      if (old && old !== rs) for (const k of deploymentsForReplicaSet(old, ctx)) keys.add(k);
      return [...keys];
    },
    // Recreate waits for old pods to go away: a pod's end or removal concerns its Deployment
    "/pods": (pod, old, ctx) => {
      const gone = !ctx.informers.get("/pods", keyOf(pod));
      if (!gone && !(isTerminal(pod) && !(old && isTerminal(old)))) return [];
      const ref = controllerRefOf(pod);
      if (ref?.kind !== "ReplicaSet") return [];
      const rs = ctx.informers.get("apps/replicasets", `${pod.metadata.namespace}/${ref.name}`);
      return rs ? deploymentsForReplicaSet(rs, ctx) : [];
    },
  },
  resync: (ctx) => ctx.informers.keys("apps/deployments"),
  sync: syncDeployment,
};
