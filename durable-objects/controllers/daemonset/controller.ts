// The DaemonSet controller (upstream pkg/controller/daemon): one pod of the template on every
// node that should run it (pods.ts: node selector, required node affinity, taints
// the pod does not tolerate), none elsewhere; failed pods are replaced after a growing delay;
// a changed template rolls out node by node (RollingUpdate, within maxUnavailable or maxSurge)
// or waits for pods to be deleted (OnDelete); each template is kept as a ControllerRevision
// (lib/history.ts). Daemon pods are placed by the scheduler through a node affinity that
// names their node.

import { isPodAvailable, isPodReady, isTerminal } from "../../../api/pod-state";
import { lookupGVR } from "../../../api/registry";
import type { KubeObject } from "../../../api/types";
import { isGone, isNotFound } from "../lib/api-errors";
import { claim, controlledPods, indexPodsByController, ownerKeys } from "../lib/claim";
import { cleanupHistory, constructHistory, REVISIONS, revisionHash, templateHash } from "../lib/history";
import { jsonEqual } from "../lib/json-equal";
import { keyOf, splitKey } from "../lib/objects";
import { createPods, deletePods } from "../lib/pod-control";
import type { Controller, ControllerContext } from "../runtime/controller";
import {
  daemonPod,
  daemonSetCounts,
  type NodeFit,
  nodeFits,
  oldestFirst,
  REVISION_HASH,
  rollingUpdatePlan,
  targetNode,
  updateBudget,
} from "./pods";

const DS = lookupGVR("apps", "v1", "daemonsets")!;
const POD = lookupGVR("", "v1", "pods")!;
const DAEMONSETS = "apps/daemonsets";
/** upstream BurstReplicas for DaemonSets: at most this many creations or deletions per sync */
export const DAEMON_BURST = 250;
/** A failed daemon pod is replaced after 1 s, doubling per failure on that node up to 15 min. */
export const FAILED_POD_BACKOFF_MS = 1000;
export const MAX_FAILED_POD_BACKOFF_MS = 15 * 60_000;

/** Failed-pod backoff per DaemonSet key, then per "<uid>/<observedGeneration>/<node>". */
const backoffs = new Map<string, Map<string, { delay: number; last: number }>>();

/** The DaemonSet's pods by the node each is for; finished pods being deleted are left out. */
function podsByNode(pods: KubeObject[]): Map<string, KubeObject[]> {
  const out = new Map<string, KubeObject[]>();
  for (const p of pods) {
    if (isTerminal(p) && p.metadata.deletionTimestamp) continue;
    const node = targetNode(p);
    if (!node) continue;
    const list = out.get(node);
    if (list) list.push(p);
    else out.set(node, [p]);
  }
  return out;
}

/** Whether a failed pod on `node` may be replaced now; if not, the sync comes back when it may. */
function mayReplaceFailed(ctx: ControllerContext, key: string, ds: KubeObject, node: string): boolean {
  let perDs = backoffs.get(key);
  if (!perDs) backoffs.set(key, (perDs = new Map()));
  const id = `${ds.metadata.uid}/${ds.status?.observedGeneration ?? 0}/${node}`;
  const now = ctx.now();
  const b = perDs.get(id);
  if (b && now - b.last < b.delay) {
    ctx.enqueue(key, b.delay - (now - b.last));
    return false;
  }
  const fresh = !b || now - b.last > 2 * MAX_FAILED_POD_BACKOFF_MS;
  perDs.set(id, {
    delay: fresh ? FAILED_POD_BACKOFF_MS : Math.min(b.delay * 2, MAX_FAILED_POD_BACKOFF_MS),
    last: now,
  });
  return true;
}

