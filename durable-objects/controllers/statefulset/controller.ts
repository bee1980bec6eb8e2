// The StatefulSet controller (upstream pkg/controller/statefulset): pods <set>-<ordinal> for
// the ordinals [start, start+replicas), each with a stable hostname; with OrderedReady, created
// one at a time in order, each waiting for the one before to be Running and Ready, and removed
// from the highest ordinal down; with Parallel, all at once. Finished pods are recreated. A new
// template (a new ControllerRevision, lib/history.ts) replaces pods from the highest
// ordinal down to the partition, one at a time, each once the one before is healthy again;
// OnDelete leaves that to whoever deletes the pods.

import { isTerminal } from "../../../api/pod-state";
import { lookupGVR } from "../../../api/registry";
import type { KubeObject } from "../../../api/types";
import { errorMessage, isGone, isNotFound } from "../lib/api-errors";
import { claim, controlledPods, indexPodsByController, ownerKeys } from "../lib/claim";
import { cleanupHistory, constructHistory, REVISIONS } from "../lib/history";
import { jsonEqual } from "../lib/json-equal";
import { keyOf, splitKey } from "../lib/objects";
import type { Controller, ControllerContext } from "../runtime/controller";
import { createMissingClaims, updateClaimOwners } from "./claims";
import {
  isHealthy,
  ordinalOf,
  podRevision,
  replicasOf,
  startOrdinal,
  statefulPod,
  statefulSetCounts,
} from "./pods";

const STS = lookupGVR("apps", "v1", "statefulsets")!;
const POD = lookupGVR("", "v1", "pods")!;
const STATEFULSETS = "apps/statefulsets";

/** The sync ends here for now: OrderedReady waits for the pod it acted on. */
class Wait extends Error {}

async function createPod(ctx: ControllerContext, set: KubeObject, pod: KubeObject): Promise<void> {
  const what = `Pod ${pod.metadata.name} in StatefulSet ${set.metadata.name}`;
  const ordinal = ordinalOf(set, pod);
  try {
    // its claims first: the pod is not made while one cannot be
    await createMissingClaims(ctx, set, pod.metadata.name!, ordinal);
    const made = await ctx.api.create(POD, pod);
    void ctx.recorder.event(set, "Normal", "SuccessfulCreate", `create ${what} successful`);
    await updateClaimOwners(ctx, set, made, ordinal, false);
  } catch (e) {
    void ctx.recorder.event(
      set,
      "Warning",
      "FailedCreate",
      `create ${what} failed error: ${errorMessage(e)}`,
    );
    throw e;
  }
}

async function deletePod(ctx: ControllerContext, set: KubeObject, pod: KubeObject): Promise<void> {
  const what = `Pod ${pod.metadata.name} in StatefulSet ${set.metadata.name}`;
  try {
    await ctx.api.remove(POD, pod.metadata.namespace, pod.metadata.name!, {
      preconditions: { uid: pod.metadata.uid },
    });
    void ctx.recorder.event(set, "Normal", "SuccessfulDelete", `delete ${what} successful`);
  } catch (e) {
    if (isNotFound(e)) return;
    void ctx.recorder.event(
      set,
      "Warning",
      "FailedDelete",
      `delete ${what} failed error: ${errorMessage(e)}`,
    );
    throw e;
  }
}

interface Revisions {
  current: KubeObject;
  update: KubeObject;
}

/** Which revision a new pod of `ordinal` is made from: the current one below the partition. */
function revisionFor(set: KubeObject, ordinal: number, r: Revisions): KubeObject {
  const strategy = set.spec?.updateStrategy;
  if (strategy?.type !== "RollingUpdate") return r.update;
  const partition = strategy.rollingUpdate?.partition;
  const below =
    typeof partition === "number"
      ? ordinal < startOrdinal(set) + partition
      : ordinal < startOrdinal(set) + (set.status?.currentReplicas ?? 0);
  return below ? r.current : r.update;
}

/**
 * Brings the pods to the spec (upstream updateStatefulSet): each ordinal in range, in order,
 * then the condemned beyond it from the highest down, then the rolling update.
 */
