// The pure parts of the DaemonSet controller (upstream pkg/controller/daemon and its util):
// which nodes should run a daemon pod, the pod made for a node, which pods are up to date,
// the rolling update's choice of pods to replace, and the status counted from the pods.

import { isPodAvailable, isPodReady } from "../../../api/pod-state";
import { TEMPLATE_GENERATION } from "../../../api/strategies/daemonsets";
import { timeOf } from "../../../api/time";
import type { KubeObject } from "../../../api/types";
import {
  compileMapSelector,
  compileNodeSelector,
  nodeSelectorMatches,
  selectorMatches,
  type Taint,
  type Toleration,
  toleratesTaint,
} from "../../scheduler/labels";
import { scaledValue } from "../lib/int-or-percent";
import { podFromTemplate } from "../replicaset/status";

/** The labels a daemon pod carries: its ControllerRevision's hash and its template generation. */
export const REVISION_HASH = "controller-revision-hash";
export const TEMPLATE_GENERATION_LABEL = "pod-template-generation";

/**
 * What every daemon pod tolerates (upstream AddOrUpdateDaemonPodTolerations): node problems do
 * not evict it, and the conditions a node is tainted with do not keep it off.
 */
export function daemonTolerations(hostNetwork: boolean): Toleration[] {
  const exists = (key: string, effect: string): Toleration => ({ key, operator: "Exists", effect });
  const out = [
    exists("node.kubernetes.io/not-ready", "NoExecute"),
    exists("node.kubernetes.io/unreachable", "NoExecute"),
    exists("node.kubernetes.io/disk-pressure", "NoSchedule"),
    exists("node.kubernetes.io/memory-pressure", "NoSchedule"),
    exists("node.kubernetes.io/pid-pressure", "NoSchedule"),
    exists("node.kubernetes.io/unschedulable", "NoSchedule"),
  ];
  if (hostNetwork) out.push(exists("node.kubernetes.io/network-unavailable", "NoSchedule"));
  return out;
}

const sameToleration = (a: Toleration, b: Toleration) =>
  (a.key ?? "") === (b.key ?? "") &&
  (a.operator || "Equal") === (b.operator || "Equal") &&
  (a.value ?? "") === (b.value ?? "") &&
  (a.effect ?? "") === (b.effect ?? "");

/** The template's tolerations with the daemon ones added (one that is already there is replaced). */
export function withDaemonTolerations(spec: any): Toleration[] {
  const tols: Toleration[] = [...(spec?.tolerations ?? [])];
  for (const t of daemonTolerations(spec?.hostNetwork === true)) {
    const i = tols.findIndex((x) => sameToleration(x, t));
    if (i >= 0) tols[i] = t;
    else tols.push(t);
  }
  return tols;
}

/** The node a daemon pod is for: its nodeName, or before binding the node its affinity names. */
export function targetNode(pod: KubeObject): string | undefined {
  if (pod.spec?.nodeName) return pod.spec.nodeName;
  const terms =
    pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  for (const term of terms ?? [])
    for (const r of term?.matchFields ?? [])
      if (r?.key === "metadata.name" && r.operator === "In")
        return r.values?.length === 1 ? r.values[0] : undefined;
  return undefined;
}

export interface NodeFit {
  shouldRun: boolean;
  shouldContinueRunning: boolean;
}

/**
 * Whether a node should run the DaemonSet's pod, and whether one already there may stay
 * (NodeShouldRunDaemonPod): the template's selector, affinity and tolerations read once, then
 * asked of each node.
 */
export function nodeFit(ds: KubeObject): (node: KubeObject) => NodeFit {
  const spec = ds.spec?.template?.spec ?? {};
  const selector = spec.nodeSelector ? compileMapSelector(spec.nodeSelector) : undefined;
  const required = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  const affinity = required ? compileNodeSelector(required.nodeSelectorTerms) : undefined;
  const tolerations = withDaemonTolerations(spec);
  return (node) => {
    const name = node.metadata.name!;
    const labels = node.metadata.labels;
    const no = { shouldRun: false, shouldContinueRunning: false };
    if (spec.nodeName && spec.nodeName !== name) return no;
    if (selector && !selectorMatches(selector, labels)) return no;
    if (affinity && !nodeSelectorMatches(affinity, labels, name)) return no;
    const taints: Taint[] = node.spec?.taints ?? [];
    const untolerated = (effects: string[]) =>
      taints.some((t) => effects.includes(t.effect) && !toleratesTaint(tolerations, t));
    if (!untolerated(["NoSchedule", "NoExecute"])) return { shouldRun: true, shouldContinueRunning: true };
    // a pod already there stays unless a NoExecute taint it does not tolerate would evict it
    return { shouldRun: false, shouldContinueRunning: !untolerated(["NoExecute"]) };
  };
}