/** What a node that may keep its daemon pods should lose: finished pods, and extras (podsShouldBeOnNode). */
function prune(
  ctx: ControllerContext,
  key: string,
  ds: KubeObject,
  node: string,
  pods: KubeObject[],
  hash: string,
): { remove: KubeObject[]; running: KubeObject[] } {
  const remove: KubeObject[] = [];
  const running: KubeObject[] = [];
  for (const p of pods) {
    if (p.metadata.deletionTimestamp) continue;
    const where = `${p.metadata.namespace}/${p.metadata.name} on node ${node}`;
    if (p.status?.phase === "Failed") {
      if (!mayReplaceFailed(ctx, key, ds, node)) continue;
      void ctx.recorder.event(
        ds,
        "Warning",
        "FailedDaemonPod",
        `Found failed daemon pod ${where}, will try to kill it`,
      );
      remove.push(p);
    } else if (p.status?.phase === "Succeeded") {
      void ctx.recorder.event(
        ds,
        "Normal",
        "SucceededDaemonPod",
        `Found succeeded daemon pod ${where}, will try to delete it`,
      );
      remove.push(p);
    } else running.push(p);
  }
  if (running.length <= 1) return { remove, running };
  running.sort(oldestFirst);
  if (!surges(ds)) return { remove: [...remove, ...running.slice(1)], running: running.slice(0, 1) };
  // surging: the oldest pod of the current template and the oldest older one may both stay
  let fresh: KubeObject | undefined;
  let old: KubeObject | undefined;
  for (const p of running) {
    const current = p.metadata.labels?.[REVISION_HASH] === hash;
    if (current && !fresh) fresh = p;
    else if (!current && !old) old = p;
    else remove.push(p);
  }
  if (fresh && old) {
    const minReady = ds.spec?.minReadySeconds ?? 0;
    if (!isPodReady(old) || isPodAvailable(fresh, minReady, ctx.now())) remove.push(old);
  }
  return { remove, running };
}

/** Whether a new pod may start beside an old one (upstream AllowsSurge). */
const surges = (ds: KubeObject) => updateBudget(ds, 1).maxSurge > 0;

/** Starts pods on `createOn` and deletes `remove`, each at most DAEMON_BURST per sync. */
async function syncNodes(
  ctx: ControllerContext,
  ds: KubeObject,
  remove: KubeObject[],
  createOn: string[],
  hash: string,
): Promise<void> {
  const nodes = createOn.slice(0, DAEMON_BURST);
  let next = 0;
  let error: unknown;
  try {
    if (nodes.length) await createPods(ctx, ds, nodes.length, () => daemonPod(ds, nodes[next++]!, hash));
  } catch (e) {
    error = e;
  }
  try {
    await deletePods(ctx, ds, remove.slice(0, DAEMON_BURST));
  } catch (e) {
    error ??= e;
  }
  if (error) throw error;
}

/** Pods where they should be, none where they should not (upstream manage). */
async function manage(
  ctx: ControllerContext,
  key: string,
  ds: KubeObject,
  fits: Map<string, NodeFit>,
  hash: string,
) {
  const pods = await claim(
    ctx,
    ds,
    "apps/v1",
    "DaemonSet",
    POD,
    ctx.informers.list("/pods", ds.metadata.namespace),
  );
  const byNode = podsByNode(pods);
  const createOn: string[] = [];
  const remove: KubeObject[] = [];
  for (const [name, { shouldRun, shouldContinueRunning }] of fits) {
    const here = byNode.get(name) ?? [];
    if (shouldRun && here.length === 0) createOn.push(name);
    else if (shouldContinueRunning) {
      const pruned = prune(ctx, key, ds, name, here, hash);
      remove.push(...pruned.remove);
      // surging, a node whose pods all finished gets its new one now
      if (shouldRun && surges(ds) && pruned.running.length === 0) createOn.push(name);
    } else remove.push(...here.filter((p) => !p.metadata.deletionTimestamp));
  }
  // pods not yet bound to a node that is gone can never run
  for (const [name, here] of byNode)
    if (!fits.has(name))
      remove.push(...here.filter((p) => !p.spec?.nodeName && !p.metadata.deletionTimestamp));
  await syncNodes(ctx, ds, remove, createOn, hash);
}

/** One step of a rolling update, with the pods as they are after manage. */
async function rollingUpdate(
  ctx: ControllerContext,
  ds: KubeObject,
  fits: Map<string, NodeFit>,
  hash: string,
) {
  const byNode = podsByNode(controlledPods(ctx, ds));
  const shouldRun = (name: string) => fits.get(name)?.shouldRun === true;
  for (const name of fits.keys()) if (shouldRun(name) && !byNode.has(name)) byNode.set(name, []);
  const plan = rollingUpdatePlan(ds, byNode, shouldRun, hash, ctx.now());
  if (plan.deletePods.length || plan.createOn.length)
    await syncNodes(ctx, ds, plan.deletePods, plan.createOn, hash);
}