async function syncPods(
  ctx: ControllerContext,
  set: KubeObject,
  pods: KubeObject[],
  r: Revisions,
): Promise<void> {
  const monotonic = set.spec?.podManagementPolicy !== "Parallel";
  const minReady = set.spec?.minReadySeconds ?? 0;
  const now = ctx.now();
  const healthy = (p: KubeObject) => isHealthy(p, minReady, now);
  const start = startOrdinal(set);
  const count = replicasOf(set);
  const replicas: (KubeObject | undefined)[] = Array.from({ length: count });
  const condemned: KubeObject[] = [];
  for (const p of pods) {
    const ord = ordinalOf(set, p);
    if (ord >= start && ord < start + count) replicas[ord - start] = p;
    else if (ord >= 0) condemned.push(p);
  }
  condemned.sort((a, b) => ordinalOf(set, a) - ordinalOf(set, b));
  const firstUnhealthy = [...replicas, ...condemned].find((p) => p && !healthy(p));
  const errors: unknown[] = [];
  const step = async (fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (e) {
      if (monotonic) throw e;
      errors.push(e);
    }
  };
  for (let i = 0; i < count; i++) {
    let pod = replicas[i];
    const ordinal = start + i;
    if (pod && isTerminal(pod) && !pod.metadata.deletionTimestamp) {
      // a finished pod goes, and is made again under its name once it is gone
      const gone = pod;
      await step(() => deletePod(ctx, set, gone));
      if (monotonic) throw new Wait();
      continue;
    }
    if (!pod) {
      // it stands in its ordinal's place from now on (the rolling update below reads it)
      pod = replicas[i] = statefulPod(set, revisionFor(set, ordinal, r), ordinal);
      const made = pod;
      await step(() => createPod(ctx, set, made));
      if (monotonic) throw new Wait();
      continue;
    }
    // a pending pod whose claim went is given it again; claim owners follow the retention policy
    const current = pod;
    await step(async () => {
      if (current.status?.phase === "Pending")
        await createMissingClaims(ctx, set, current.metadata.name!, ordinal);
      await updateClaimOwners(ctx, set, current, ordinal, false);
    });
    if (monotonic && !healthy(pod)) throw new Wait();
  }
  for (let i = condemned.length - 1; i >= 0; i--) {
    const pod = condemned[i]!;
    if (pod.metadata.deletionTimestamp) {
      if (monotonic) throw new Wait();
      continue;
    }
    if (monotonic && !healthy(pod) && pod !== firstUnhealthy) throw new Wait();
    await step(async () => {
      await updateClaimOwners(ctx, set, pod, ordinalOf(set, pod), true);
      await deletePod(ctx, set, pod);
    });
    if (monotonic) throw new Wait();
  }
  if (errors.length) throw errors[0];
  if (set.spec?.updateStrategy?.type !== "RollingUpdate") return;
  // the pod with the highest ordinal not yet of the update revision goes, down to the partition
  const updateMin = set.spec.updateStrategy.rollingUpdate?.partition ?? 0;
  for (let i = count - 1; i >= updateMin; i--) {
    const pod = replicas[i]!;
    if (podRevision(pod) !== r.update.metadata.name && !pod.metadata.deletionTimestamp) {
      await deletePod(ctx, set, pod);
      return;
    }
    if (!healthy(pod)) return;
  }
}

/** Writes the counters and revisions; comes back when a ready pod is still short of minReadySeconds. */
async function writeStatus(ctx: ControllerContext, key: string, r: Revisions): Promise<void> {
  const set = ctx.informers.get(STATEFULSETS, key);
  if (!set) return;
  const pods = controlledPods(ctx, set);
  const counts = statefulSetCounts(set, pods, r.current.metadata.name!, r.update.metadata.name!, ctx.now());
  const next: Record<string, any> = {
    ...set.status,
    ...counts,
    observedGeneration: set.metadata.generation,
    currentRevision: r.current.metadata.name,
    updateRevision: r.update.metadata.name,
    collisionCount: set.status?.collisionCount ?? 0,
  };
  // a finished rolling update: the update revision becomes the current one
  const want = replicasOf(set);
  if (
    set.spec?.updateStrategy?.type === "RollingUpdate" &&
    counts.replicas === want &&
    counts.updatedReplicas === want &&
    counts.readyReplicas === want
  ) {
    next.currentRevision = next.updateRevision;
    next.currentReplicas = counts.updatedReplicas;
  }
  const minReady = set.spec?.minReadySeconds ?? 0;
  if (minReady > 0 && counts.readyReplicas !== counts.availableReplicas) ctx.enqueue(key, minReady * 1000);
  // omitempty upstream; replicas and availableReplicas are always shown
  for (const k of ["readyReplicas", "currentReplicas", "updatedReplicas", "observedGeneration"])
    if (!next[k]) delete next[k];
  if (jsonEqual(next, set.status ?? {})) return;
  try {
    await ctx.api.update(STS, { ...set, status: next }, "status");
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}

export async function syncStatefulSet(key: string, ctx: ControllerContext): Promise<void> {
  try {
    await syncOnce(key, ctx);
  } catch (e) {
    if (
      isNotFound(e) &&
      (!ctx.informers.get(STATEFULSETS, key) || isGone(e, "statefulsets", splitKey(key).name))
    )
      return;
    throw e;
  }
}

async function syncOnce(key: string, ctx: ControllerContext): Promise<void> {
  const set = ctx.informers.get(STATEFULSETS, key);
  if (!set || set.metadata.deletionTimestamp) return;
  const { current: update, old } = await constructHistory(ctx, set, "StatefulSet");
  const all = [update, ...old];
  const current = all.find((c) => c.metadata.name === set.status?.currentRevision) ?? update;
  const r = { current, update };
  const pods = await claim(
    ctx,
    set,
    "apps/v1",
    "StatefulSet",
    POD,
    ctx.informers.list("/pods", set.metadata.namespace),
  );
  let error: unknown;
  try {
    await syncPods(ctx, set, pods, r);
  } catch (e) {
    if (!(e instanceof Wait)) error = e;
  }
  await writeStatus(ctx, key, r);
  // revisions that pods or the status still name are kept; the others beyond the limit go
  const fresh = ctx.informers.get(STATEFULSETS, key) ?? set;
  const live = new Set([
    fresh.status?.currentRevision,
    fresh.status?.updateRevision,
    ...controlledPods(ctx, set).map(podRevision),
  ]);
  await cleanupHistory(
    ctx,
    set,
    old.filter((c) => !live.has(c.metadata.name)),
    () => false,
  );
  if (error) throw error;
}

export const statefulSetController: Controller = {
  name: "statefulset-controller",
  watches: {
    [STATEFULSETS]: (set) => [keyOf(set)],
    "/pods": ownerKeys("StatefulSet", STATEFULSETS),
    [REVISIONS]: ownerKeys("StatefulSet", STATEFULSETS),
  },
  setup: indexPodsByController,
  resync: (ctx) => ctx.informers.keys(STATEFULSETS),
  sync: syncStatefulSet,
};
