// When and how a simulated pod's containers finish, KWOK-style. A pod says so with
// annotations in edgeplane's own namespace (KWOK's stages read `<stage>.stage.kwok.x-k8s.io/
// delay` and `.../exit-code` the same way), a simulated Node with the same annotations sets
// the default for the pods on it, and a pod a Job owns finishes after a short run with exit
// code 0 unless told otherwise (KWOK's pod-complete stage), so Jobs complete and CronJobs
// keep their history on simulated nodes:
//
//   sim.edgeplane.dev/run-seconds  how long the containers run: "30", "1.5", "90s", "2m",
//                                  "500ms"; "never" keeps them running
//   sim.edgeplane.dev/exit-code    the code they exit with (default 0)
//
// The pod then ends as the kubelet would end it: Succeeded when every container exited 0 and
// the restart policy lets it stop (Never, or OnFailure), Failed on a non-zero exit under
// restartPolicy Never, and otherwise the containers restart (restartCount + 1, the last run
// in lastState) and run again.

import { rfc3339 } from "../../api/time";
import { restartSpanName, type TraceSpan } from "../../api/trace";
import type { ContainerState, ContainerStatus, Pod, PodCondition } from "../lib/kube-types";

export const RUN_SECONDS_ANNOTATION = "sim.edgeplane.dev/run-seconds";
export const EXIT_CODE_ANNOTATION = "sim.edgeplane.dev/exit-code";

/** What is read of a pod here: a pod as the informer gives it (agent/lib/kube-types.ts). */
export type SimPod = Pod;

/** How a pod's containers end, or undefined when they run until the pod is deleted. */
export interface Lifetime {
  runMs: number;
  exitCode: number;
}

/** Defaults for a simulator's pods, below what a pod or its node says. */
export interface LifetimeDefaults {
  /** Every pod's run time, in seconds (default: pods run until deleted). */
  runSeconds?: number;
  /** Run time of a pod a Job owns (default 1 s). */
  jobRunSeconds?: number;
  exitCode?: number;
}

export const DEFAULT_JOB_RUN_SECONDS = 1;
const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A run time in ms from an annotation: seconds, or a Go duration of one unit; null for "never". */
export function parseRunTime(text: string): number | null | undefined {
  const t = text.trim();
  if (t === "never") return null;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(t);
  if (!m) return undefined;
  return Math.round(Number(m[1]) * UNITS[m[2] ?? "s"]);
}

function parseExitCode(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{1,3}$/.test(text.trim())) return undefined;
  const n = Number(text);
  return n <= 255 ? n : undefined;
}

const ownedByJob = (pod: SimPod) =>
  (pod.metadata.ownerReferences ?? []).some((o) => o.kind === "Job" && o.controller !== false);

/**
 * The pod's lifetime: its own annotations, else its node's, else the simulator's defaults
 * (a Job's pod finishes after jobRunSeconds). A run time that does not parse is ignored.
 */
export function lifetimeOf(
  pod: SimPod,
  nodeAnnotations: Record<string, string> | undefined,
  defaults: LifetimeDefaults,
): Lifetime | undefined {
  const own = pod.metadata.annotations ?? {};
  const node = nodeAnnotations ?? {};
  const exitCode = parseExitCode(own[EXIT_CODE_ANNOTATION]) ?? parseExitCode(node[EXIT_CODE_ANNOTATION]);
  for (const text of [own[RUN_SECONDS_ANNOTATION], node[RUN_SECONDS_ANNOTATION]]) {
    if (text === undefined) continue;
    const ms = parseRunTime(text);
    if (ms === null) return undefined;
    if (ms !== undefined) return { runMs: ms, exitCode: exitCode ?? defaults.exitCode ?? 0 };
  }
  const seconds =
    defaults.runSeconds ??
    (ownedByJob(pod) ? (defaults.jobRunSeconds ?? DEFAULT_JOB_RUN_SECONDS) : undefined);
  if (seconds === undefined || !Number.isFinite(seconds)) return undefined;
  return { runMs: Math.max(0, seconds * 1000), exitCode: exitCode ?? defaults.exitCode ?? 0 };
}

/** Whether containers that exited with `exitCode` are started again, by the pod's restart policy. */
export function restarts(pod: SimPod, exitCode: number): boolean {
  const policy = pod.spec?.restartPolicy ?? "Always";
  return policy === "Always" || (policy === "OnFailure" && exitCode !== 0);
}