/** nodeFit for one node. */
export const nodeShouldRun = (node: KubeObject, ds: KubeObject): NodeFit => nodeFit(ds)(node);

/** Every node's fit, by name: worked out once per sync and shared by its phases. */
export function nodeFits(nodes: KubeObject[], ds: KubeObject): Map<string, NodeFit> {
  const fit = nodeFit(ds);
  return new Map(nodes.map((n) => [n.metadata.name!, fit(n)]));
}

/**
 * The pod for `node` (upstream CreatePodTemplate + ReplaceDaemonSetPodNodeNameNodeAffinity):
 * the template with the revision and generation labels, the daemon tolerations, and a required
 * node affinity naming only that node, so the scheduler can place it nowhere else.
 */
export function daemonPod(ds: KubeObject, node: string, hash: string): KubeObject {
  const pod = podFromTemplate(ds, "apps/v1", "DaemonSet");
  pod.metadata.labels = {
    ...pod.metadata.labels,
    [TEMPLATE_GENERATION_LABEL]: ds.metadata.annotations?.[TEMPLATE_GENERATION] ?? "1",
    ...(hash ? { [REVISION_HASH]: hash } : {}),
  };
  const spec = pod.spec!;
  spec.tolerations = withDaemonTolerations(spec);
  const term = { matchFields: [{ key: "metadata.name", operator: "In", values: [node] }] };
  spec.affinity = { ...spec.affinity };
  spec.affinity.nodeAffinity = { ...spec.affinity.nodeAffinity };
  spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution = { nodeSelectorTerms: [term] };
  return pod;
}

/** Whether a pod is of the DaemonSet's current template (IsPodUpdated): by hash, or by template generation. */
export function isPodUpdated(pod: KubeObject, ds: KubeObject, hash: string): boolean {
  const labels = pod.metadata.labels ?? {};
  const generation = ds.metadata.annotations?.[TEMPLATE_GENERATION];
  return (
    (!!hash && labels[REVISION_HASH] === hash) ||
    (!!generation && labels[TEMPLATE_GENERATION_LABEL] === generation)
  );
}

/** Scheduled pods first, then oldest first, then by name (podByCreationTimestampAndPhase). */
export function oldestFirst(a: KubeObject, b: KubeObject): number {
  const sa = a.spec?.nodeName ? 0 : 1;
  const sb = b.spec?.nodeName ? 0 : 1;
  if (sa !== sb) return sa - sb;
  const ta = timeOf(a.metadata.creationTimestamp) ?? 0;
  const tb = timeOf(b.metadata.creationTimestamp) ?? 0;
  if (ta !== tb) return ta - tb;
  return (a.metadata.name ?? "") < (b.metadata.name ?? "") ? -1 : 1;
}

/** The one new and one old pod on a node, or undefined when there are more (findUpdatedPodsOnNode). */
function updatedAndOld(
  pods: KubeObject[],
  ds: KubeObject,
  hash: string,
): { fresh?: KubeObject; old?: KubeObject } | undefined {
  let fresh: KubeObject | undefined;
  let old: KubeObject | undefined;
  for (const p of pods) {
    if (p.metadata.deletionTimestamp) continue;
    if (isPodUpdated(p, ds, hash)) {
      if (fresh) return undefined;
      fresh = p;
    } else {
      if (old) return undefined;
      old = p;
    }
  }
  return { fresh, old };
}

