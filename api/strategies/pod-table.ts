// `kubectl get pods` columns, after upstream's printPod: READY counts, the STATUS
// reason (init progress, waiting/terminated reasons, Terminating) and RESTARTS "N (Xm ago)".

import type { TableColumn } from "../resource";
import type { KubeObject } from "../types";
import { ageColumn, column, humanDuration, isObject, nameColumn } from "./common";

const time = (ts: unknown): number => (typeof ts === "string" ? Date.parse(ts) || 0 : 0);
const arr = (v: unknown): any[] => (Array.isArray(v) ? v : []);

function conditionTrue(status: any, type: string): boolean {
  for (const c of arr(status?.conditions)) if (c?.type === type) return c.status === "True";
  return false;
}

export interface PodSummary {
  ready: string;
  status: string;
  restarts: string;
}

export function summarizePod(pod: KubeObject, now: number): PodSummary {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const status = isObject(pod.status) ? pod.status : {};
  let restarts = 0;
  let sidecarRestarts = 0;
  let total = arr(spec.containers).length;
  let ready = 0;
  let lastRestart = 0;
  let lastSidecarRestart = 0;
  const phase: string = status.phase ?? "";
  let reason: string = status.reason || phase;
  for (const c of arr(status.conditions))
    if (c?.type === "PodScheduled" && c.reason === "SchedulingGated") reason = "SchedulingGated";

  const initSpecs = new Map<string, any>();
  for (const c of arr(spec.initContainers)) {
    initSpecs.set(c?.name, c);
    if (c?.restartPolicy === "Always") total++;
  }
  const isSidecar = (name: string) => initSpecs.get(name)?.restartPolicy === "Always";

  let initializing = false;
  const initStatuses = arr(status.initContainerStatuses);
  for (let i = 0; i < initStatuses.length; i++) {
    const c = initStatuses[i] ?? {};
    restarts += c.restartCount ?? 0;
    const finished = time(c.lastState?.terminated?.finishedAt);
    if (c.lastState?.terminated && finished > lastRestart) lastRestart = finished;
    if (isSidecar(c.name)) {
      sidecarRestarts += c.restartCount ?? 0;
      if (c.lastState?.terminated && finished > lastSidecarRestart) lastSidecarRestart = finished;
    }
    const term = c.state?.terminated;
    const wait = c.state?.waiting;
    if (term && (term.exitCode ?? 0) === 0) continue;
    if (isSidecar(c.name) && c.started === true) {
      if (c.ready) ready++;
      continue;
    }
    if (term) {
      if (!term.reason)
        reason = term.signal ? `Init:Signal:${term.signal}` : `Init:ExitCode:${term.exitCode ?? 0}`;
      else reason = `Init:${term.reason}`;
    } else if (wait?.reason && wait.reason !== "PodInitializing") {
      reason = `Init:${wait.reason}`;
    } else {
      reason = `Init:${i}/${arr(spec.initContainers).length}`;
    }
    initializing = true;
    break;
  }

  if (!initializing || conditionTrue(status, "Initialized")) {
    restarts = sidecarRestarts;
    lastRestart = lastSidecarRestart;
    let hasRunning = false;
    const statuses = arr(status.containerStatuses);
    for (let i = statuses.length - 1; i >= 0; i--) {
      const c = statuses[i] ?? {};
      restarts += c.restartCount ?? 0;
      const finished = time(c.lastState?.terminated?.finishedAt);
      if (c.lastState?.terminated && finished > lastRestart) lastRestart = finished;
      const term = c.state?.terminated;
      if (c.state?.waiting?.reason) reason = c.state.waiting.reason;
      else if (term?.reason) reason = term.reason;
      else if (term) reason = term.signal ? `Signal:${term.signal}` : `ExitCode:${term.exitCode ?? 0}`;
      else if (c.ready && c.state?.running) {
        hasRunning = true;
        ready++;
      }
    }
    if (reason === "Completed" && hasRunning)
      reason = conditionTrue(status, "Ready") ? "Running" : "NotReady";
  }

  const deleting = !!pod.metadata?.deletionTimestamp;
  if (deleting && status.reason === "NodeLost") reason = "Unknown";
  else if (deleting && phase !== "Succeeded" && phase !== "Failed") reason = "Terminating";

  let restartsText = String(restarts);
  if (restarts !== 0 && lastRestart !== 0)
    restartsText = `${restarts} (${humanDuration(now - lastRestart)} ago)`;
  return { ready: `${ready}/${total}`, status: reason, restarts: restartsText };
}

function podIP(pod: KubeObject): string {
  const ips = arr(pod.status?.podIPs);
  return ips[0]?.ip || pod.status?.podIP || "<none>";
}

function readinessGates(pod: KubeObject): string {
  const gates = arr(pod.spec?.readinessGates);
  if (gates.length === 0) return "<none>";
  let ok = 0;
  for (const g of gates) {
    const c = arr(pod.status?.conditions).find((x) => x?.type === g?.conditionType);
    if (c?.status === "True") ok++;
  }
  return `${ok}/${gates.length}`;
}

export const podColumns: TableColumn[] = [
  nameColumn,
  column(
    "Ready",
    "string",
    "The aggregate readiness state of this pod for accepting traffic.",
    (o, now) => summarizePod(o, now).ready,
  ),
  column(
    "Status",
    "string",
    "The aggregate status of the containers in this pod.",
    (o, now) => summarizePod(o, now).status,
  ),
  column(
    "Restarts",
    "string",
    "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    (o, now) => summarizePod(o, now).restarts,
  ),
  ageColumn,
  column(
    "IP",
    "string",
    "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
    podIP,
    1,
  ),
  column(
    "Node",
    "string",
    "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
    (o) => o.spec?.nodeName || "<none>",
    1,
  ),
  column(
    "Nominated Node",
    "string",
    "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.",
    (o) => o.status?.nominatedNodeName || "<none>",
    1,
  ),
  column(
    "Readiness Gates",
    "string",
    'If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to "True" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates',
    readinessGates,
    1,
  ),
];
