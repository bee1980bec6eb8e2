// The disruption controller (upstream pkg/controller/disruption): keeps each
// PodDisruptionBudget's status, which pods/eviction spends. expectedPods is the sum of the
// scales of the controllers of the pods it covers (or the pods themselves, for an integer
// minAvailable), desiredHealthy what the budget asks for, currentHealthy the Ready pods not
// being deleted and not recently evicted (status.disruptedPods, forgotten after 2 minutes),
// and disruptionsAllowed the difference.

import { isPodReady } from "../../../api/pod-state";
import { lookupGVR, lookupKind } from "../../../api/registry";
import { pdbCovers } from "../../../api/strategies/poddisruptionbudgets";
import { rfc3339, timeOf } from "../../../api/time";
import type { KubeObject, OwnerReference } from "../../../api/types";
import { isNotFound } from "../lib/api-errors";
import { type Condition, setCondition } from "../lib/conditions";
import { scaledValue } from "../lib/int-or-percent";
import { jsonEqual } from "../lib/json-equal";
import { keyOf, splitKey } from "../lib/objects";
import { controllerRefOf } from "../lib/owners";
import type { Controller, ControllerContext } from "../runtime/controller";

const PDB = lookupGVR("policy", "v1", "poddisruptionbudgets")!;
const PDBS = "policy/poddisruptionbudgets";
/** An evicted pod that is still not being deleted after this is counted again (upstream DeletionTimeout). */
export const DELETION_TIMEOUT_MS = 2 * 60_000;
/** The caches of the controllers whose scale a budget may count. */
const SCALED: Record<string, string> = {
  ReplicaSet: "apps/replicasets",
  Deployment: "apps/deployments",
  StatefulSet: "apps/statefulsets",
  ReplicationController: "/replicationcontrollers",
};

/** The controller that sets the scale for `pod`'s controller ref, and its replicas (upstream's finders). */
function scaleOf(
  ctx: ControllerContext,
  pod: KubeObject,
  ref: OwnerReference,
): { uid: string; replicas: number } {
  const namespace = pod.metadata.namespace!;
  const res = SCALED[ref.kind];
  const obj = res && ctx.informers.get(res, `${namespace}/${ref.name}`);
  if (obj && obj.metadata.uid === ref.uid) {
    // a Deployment's ReplicaSet: the Deployment's replicas count
    const owner = ref.kind === "ReplicaSet" ? controllerRefOf(obj) : undefined;
    if (owner?.kind === "Deployment") return scaleOf(ctx, pod, owner);
    return { uid: obj.metadata.uid!, replicas: obj.spec?.replicas ?? 1 };
  }
  const def = lookupKind(ref.apiVersion, ref.kind);
  if (def && !def.subresources?.scale)
    throw new Error(
      `${def.resource}${def.group ? `.${def.group}` : ""} does not implement the scale subresource`,
    );
  throw new Error(`found no controllers for pod ${JSON.stringify(pod.metadata.name)}`);
}

/** expectedPods and desiredHealthy for the budget's pods, and the pods no controller owns. */
function budgetOf(ctx: ControllerContext, pdb: KubeObject, pods: KubeObject[]) {
  const spec = pdb.spec ?? {};
  const unmanaged: string[] = [];
  const sumOfScales = () => {
    const seen = new Map<string, number>();
    for (const p of pods) {
      const ref = controllerRefOf(p);
      if (!ref) {
        unmanaged.push(p.metadata.name!);
        continue;
      }
      if (seen.has(ref.uid)) continue;
      const s = scaleOf(ctx, p, ref);
      seen.set(ref.uid, 0);
      seen.set(s.uid, s.replicas);
    }
    let n = 0;
    for (const v of seen.values()) n += v;
    return n;
  };
  if (spec.maxUnavailable != null) {
    const expected = sumOfScales();
    return {
      expected,
      desired: Math.max(0, expected - scaledValue(spec.maxUnavailable, expected, true)),
      unmanaged,
    };
  }
  if (typeof spec.minAvailable === "number")
    return { expected: pods.length, desired: spec.minAvailable, unmanaged };
  if (spec.minAvailable != null) {
    const expected = sumOfScales();
    return { expected, desired: scaledValue(spec.minAvailable, expected, true), unmanaged };
  }
  return { expected: 0, desired: 0, unmanaged };
}

function allowed(status: boolean, at: string): Condition {
  return {
    type: "DisruptionAllowed",
    status: status ? "True" : "False",
    reason: status ? "SufficientPods" : "InsufficientPods",
    message: "",
    lastTransitionTime: at,
  };
}

