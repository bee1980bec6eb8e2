// What the pod workers share: clients, managers, node facts, and each pod's
// working state.
import type { CriClient } from "../cri/client";
import type { PodSandboxConfig } from "../cri/types";
import type { Pod, PodContainer } from "../lib/kube-types";
import type { Api } from "./api";
import type { Backoff } from "./backoff";
import type { Recorder } from "./events";
import type { ImageManager } from "./images";
import type { Waiting } from "./pod-status";
import type { ProbeManager } from "./probes";
import type { RuntimeCache } from "./runtime-cache";
import type { ClusterDnsSettings } from "./specs";
import { PodTracer } from "./trace";

/** What the node's network (agent/network) gives pods: cluster DNS and Service variables. */
export interface PodNetworkServices {
  /** undefined while the node has no cluster DNS: pods then get the host's resolv.conf */
  dns(): ClusterDnsSettings | undefined;
  /** the Service environment variables of a container of a pod in `namespace` */
  serviceEnv(namespace: string, enableServiceLinks: boolean): Promise<{ key: string; value: string }[]>;
}

export interface NodeContext {
  nodeName: string;
  hostIP: string;
  hostHostname: string;
  root: string;
  cgroupRoot: string;
  sandboxImage: string;
  memoryCapacity: number;
  allocatable: { cpu: string; memory: string; pods: string };
  cri: CriClient;
  api: Api;
  cache: RuntimeCache;
  images: ImageManager;
  probes: ProbeManager;
  crashBackoff: Backoff;
  events: Recorder;
  log(msg: string): void;
  /** Asks for another sync of a pod, now or after a delay. */
  requestSync(uid: string, afterMs?: number): void;
  /** Hook for a CPU manager: called after a container is created. */
  onContainerCreated?(pod: Pod, container: PodContainer, containerId: string): Promise<void>;
  /** Hook for a CPU manager: called when a pod's runtime leftovers are removed. */
  onPodRemoved?(uid: string): void;
  /** The node's Services and DNS; absent when the node runs without them. */
  network?: PodNetworkServices;
}

export interface PodState {
  uid: string;
  pod: Pod;
  waiting: Map<string, Waiting>;
  startTime?: string;
  rejected?: { reason: string; message: string };
  sandboxId?: string;
  sandboxConfig?: PodSandboxConfig;
  podIP?: string;
  volumes?: Map<string, string>;
  /** Image pulls started while the sandbox was being created, by container name. */
  prepulls?: Map<string, Promise<import("./images").PullOutcome>>;
  /** When the worker first saw the pod (ms), for start latency. */
  seenAt: number;
  runningAt?: number;
  /** Stages of the first start, ms since seenAt (FLOW steps 6-9), for logs and metrics. */
  timeline: [string, number][];
  /** the pod's flow trace (trace.ts): its first start, and its restarts only for a pod already running */
  trace?: PodTracer;
  /** why this agent stopped a container, by container id (a restart's span says so) */
  killedFor?: Map<string, string>;
}

/** Records a stage of a pod's first start. */
export function mark(st: PodState, stage: string): void {
  if (!st.runningAt && st.timeline.length < 40) st.timeline.push([stage, Date.now() - st.seenAt]);
}

export function newPodState(pod: Pod): PodState {
  const now = Date.now();
  // a pod already running when first seen (edgelet restarted) has no start to measure
  const running = pod.status?.phase === "Running";
  return {
    uid: pod.metadata.uid,
    pod,
    waiting: new Map(),
    seenAt: now,
    timeline: [],
    runningAt: running ? now : undefined,
    trace: new PodTracer(now, running || !!pod.status?.startTime),
  };
}
