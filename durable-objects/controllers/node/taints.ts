// Node health and taint arithmetic (upstream nodelifecycle + tainteviction): the
// conditions a silent node gets, the taints a node's conditions imply, and when a pod on a
// NoExecute-tainted node must go given its tolerations.

import { timeOf } from "../../../api/time";
import type { KubeObject } from "../../../api/types";
import type { Condition } from "../lib/conditions";

export const TAINT_NOT_READY = "node.kubernetes.io/not-ready";
export const TAINT_UNREACHABLE = "node.kubernetes.io/unreachable";
export const TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable";
const MANAGED = new Set([TAINT_NOT_READY, TAINT_UNREACHABLE, TAINT_UNSCHEDULABLE]);
const PRESSURE = ["MemoryPressure", "DiskPressure", "PIDPressure"];

export interface Taint {
  key: string;
  value?: string;
  effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute" | string;
  timeAdded?: string;
}

export interface Toleration {
  key?: string;
  operator?: "Exists" | "Equal" | string;
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

export const STOPPED_MESSAGE = "Kubelet stopped posting node status.";
export const NEVER_POSTED_MESSAGE = "Kubelet never posted node status.";
/** the conditions a silent node's are set Unknown, in upstream's order (not NetworkUnavailable) */
const HEALTH_CONDITIONS = ["Ready", ...PRESSURE];

/**
 * Conditions of a node whose kubelet went silent, as upstream's node lifecycle controller
 * writes them: Ready and the pressure conditions become Unknown with NodeStatusUnknown; one
 * the kubelet never posted is added as Unknown with NodeStatusNeverUpdated, its heartbeat
 * the node's creation (the last time anything was heard of it). Undefined when nothing changes.
 */
export function silentNodeConditions(
  conditions: Condition[] | undefined,
  nowIso: string,
  createdIso: string,
): Condition[] | undefined {
  const list = structuredClone(conditions ?? []);
  let changed = false;
  for (const type of HEALTH_CONDITIONS) {
    const c = list.find((x) => x.type === type);
    if (!c) {
      list.push({
        type,
        status: "Unknown",
        reason: "NodeStatusNeverUpdated",
        message: NEVER_POSTED_MESSAGE,
        lastHeartbeatTime: createdIso,
        lastTransitionTime: nowIso,
      });
      changed = true;
    } else if (c.status !== "Unknown") {
      c.status = "Unknown";
      c.reason = "NodeStatusUnknown";
      c.message = STOPPED_MESSAGE;
      c.lastTransitionTime = nowIso;
      changed = true;
    }
  }
  return changed ? list : undefined;
}

/**
 * The node's taints with the ones this controller manages recomputed from its Ready
 * condition and spec.unschedulable; kept taints keep their timeAdded. Undefined = no change.
 */
export function desiredTaints(node: KubeObject, nowIso: string): Taint[] | undefined {
  const current: Taint[] = node.spec?.taints ?? [];
  const ready = (node.status?.conditions as Condition[] | undefined)?.find((c) => c.type === "Ready");
  const want: Taint[] = [];
  if (ready?.status === "False")
    want.push({ key: TAINT_NOT_READY, effect: "NoSchedule" }, { key: TAINT_NOT_READY, effect: "NoExecute" });
  if (ready?.status === "Unknown")
    want.push(
      { key: TAINT_UNREACHABLE, effect: "NoSchedule" },
      { key: TAINT_UNREACHABLE, effect: "NoExecute" },
    );
  if (node.spec?.unschedulable) want.push({ key: TAINT_UNSCHEDULABLE, effect: "NoSchedule" });
  const same = (a: Taint, b: Taint) => a.key === b.key && a.effect === b.effect;
  const out = current.filter((t) => !MANAGED.has(t.key) || want.some((w) => same(w, t)));
  for (const w of want) {
    if (out.some((t) => same(t, w))) continue;
    out.push(w.effect === "NoExecute" ? { ...w, timeAdded: nowIso } : w);
  }
  const key = (ts: Taint[]) => JSON.stringify(ts.map((t) => `${t.key}=${t.value ?? ""}:${t.effect}`).sort());
  return key(out) === key(current) ? undefined : out;
}

export function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key ? t.key !== taint.key : t.operator !== "Exists") return false;
  if (t.operator === "Exists") return true;
  return (t.value ?? "") === (taint.value ?? "");
}

/** The tolerations DefaultTolerationSeconds admission would add (not-ready/unreachable, 300 s). */
export function withDefaultTolerations(tolerations: Toleration[], seconds: number): Toleration[] {
  const out = [...tolerations];
  for (const key of [TAINT_NOT_READY, TAINT_UNREACHABLE]) {
    if (!tolerations.some((t) => t.key === key && (!t.effect || t.effect === "NoExecute"))) {
      out.push({ key, operator: "Exists", effect: "NoExecute", tolerationSeconds: seconds });
    }
  }
  return out;
}

/** When the pod landed on its node: PodScheduled's transition, else its creation. */
function boundAt(pod: KubeObject): number {
  const sched = (pod.status?.conditions as Condition[] | undefined)?.find(
    (c) => c.type === "PodScheduled" && c.status === "True",
  );
  return timeOf(sched?.lastTransitionTime) ?? timeOf(pod.metadata.creationTimestamp) ?? 0;
}

/**
 * When a pod must be evicted from a node with these taints (epoch ms): 0 = now, Infinity =
 * never. Every NoExecute taint must be tolerated; the shortest tolerationSeconds wins,
 * counted from when the pod and the taint met (the later of the taint's timeAdded and the
 * pod's arrival on the node: upstream starts the clock when it first sees the pair).
 */
export function evictionTime(
  pod: KubeObject,
  taints: Taint[],
  defaultTolerationSeconds: number,
  now: number,
): number {
  const noExecute = taints.filter((t) => t.effect === "NoExecute");
  if (!noExecute.length) return Infinity;
  const tolerations = withDefaultTolerations(pod.spec?.tolerations ?? [], defaultTolerationSeconds);
  let deadline = Infinity;
  for (const taint of noExecute) {
    const used = tolerations.filter((t) => tolerates(t, taint));
    if (!used.length) return 0;
    const since = Math.max(timeOf(taint.timeAdded) ?? now, boundAt(pod));
    for (const t of used) {
      if (typeof t.tolerationSeconds !== "number") continue;
      deadline = Math.min(deadline, since + Math.max(0, t.tolerationSeconds) * 1000);
    }
  }
  return deadline;
}
