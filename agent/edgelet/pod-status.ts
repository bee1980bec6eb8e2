// PodStatus computation, pure: from the pod spec, the runtime's containers,
// the worker's notes (waiting reasons such as ErrImagePull or
// CrashLoopBackOff) and probe results, as the kubelet derives it.

import { rfc3339 } from "../../api/time";
import type {
  ContainerState,
  ContainerStateTerminated,
  ContainerStatus,
  Pod,
  PodCondition,
  PodContainer,
  PodSpec,
  PodStatus,
} from "../lib/kube-types";
import { qosClass } from "./qos";
import type { ContainerInfo, PodRuntime } from "./runtime-cache";

export interface Waiting {
  reason: string;
  message?: string;
}

export interface ProbeState {
  started: boolean;
  ready: boolean;
}

export interface StatusInput {
  pod: Pod;
  runtime: PodRuntime;
  /** Sandbox in use (newest). */
  sandboxId?: string;
  podIP?: string;
  hostIP: string;
  startTime?: string;
  /** Waiting reasons by container name. */
  waiting: Map<string, Waiting>;
  /** Probe results by container id. */
  probes: Map<string, ProbeState>;
  /** Admission rejection or terminal failure of the pod itself. */
  rejected?: { reason: string; message: string };
  /** The pod is being torn down: no container counts as ready. */
  terminating?: boolean;
  now?: Date;
}

function nsTime(ns: number): string | undefined {
  return ns > 0 ? rfc3339(Math.floor(ns / 1e6)) : undefined;
}

export const CONTAINER_ID_PREFIX = "containerd://";

function terminated(c: ContainerInfo): ContainerStateTerminated {
  const reason = c.reason && c.reason !== "" ? c.reason : c.exitCode === 0 ? "Completed" : "Error";
  return {
    exitCode: c.exitCode,
    reason,
    ...(c.message ? { message: c.message } : {}),
    startedAt: nsTime(c.startedAt) ?? null,
    finishedAt: nsTime(c.finishedAt) ?? null,
    containerID: CONTAINER_ID_PREFIX + c.id,
  };
}

function stateOf(c: ContainerInfo): ContainerState {
  if (c.state === "CONTAINER_RUNNING") return { running: { startedAt: nsTime(c.startedAt) ?? null } };
  if (c.state === "CONTAINER_EXITED") return { terminated: terminated(c) };
  if (c.state === "CONTAINER_CREATED") return { waiting: { reason: "ContainerCreating" } };
  return {
    waiting: {
      reason: "ContainerStatusUnknown",
      message: "The container could not be located when the pod was terminated",
    },
  };
}

interface Counts {
  running: number;
  waiting: number;
  stopped: number;
  succeeded: number;
  failedInit: boolean;
  initPending: boolean;
}

function containerStatus(
  spec: PodContainer,
  list: ContainerInfo[],
  input: StatusInput,
  defaultWaiting: string,
  isInit: boolean,
): ContainerStatus {
  const latest = list[0];
  const image = spec.image ?? "";
  const waiting = input.waiting.get(spec.name);
  const base: ContainerStatus = {
    name: spec.name,
    image,
    imageID: "",
    ready: false,
    restartCount: latest?.restartCount ?? 0,
    started: false,
  };
  if (!latest) {
    base.state = {
      waiting: {
        reason: waiting?.reason ?? defaultWaiting,
        ...(waiting?.message ? { message: waiting.message } : {}),
      },
    };
    base.lastState = {};
    return base;
  }
  base.imageID = latest.imageRef;
  base.containerID = CONTAINER_ID_PREFIX + latest.id;
  const previous = list[1];
  base.lastState =
    previous && previous.state === "CONTAINER_EXITED" ? { terminated: terminated(previous) } : {};
  if (latest.state === "CONTAINER_EXITED" && waiting) {
    // waiting to restart: the exited one becomes lastState
    base.state = {
      waiting: { reason: waiting.reason, ...(waiting.message ? { message: waiting.message } : {}) },
    };
    base.lastState = { terminated: terminated(latest) };
  } else if (latest.state === "CONTAINER_CREATED" && waiting) {
    base.state = {
      waiting: { reason: waiting.reason, ...(waiting.message ? { message: waiting.message } : {}) },
    };
  } else base.state = stateOf(latest);
  if (latest.state === "CONTAINER_RUNNING") {
    const probe = input.probes.get(latest.id);
    base.started = probe ? probe.started : true;
    base.ready = !input.terminating && (probe ? probe.started && probe.ready : !isInit);
    if (isInit) base.ready = false;
  } else if (isInit && latest.state === "CONTAINER_EXITED" && latest.exitCode === 0) {
    base.ready = true;
  }
  return base;
}