async function writeStatus(ctx: ControllerContext, pdb: KubeObject, status: any): Promise<void> {
  if (jsonEqual(status, pdb.status ?? {})) return;
  try {
    await ctx.api.update(PDB, { ...pdb, status }, "status");
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}

export async function syncDisruption(key: string, ctx: ControllerContext): Promise<void> {
  const pdb = ctx.informers.get(PDBS, key);
  if (!pdb || pdb.metadata.deletionTimestamp) return;
  const now = ctx.now();
  const at = rfc3339(now);
  const pods = ctx.informers.list("/pods", splitKey(key).namespace).filter((p) => pdbCovers(pdb, p));
  if (!pods.length) void ctx.recorder.event(pdb, "Normal", "NoPods", "No matching pods found");
  let budget: ReturnType<typeof budgetOf>;
  try {
    budget = budgetOf(ctx, pdb, pods);
  } catch (e) {
    // fail safe: nothing may be disrupted while the budget cannot be worked out
    const message = (e as Error).message;
    void ctx.recorder.event(
      pdb,
      "Warning",
      "CalculateExpectedPodCountFailed",
      `Failed to calculate the number of expected pods: ${message}`,
    );
    const c: Condition = { ...allowed(false, at), reason: "SyncFailed", message };
    await writeStatus(ctx, pdb, {
      ...pdb.status,
      disruptionsAllowed: 0,
      conditions: setCondition(pdb.status?.conditions, c),
    });
    return;
  }
  if (budget.unmanaged.length)
    void ctx.recorder.event(
      pdb,
      "Warning",
      "UnmanagedPods",
      `Pods selected by this PodDisruptionBudget (selector: ${formatSelector(pdb)}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set ".spec.minAvailable" field of the PDB to an integer value.`,
    );
  // pods evicted a moment ago are not healthy; entries for pods gone, going, or overdue are dropped
  const disrupted: Record<string, string> = {};
  let recheck: number | undefined;
  for (const [name, when] of Object.entries<string>(pdb.status?.disruptedPods ?? {})) {
    const pod = pods.find((p) => p.metadata.name === name);
    if (!pod || pod.metadata.deletionTimestamp) continue;
    const due = (timeOf(when) ?? 0) + DELETION_TIMEOUT_MS;
    if (due <= now) {
      void ctx.recorder.event(
        pod,
        "Warning",
        "NotDeleted",
        `Pod was expected by PDB ${pdb.metadata.namespace}/${pdb.metadata.namespace} to be deleted but it wasn't`,
      );
      continue;
    }
    disrupted[name] = when;
    recheck = Math.min(recheck ?? due, due);
  }
  const healthy = pods.filter(
    (p) => !p.metadata.deletionTimestamp && !(p.metadata.name! in disrupted) && isPodReady(p),
  ).length;
  const disruptionsAllowed = budget.expected <= 0 ? 0 : Math.max(0, healthy - budget.desired);
  const status: any = {
    ...pdb.status,
    disruptionsAllowed,
    currentHealthy: healthy,
    desiredHealthy: budget.desired,
    expectedPods: budget.expected,
    observedGeneration: pdb.metadata.generation,
    conditions: setCondition(pdb.status?.conditions, allowed(disruptionsAllowed > 0, at)),
  };
  if (Object.keys(disrupted).length) status.disruptedPods = disrupted;
  else delete status.disruptedPods;
  await writeStatus(ctx, pdb, status);
  if (recheck !== undefined) ctx.enqueue(key, recheck - now);
}

function formatSelector(pdb: KubeObject): string {
  return JSON.stringify(pdb.spec?.selector ?? null);
}

/** The budgets of the namespace that cover a pod (as it is, or as it was). */
function budgetsOfPod(pod: KubeObject, old: KubeObject | undefined, ctx: ControllerContext): string[] {
  return ctx.informers
    .list(PDBS, pod.metadata.namespace)
    .filter((b) => pdbCovers(b, pod) || (old && pdbCovers(b, old)))
    .map(keyOf);
}

/** Every budget of the namespace: a controller's scale changed. */
const budgetsOfNamespace = (obj: KubeObject, _old: KubeObject | undefined, ctx: ControllerContext) =>
  ctx.informers.list(PDBS, obj.metadata.namespace).map(keyOf);

export const disruptionController: Controller = {
  name: "disruption-controller",
  watches: {
    [PDBS]: (pdb) => [keyOf(pdb)],
    "/pods": budgetsOfPod,
    ...Object.fromEntries(Object.values(SCALED).map((res) => [res, budgetsOfNamespace])),
  },
  resync: (ctx) => ctx.informers.keys(PDBS),
  sync: syncDisruption,
};