/** maxSurge and maxUnavailable resolved against the nodes that should run the pod (rounded up). */
export function updateBudget(ds: KubeObject, desired: number): { maxSurge: number; maxUnavailable: number } {
  const ru =
    ds.spec?.updateStrategy?.type === "RollingUpdate" ? ds.spec.updateStrategy.rollingUpdate : undefined;
  let maxUnavailable = scaledValue(ru?.maxUnavailable, desired, true);
  const maxSurge = scaledValue(ru?.maxSurge, desired, true);
  // an impossible configuration is taken as upstream takes it: one may be unavailable
  if (desired > 0 && maxUnavailable === 0 && maxSurge === 0) maxUnavailable = 1;
  return { maxSurge, maxUnavailable };
}

/**
 * One step of a rolling update (upstream rollingUpdate): the old pods to delete and the nodes to
 * start a new pod on now. `byNode` has every node that should run the pod (with [] when it has
 * none) and every node that has pods; `shouldRun` says which nodes should.
 */
export function rollingUpdatePlan(
  ds: KubeObject,
  byNode: Map<string, KubeObject[]>,
  shouldRun: (node: string) => boolean,
  hash: string,
  now: number,
): { deletePods: KubeObject[]; createOn: string[] } {
  const desired = [...byNode.keys()].filter(shouldRun).length;
  const { maxSurge, maxUnavailable } = updateBudget(ds, desired);
  const minReady = ds.spec?.minReadySeconds ?? 0;
  const available = (p: KubeObject) => isPodAvailable(p, minReady, now);
  if (maxSurge === 0) {
    let unavailable = 0;
    const replace: KubeObject[] = [];
    const candidates: KubeObject[] = [];
    for (const pods of byNode.values()) {
      const found = updatedAndOld(pods, ds, hash);
      if (!found) {
        unavailable++; // more than one of a kind: the manage loop cleans this node up
        continue;
      }
      const { fresh, old } = found;
      if (!old) {
        if (!fresh || !available(fresh)) unavailable++;
      } else if (fresh) unavailable++;
      else if (!available(old)) replace.push(old);
      else if (unavailable < maxUnavailable) candidates.push(old);
    }
    const room = Math.min(Math.max(0, maxUnavailable - unavailable), candidates.length);
    return { deletePods: [...replace, ...candidates.slice(0, room)], createOn: [] };
  }
  // surging: a new pod starts beside the old one, which goes once the new one is available
  let surge = 0;
  const deletePods: KubeObject[] = [];
  const allowed: string[] = [];
  const candidates: string[] = [];
  for (const [node, pods] of byNode) {
    const found = updatedAndOld(pods, ds, hash);
    if (!found) {
      surge++;
      continue;
    }
    const { fresh, old } = found;
    if (!shouldRun(node)) {
      for (const p of [old, fresh]) if (p) deletePods.push(p);
      continue;
    }
    if (!old) continue;
    if (!fresh) {
      if (!available(old)) allowed.push(node);
      else if (surge < maxSurge) candidates.push(node);
    } else if (!available(fresh)) surge++;
    else deletePods.push(old);
  }
  const room = Math.min(Math.max(0, maxSurge - surge), candidates.length);
  return { deletePods, createOn: [...allowed, ...candidates.slice(0, room)] };
}

/** The DaemonSet's status counters from its pods by node (updateDaemonSetStatus). */
export function daemonSetCounts(
  ds: KubeObject,
  fits: Map<string, NodeFit>,
  byNode: Map<string, KubeObject[]>,
  hash: string,
  now: number,
) {
  let desired = 0;
  let current = 0;
  let misscheduled = 0;
  let ready = 0;
  let updated = 0;
  let available = 0;
  const minReady = ds.spec?.minReadySeconds ?? 0;
  for (const [name, fit] of fits) {
    const pods = byNode.get(name) ?? [];
    if (!fit.shouldRun) {
      if (pods.length) misscheduled++;
      continue;
    }
    desired++;
    if (!pods.length) continue;
    current++;
    const pod = [...pods].sort(oldestFirst)[0]!;
    if (isPodReady(pod)) {
      ready++;
      if (isPodAvailable(pod, minReady, now)) available++;
    }
    if (isPodUpdated(pod, ds, hash)) updated++;
  }
  return {
    desiredNumberScheduled: desired,
    currentNumberScheduled: current,
    numberMisscheduled: misscheduled,
    numberReady: ready,
    updatedNumberScheduled: updated,
    numberAvailable: available,
    numberUnavailable: desired - available,
  };
}