/** Latest first, only the containers of one name. */
function byName(runtime: PodRuntime, name: string, sandboxId?: string): ContainerInfo[] {
  const all = runtime.containers.filter((c) => c.name === name);
  // containers of the current sandbox first; older sandboxes' still count as history
  return sandboxId
    ? [...all.filter((c) => c.sandboxId === sandboxId), ...all.filter((c) => c.sandboxId !== sandboxId)]
    : all;
}

function condition(
  old: PodCondition[],
  type: string,
  status: boolean,
  now: string,
  reason?: string,
  message?: string,
): PodCondition {
  const s = status ? "True" : "False";
  const prev = old.find((c) => c.type === type);
  return {
    type,
    status: s,
    lastProbeTime: null,
    lastTransitionTime: prev && prev.status === s ? prev.lastTransitionTime : now,
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
  };
}

const OWN_CONDITIONS = new Set(["PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"]);

/** The PodStatus edgelet reports; fields the API owns (nominatedNodeName, other conditions) are kept. */
export function computePodStatus(input: StatusInput): PodStatus {
  const { pod } = input;
  const now = rfc3339(input.now?.getTime());
  const old: PodStatus = pod.status ?? {};
  const oldConds = old.conditions ?? [];
  const spec: Partial<PodSpec> = pod.spec ?? {};
  const policy: string = spec.restartPolicy ?? "Always";
  const inits = spec.initContainers ?? [];
  const apps = spec.containers ?? [];
  const status: PodStatus = { ...old };
  status.qosClass = qosClass(pod);
  status.hostIP = input.hostIP;
  status.hostIPs = [{ ip: input.hostIP }];
  if (input.startTime) status.startTime = input.startTime;

  if (input.rejected && input.runtime.containers.length === 0) {
    // rejected before anything ran (node admission)
    status.phase = "Failed";
    status.reason = input.rejected.reason;
    status.message = input.rejected.message;
    return status;
  }

  const c: Counts = {
    running: 0,
    waiting: 0,
    stopped: 0,
    succeeded: 0,
    failedInit: false,
    initPending: false,
  };
  const initStatuses = inits.map((spec0) => {
    const list = byName(input.runtime, spec0.name, input.sandboxId);
    const st = containerStatus(spec0, list, input, "PodInitializing", true);
    const latest = list[0];
    const done =
      latest &&
      latest.sandboxId === input.sandboxId &&
      latest.state === "CONTAINER_EXITED" &&
      latest.exitCode === 0;
    if (!done && !(spec0.restartPolicy === "Always" && latest?.state === "CONTAINER_RUNNING")) {
      c.initPending = true;
      if (latest && latest.state === "CONTAINER_EXITED" && latest.exitCode !== 0 && policy === "Never")
        c.failedInit = true;
    }
    return st;
  });
  const initialized = !c.initPending;
  const appStatuses = apps.map((spec0) => {
    const list = byName(input.runtime, spec0.name, input.sandboxId);
    const st = containerStatus(
      spec0,
      list,
      input,
      initialized ? "ContainerCreating" : "PodInitializing",
      false,
    );
    if (st.state?.running) c.running++;
    else if (st.state?.terminated) {
      c.stopped++;
      if (st.state.terminated.exitCode === 0) c.succeeded++;
    } else if (st.state?.waiting) {
      if (st.lastState?.terminated) c.stopped++;
      else c.waiting++;
    }
    return st;
  });

  let phase: NonNullable<PodStatus["phase"]>;
  if (c.failedInit) phase = "Failed";
  else if (c.initPending) phase = "Pending";
  else if (c.waiting > 0) phase = "Pending";
  else if (c.running > 0) phase = "Running";
  else if (c.stopped > 0) {
    if (policy === "Always") phase = "Running";
    else if (c.stopped === c.succeeded) phase = "Succeeded";
    else if (policy === "Never") phase = "Failed";
    else phase = "Running";
  } else phase = "Pending";
  // a pod that has finished never goes back
  if (old.phase === "Succeeded" || old.phase === "Failed") phase = old.phase;
  if (input.rejected) phase = "Failed"; // e.g. DeadlineExceeded while running
  status.phase = phase;
  if (input.rejected) {
    status.reason = input.rejected.reason;
    status.message = input.rejected.message;
  } else {
    delete status.reason;
    delete status.message;
  }

  const sandboxReady =
    !!input.sandboxId &&
    input.runtime.sandboxes.some((s) => s.id === input.sandboxId && s.state === "SANDBOX_READY");
  const unready = appStatuses.filter((s) => !s.ready).map((s) => s.name);
  const uninit = initStatuses
    .filter((s, i) => c.initPending && !s.ready && inits[i]?.restartPolicy !== "Always")
    .map((s) => s.name);
  const allReady = unready.length === 0 && phase === "Running";
  const finished = phase === "Succeeded" || phase === "Failed";
  const conds = oldConds.filter((x) => !OWN_CONDITIONS.has(x.type));
  conds.push(condition(oldConds, "PodReadyToStartContainers", sandboxReady, now));
  conds.push(
    initialized
      ? condition(oldConds, "Initialized", true, now, finished && inits.length ? "PodCompleted" : undefined)
      : condition(
          oldConds,
          "Initialized",
          false,
          now,
          "ContainersNotInitialized",
          `containers with incomplete status: [${uninit.join(" ")}]`,
        ),
  );
  const why = finished ? "PodCompleted" : "ContainersNotReady";
  const msg = finished ? undefined : `containers with unready status: [${unready.join(" ")}]`;
  conds.push(
    allReady
      ? condition(oldConds, "ContainersReady", true, now)
      : condition(oldConds, "ContainersReady", false, now, why, msg),
  );
  conds.push(
    allReady ? condition(oldConds, "Ready", true, now) : condition(oldConds, "Ready", false, now, why, msg),
  );
  if (!conds.some((x) => x.type === "PodScheduled"))
    conds.push(condition(oldConds, "PodScheduled", true, now));
  const order = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"];
  conds.sort((a, b) => rank(order, a.type) - rank(order, b.type));
  status.conditions = conds;
  if (input.podIP) {
    status.podIP = input.podIP;
    status.podIPs = [{ ip: input.podIP }];
  }
  if (inits.length) status.initContainerStatuses = initStatuses;
  else delete status.initContainerStatuses;
  status.containerStatuses = appStatuses;
  const ephemeral = spec.ephemeralContainers ?? [];
  if (ephemeral.length) status.ephemeralContainerStatuses = ephemeral.map((e) => ephemeralStatus(e, input));
  else delete status.ephemeralContainerStatuses;
  return status;
}

/**
 * An ephemeral container's status, as the kubelet reports it: the shape of an app container's,
 * but never ready and without `started` (no probe runs for it); it counts toward neither the
 * phase nor the Ready condition.
 */
function ephemeralStatus(spec: PodContainer, input: StatusInput): ContainerStatus {
  const hasInits = (input.pod.spec?.initContainers ?? []).length > 0;
  const list = byName(input.runtime, spec.name, input.sandboxId);
  const st = containerStatus(spec, list, input, hasInits ? "PodInitializing" : "ContainerCreating", false);
  st.ready = false;
  delete st.started;
  return st;
}

function rank(order: string[], t: string): number {
  const i = order.indexOf(t);
  return i < 0 ? order.length : i;
}

/** Whether a computed phase ends the pod. */
export function isTerminalPhase(phase: string | undefined): boolean {
  return phase === "Succeeded" || phase === "Failed";
}