/** Writes the counters (updateDaemonSetStatus), and comes back when a ready pod becomes available. */
async function updateStatus(ctx: ControllerContext, key: string, fits: Map<string, NodeFit>, hash: string) {
  const ds = ctx.informers.get(DAEMONSETS, key);
  if (!ds) return;
  const counts = daemonSetCounts(ds, fits, podsByNode(controlledPods(ctx, ds)), hash, ctx.now());
  const next: Record<string, unknown> = {
    ...ds.status,
    ...counts,
    observedGeneration: ds.metadata.generation,
  };
  // omitempty upstream; the first four are always shown
  for (const k of ["numberAvailable", "numberUnavailable", "updatedNumberScheduled", "observedGeneration"])
    if (!next[k]) delete next[k];
  if (!jsonEqual(next, ds.status ?? {})) {
    try {
      await ctx.api.update(DS, { ...ds, status: next }, "status");
    } catch (e) {
      if (!isNotFound(e)) throw e;
      return;
    }
  }
  const minReady = ds.spec?.minReadySeconds ?? 0;
  if (minReady > 0 && counts.numberReady !== counts.numberAvailable) ctx.enqueue(key, minReady * 1000);
}

export async function syncDaemonSet(key: string, ctx: ControllerContext): Promise<void> {
  try {
    await syncOnce(key, ctx);
  } catch (e) {
    if (isNotFound(e) && (!ctx.informers.get(DAEMONSETS, key) || isGone(e, "daemonsets", splitKey(key).name)))
      return;
    throw e;
  }
}

async function syncOnce(key: string, ctx: ControllerContext): Promise<void> {
  const ds = ctx.informers.get(DAEMONSETS, key);
  if (!ds) {
    backoffs.delete(key);
    return;
  }
  if (ds.metadata.deletionTimestamp) return;
  // which nodes should run its pod, once for every phase of the sync (its template does not change meanwhile)
  const fits = nodeFits(ctx.informers.list("/nodes"), ds);
  const { current, old } = await constructHistory(ctx, ds, "DaemonSet");
  const hash = current.metadata.labels?.[REVISION_HASH] ?? templateHash(ds);
  let error: unknown;
  try {
    await manage(ctx, key, ds, fits, hash);
    if (ds.spec?.updateStrategy?.type === "RollingUpdate") await rollingUpdate(ctx, ds, fits, hash);
    // a revision stays while a pod still carries its hash
    const live = new Set(controlledPods(ctx, ds).map((p) => p.metadata.labels?.[REVISION_HASH]));
    await cleanupHistory(ctx, ds, old, (cr) => live.has(revisionHash(cr, "DaemonSet")));
  } catch (e) {
    error = e;
  }
  await updateStatus(ctx, key, fits, hash);
  if (error) throw error;
}

/** A node change concerns the DaemonSets when the node comes or goes, or its labels or taints change. */
function nodeKeys(node: KubeObject, old: KubeObject | undefined, ctx: ControllerContext): string[] {
  const gone = !ctx.informers.get("/nodes", node.metadata.name!);
  if (
    old &&
    !gone &&
    jsonEqual(old.metadata.labels ?? {}, node.metadata.labels ?? {}) &&
    jsonEqual(old.spec?.taints ?? [], node.spec?.taints ?? [])
  )
    return [];
  return ctx.informers.keys(DAEMONSETS);
}

export const daemonSetController: Controller = {
  name: "daemonset-controller",
  watches: {
    [DAEMONSETS]: (ds) => [keyOf(ds)],
    "/pods": ownerKeys("DaemonSet", DAEMONSETS),
    [REVISIONS]: ownerKeys("DaemonSet", DAEMONSETS),
    "/nodes": nodeKeys,
  },
  setup: indexPodsByController,
  resync: (ctx) => ctx.informers.keys(DAEMONSETS),
  sync: syncDaemonSet,
};