/** When the pod's containers last started (for a pod picked up again after a restart). */
export function runningSince(pod: SimPod): number | undefined {
  let latest: number | undefined;
  for (const c of pod.status?.containerStatuses ?? []) {
    const at = Date.parse(c.state?.running?.startedAt ?? "");
    if (Number.isFinite(at)) latest = Math.max(latest ?? at, at);
  }
  return latest;
}

function terminated(c: ContainerStatus, exitCode: number, at: string): ContainerState {
  return {
    terminated: {
      exitCode,
      reason: exitCode === 0 ? "Completed" : "Error",
      startedAt: c.state?.running?.startedAt ?? at,
      finishedAt: at,
      ...(c.containerID ? { containerID: c.containerID } : {}),
    },
  };
}

function condition(
  prev: PodCondition | undefined,
  type: string,
  status: string,
  at: string,
  reason?: string,
) {
  const since = prev?.status === status && prev.lastTransitionTime ? prev.lastTransitionTime : at;
  return {
    type,
    status,
    ...(reason ? { reason } : {}),
    lastProbeTime: null,
    lastTransitionTime: since,
  };
}

/**
 * A merge patch for pods/<name>/status: every container exited with `exitCode` and the pod is
 * done, Succeeded or Failed (restart policy Never, or OnFailure with exit code 0). Sidecars
 * (init containers that restart always) are stopped with it.
 */
export function finishedStatusPatch(pod: SimPod, exitCode: number, now = Date.now()) {
  const at = rfc3339(now);
  const phase = exitCode === 0 ? "Succeeded" : "Failed";
  const why = exitCode === 0 ? "PodCompleted" : "PodFailed";
  const old = pod.status ?? {};
  const conds = old.conditions ?? [];
  const prev = (type: string) => conds.find((c) => c.type === type);
  const mine = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady"];
  const conditions: object[] = [
    condition(prev("PodReadyToStartContainers"), "PodReadyToStartContainers", "False", at),
    condition(prev("Initialized"), "Initialized", "True", at, why),
    condition(prev("Ready"), "Ready", "False", at, why),
    condition(prev("ContainersReady"), "ContainersReady", "False", at, why),
    ...conds.filter((c) => !mine.includes(c.type)),
  ];
  const stop = (c: ContainerStatus, code: number): ContainerStatus => ({
    ...c,
    ready: false,
    started: false,
    state: terminated(c, code, at),
  });
  const sidecars = new Set(
    (pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy === "Always").map((c) => c.name),
  );
  const status: Record<string, unknown> = {
    phase,
    conditions,
    containerStatuses: (old.containerStatuses ?? []).map((c) => stop(c, exitCode)),
  };
  if (old.initContainerStatuses?.length)
    status.initContainerStatuses = old.initContainerStatuses.map((c) =>
      sidecars.has(c.name) ? stop(c, 0) : c,
    );
  return { status };
}

/** A merge patch for pods/<name>/status: the containers exited with `exitCode` and run again. */
export function restartedStatusPatch(pod: SimPod, exitCode: number, now = Date.now()) {
  const at = rfc3339(now);
  return {
    status: {
      containerStatuses: (pod.status?.containerStatuses ?? []).map((c) => ({
        ...c,
        restartCount: (c.restartCount ?? 0) + 1,
        lastState: terminated(c, exitCode, at),
        state: { running: { startedAt: at } },
      })),
    },
  };
}

/**
 * The restart's flow-trace spans (api/trace.ts), one per container, sent with the restart's
 * status patch as a node agent sends them: the containers end and run again at `now`, at once
 * (the simulator waits its minimum between runs before the next end, not before the start).
 */
export function restartSpans(pod: SimPod, exitCode: number, now = Date.now()): TraceSpan[] {
  return (pod.status?.containerStatuses ?? []).map((c) => {
    const restart = (c.restartCount ?? 0) + 1;
    return {
      step: "9.3",
      name: restartSpanName(c.name, restart),
      component: "edgelet",
      start: now,
      end: now,
      detail: {
        container: c.name,
        restart,
        cause: "exited",
        exitCode,
        reason: exitCode === 0 ? "Completed" : "Error",
        backOffMs: 0,
        runtime: "simulated",
      },
    };
  });
}
