// The status a kubelet would report for a pod whose containers all started: Running,
// every condition True, init containers Completed (sidecars running), fake IPs.
import type { ContainerStatus, Pod, PodCondition, PodContainer, PodStatus } from "../lib/kube-types";
import { rfc3339 } from "./node-spec";

export interface PodPlacement {
  hostIP: string;
  podIP: string;
}

const CONDITION_TYPES = [
  "PodReadyToStartContainers",
  "Initialized",
  "ContainersReady",
  "Ready",
  "PodScheduled",
];

function running(c: PodContainer, uid: string, at: string, ready = true): ContainerStatus {
  return {
    name: c.name,
    image: c.image ?? "",
    imageID: `simulated://${c.image ?? ""}`,
    containerID: `simulated://${uid}-${c.name}`,
    ready,
    started: true,
    restartCount: 0,
    state: { running: { startedAt: at } },
    lastState: {},
  };
}

function completed(c: PodContainer, uid: string, at: string): ContainerStatus {
  return {
    name: c.name,
    image: c.image ?? "",
    imageID: `simulated://${c.image ?? ""}`,
    containerID: `simulated://${uid}-${c.name}`,
    ready: true,
    started: false,
    restartCount: 0,
    state: {
      terminated: {
        exitCode: 0,
        reason: "Completed",
        startedAt: at,
        finishedAt: at,
        containerID: `simulated://${uid}-${c.name}`,
      },
    },
    lastState: {},
  };
}

/** A merge patch for pods/<name>/status that makes the pod Running. */
export function runningStatusPatch(
  pod: Pod,
  where: PodPlacement,
  now = new Date(),
): { status: PodStatus; metadata?: { uid: string } } {
  const at = rfc3339(now.getTime());
  const uid: string = pod.metadata?.uid ?? "";
  const spec: Partial<NonNullable<Pod["spec"]>> = pod.spec ?? {};
  const old: PodStatus = pod.status ?? {};
  const oldConds: PodCondition[] = Array.isArray(old.conditions) ? old.conditions : [];
  const conditions: PodCondition[] = CONDITION_TYPES.map((type) => {
    const prev = oldConds.find((c) => c?.type === type);
    const since = prev?.status === "True" && prev.lastTransitionTime ? prev.lastTransitionTime : at;
    return { type, status: "True", lastProbeTime: null, lastTransitionTime: since };
  });
  // readiness gates and other conditions someone else owns stay as they are
  for (const c of oldConds) if (c?.type && !CONDITION_TYPES.includes(c.type)) conditions.push(c);
  const podIP = spec.hostNetwork ? where.hostIP : where.podIP;
  const status: PodStatus = {
    phase: "Running",
    conditions,
    hostIP: where.hostIP,
    hostIPs: [{ ip: where.hostIP }],
    podIP,
    podIPs: [{ ip: podIP }],
    startTime: old.startTime ?? at,
    containerStatuses: (Array.isArray(spec.containers) ? spec.containers : []).map((c) =>
      running(c, uid, at),
    ),
  };
  const inits = Array.isArray(spec.initContainers) ? spec.initContainers : [];
  if (inits.length) {
    // restartPolicy Always on an init container makes it a sidecar: it keeps running
    status.initContainerStatuses = inits.map((c) =>
      c.restartPolicy === "Always" ? running(c, uid, at) : completed(c, uid, at),
    );
  }
  if (old.qosClass) status.qosClass = old.qosClass;
  return { status };
}

/** Whether the pod already reports what this simulator would (e.g. after a restart). */
export function looksStarted(pod: Pod): pod is Pod & { status: { podIP: string } } {
  const s = pod.status ?? {};
  return s.phase === "Running" && typeof s.podIP === "string" && s.podIP !== "";
}
