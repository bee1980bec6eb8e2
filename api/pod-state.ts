// What state a pod is in, as upstream's pod helpers judge it: ready, available, finished, active.
import { timeOf } from "./time";
import type { KubeObject } from "./types";

export function podCondition(pod: KubeObject, type: string): any | undefined {
  return (pod.status?.conditions as any[] | undefined)?.find((c) => c.type === type);
}

export function isPodReady(pod: KubeObject): boolean {
  return podCondition(pod, "Ready")?.status === "True";
}

/** Ready for at least minReadySeconds (upstream IsPodAvailable). */
export function isPodAvailable(pod: KubeObject, minReadySeconds: number, now: number): boolean {
  const c = podCondition(pod, "Ready");
  if (c?.status !== "True") return false;
  if (!minReadySeconds) return true;
  const since = timeOf(c.lastTransitionTime);
  return since !== undefined && since + minReadySeconds * 1000 <= now;
}

export function isTerminal(pod: KubeObject): boolean {
  const p = pod.status?.phase;
  return p === "Succeeded" || p === "Failed";
}

/** Counted as a replica: neither finished nor being deleted (upstream FilterActivePods). */
export function isActivePod(pod: KubeObject): boolean {
  return !isTerminal(pod) && !pod.metadata.deletionTimestamp;
}
