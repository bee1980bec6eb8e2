// What the scheduler writes back: the Binding, the PodScheduled=False
// condition, and the Scheduled / FailedScheduling events as upstream emits them.

import { microTime, rfc3339 } from "../../api/time";
import type { KubeObject } from "../../api/types";

export const SCHEDULER_NAME = "default-scheduler";
/** events.k8s.io/v1 note limit; longer messages are cut like upstream's truncateMessage. */
export const NOTE_LENGTH_LIMIT = 1024;

export function truncateMessage(msg: string): string {
  if (msg.length <= NOTE_LENGTH_LIMIT) return msg;
  const suffix = " ...";
  return msg.slice(0, NOTE_LENGTH_LIMIT - suffix.length) + suffix;
}

/** The body POSTed to pods/{name}/binding (DefaultBinder). */
export function bindingFor(pod: KubeObject, nodeName: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Binding",
    metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid },
    target: { kind: "Node", name: nodeName },
  };
}

export interface PodCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastProbeTime: string | null;
  lastTransitionTime?: string;
}

/** PodScheduled=False with reason Unschedulable (a FitError) or SchedulerError (anything else). */
export function unschedulableCondition(
  message: string,
  now: number,
  reason: "Unschedulable" | "SchedulerError" = "Unschedulable",
): PodCondition {
  return {
    type: "PodScheduled",
    status: "False",
    reason,
    message,
    lastProbeTime: null,
    lastTransitionTime: rfc3339(now),
  };
}

/**
 * The pod status after a failed attempt: the PodScheduled condition replaced
 * (its transition time kept if status did not change) and, after preemption,
 * status.nominatedNodeName. Returns null when nothing would change.
 */
export function failedSchedulingStatus(
  pod: KubeObject,
  message: string,
  now: number,
  opts: { reason?: "Unschedulable" | "SchedulerError"; nominatedNodeName?: string } = {},
): Record<string, unknown> | null {
  const status = { ...(pod.status ?? {}) } as Record<string, any>;
  const conds: PodCondition[] = [...(status.conditions ?? [])];
  const cond = unschedulableCondition(message, now, opts.reason);
  const i = conds.findIndex((c) => c.type === "PodScheduled");
  const nominatedChanged =
    opts.nominatedNodeName !== undefined && status.nominatedNodeName !== opts.nominatedNodeName;
  if (i >= 0) {
    const old = conds[i];
    if (
      old.status === cond.status &&
      old.reason === cond.reason &&
      old.message === cond.message &&
      !nominatedChanged
    )
      return null;
    if (old.status === cond.status && old.lastTransitionTime)
      cond.lastTransitionTime = old.lastTransitionTime;
    conds[i] = cond;
  } else conds.push(cond);
  status.conditions = conds;
  if (opts.nominatedNodeName !== undefined) status.nominatedNodeName = opts.nominatedNodeName || undefined;
  return status;
}

function podRef(pod: KubeObject) {
  return {
    kind: "Pod",
    namespace: pod.metadata.namespace,
    name: pod.metadata.name,
    uid: pod.metadata.uid,
    apiVersion: "v1",
    resourceVersion: pod.metadata.resourceVersion,
  };
}

export interface EventOptions {
  now?: number;
  /** Identifies this scheduler instance (upstream: "<controller>-<hostname>"). */
  reportingInstance?: string;
  reportingController?: string;
}

function makeEvent(
  pod: KubeObject,
  type: string,
  reason: string,
  action: string,
  note: string,
  o: EventOptions,
): KubeObject {
  const now = o.now ?? Date.now();
  const controller = o.reportingController ?? SCHEDULER_NAME;
  return {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: {
      name: `${pod.metadata.name}.${(BigInt(now) * 1000000n).toString(16)}`,
      namespace: pod.metadata.namespace ?? "default",
    },
    eventTime: microTime(now),
    reportingController: controller,
    reportingInstance: o.reportingInstance ?? `${controller}-edgeplane`,
    action,
    reason,
    regarding: podRef(pod),
    note: truncateMessage(note),
    type,
  };
}

/** Normal/Scheduled: "Successfully assigned ns/name to node". */
export function scheduledEvent(pod: KubeObject, nodeName: string, o: EventOptions = {}): KubeObject {
  const msg = `Successfully assigned ${pod.metadata.namespace ?? "default"}/${pod.metadata.name} to ${nodeName}`;
  return makeEvent(pod, "Normal", "Scheduled", "Binding", msg, o);
}

/** Warning/FailedScheduling with the FitError (or scheduler error) message. */
export function failedSchedulingEvent(pod: KubeObject, message: string, o: EventOptions = {}): KubeObject {
  return makeEvent(pod, "Warning", "FailedScheduling", "Scheduling", message, o);
}

/** Preemption: Normal/Preempted on each victim ("Preempted by pod <uid> on node <node>"). */
export function preemptedEvent(
  victim: KubeObject,
  preemptor: KubeObject,
  nodeName: string,
  o: EventOptions = {},
): KubeObject {
  const msg = `Preempted by pod ${preemptor.metadata.uid} on node ${nodeName}`;
  return makeEvent(victim, "Normal", "Preempted", "Preempting", msg, o);
}

/** The same event as core/v1 (how `kubectl get events` / describe read it). */
export function toCoreV1Event(ev: KubeObject): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: ev.metadata,
    involvedObject: ev.regarding,
    reason: ev.reason,
    message: ev.note,
    source: {},
    firstTimestamp: null,
    lastTimestamp: null,
    type: ev.type,
    eventTime: ev.eventTime,
    action: ev.action,
    reportingComponent: ev.reportingController,
    reportingInstance: ev.reportingInstance,
  };
}
