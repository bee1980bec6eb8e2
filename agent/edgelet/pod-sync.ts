// One pod's sync, level-triggered like the kubelet's SyncPod: pod dirs,
// volumes, the sandbox (new one when missing or dead), init containers in
// order to completion, then the app containers with restarts per
// restartPolicy, crash-loop backoff, and liveness kills. Also the pod's
// teardown (killPod) and the removal of what is left (cleanupPod).
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { rfc3339 } from "../../api/time";
import { CriError } from "../cri/client";
import type { Pod, PodContainer } from "../lib/kube-types";
import { enc } from "./api";
import { applyPodLimits, podCgroupParent, podLimits, removePodCgroupEventually } from "./cgroups";
import { fieldPath, killContainer, podDir, startContainer } from "./containers";
import { mark, type NodeContext, type PodState } from "./context";
import { qosClass } from "./qos";
import type { ContainerInfo, PodRuntime } from "./runtime-cache";
import { containerHash, dnsConfig, sandboxConfig } from "./specs";
import { setupVolumes, VolumeError } from "./volumes";

export interface SyncResult {
  /** Ask for another sync after this many ms (backoffs). */
  requeueMs?: number;
}

let hostResolv: string | undefined;
function resolvConf(): string {
  if (hostResolv === undefined) {
    try {
      hostResolv = readFileSync("/etc/resolv.conf", "utf8");
    } catch {
      hostResolv = "";
    }
  }
  return hostResolv;
}

export function logDirectory(ctx: NodeContext, pod: Pod): string {
  return join(ctx.root, "logs", `${pod.metadata.namespace}_${pod.metadata.name}_${pod.metadata.uid}`);
}

export function gracePeriod(pod: Pod): number {
  return pod.metadata?.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
}

function minReq(a: number | undefined, b: number): number {
  return a === undefined ? b : Math.min(a, b);
}

function buildSandboxConfig(ctx: NodeContext, st: PodState, attempt: number) {
  const pod = st.pod;
  return sandboxConfig({
    pod,
    nodeName: ctx.nodeName,
    attempt,
    logDirectory: logDirectory(ctx, pod),
    cgroupParent: podCgroupParent(ctx.cgroupRoot, qosClass(pod), st.uid),
    dns: dnsConfig(pod, resolvConf(), ctx.network?.dns()),
    hostHostname: ctx.hostHostname,
  });
}

async function ensureSandbox(
  ctx: NodeContext,
  st: PodState,
  rt: PodRuntime,
): Promise<PodRuntime | "wait" | "finished"> {
  const pod = st.pod;
  const current = rt.sandboxes[0];
  if (current && current.state === "SANDBOX_READY") {
    st.sandboxId = current.id;
    st.podIP = current.ip || (pod.spec?.hostNetwork ? ctx.hostIP : st.podIP);
    st.sandboxConfig ??= buildSandboxConfig(ctx, st, current.attempt);
    return rt;
  }
  const policy = pod.spec?.restartPolicy ?? "Always";
  if (current && policy === "Never" && rt.containers.length > 0) return "finished";
  for (const s of rt.sandboxes) {
    if (s.state === "SANDBOX_READY") continue;
    await ctx.cri.stopPodSandbox(s.id).catch(() => {});
  }
  const attempt = current ? current.attempt + 1 : 0;
  try {
    await ctx.images.ensureSandboxImage(ctx.sandboxImage, pod);
  } catch (e) {
    ctx.events(
      pod,
      "Warning",
      "FailedCreatePodSandBox",
      `Failed to pull sandbox image "${ctx.sandboxImage}": ${(e as Error).message}`,
    );
    st.trace?.failed("7.1", "sandbox", `FailedCreatePodSandBox: ${(e as Error).message}`);
    return "wait";
  }
  if (st.trace && !st.trace.finished && !st.trace.has("6.7")) await tracePullSecrets(ctx, st);
  // the first container's image is made present while the sandbox starts (off the critical path)
  const first = (pod.spec?.initContainers ?? [])[0] ?? (pod.spec?.containers ?? [])[0];
  if (first && !st.prepulls?.has(first.name)) {
    st.prepulls ??= new Map();
    const early = ctx.images.ensure(pod, first, fieldPath(pod, first.name));
    early.catch(() => {});
    st.prepulls.set(first.name, early);
  }
  const config = buildSandboxConfig(ctx, st, attempt);
  mkdirSync(config.log_directory as string, { recursive: true });
  // the pod cgroup with its limits, before anything runs in it
  if (qosClass(pod) !== "BestEffort")
    applyPodLimits(config.linux?.cgroup_parent as string, podLimits(pod), ctx.log);
  st.trace?.first("6.4", "6.4", "cgroup", {
    qosClass: qosClass(pod),
    cgroupParent: config.linux?.cgroup_parent,
    limitsApplied: qosClass(pod) !== "BestEffort",
  });
  let id: string;
  mark(st, "sandbox-image");
  try {
    id = await ctx.cri.runPodSandbox(config, await runtimeHandler(ctx, pod));
  } catch (e) {
    const msg = e instanceof CriError ? e.details : (e as Error).message;
    ctx.events(pod, "Warning", "FailedCreatePodSandBox", `Failed to create pod sandbox: ${msg}`);
    ctx.log(`pod ${pod.metadata.namespace}/${pod.metadata.name}: RunPodSandbox: ${msg}`);
    st.trace?.failed("7.1", "sandbox", `FailedCreatePodSandBox: ${msg}`);
    return "wait";
  }
  st.trace?.stage("7.1", "sandbox", {
    sandboxId: id.slice(0, 13),
    attempt,
    note: "RunPodSandbox, CNI included",
  });
  st.sandboxConfig = config;
  st.sandboxId = id;
  const status = await ctx.cri.podSandboxStatus(id);
  st.podIP = status.status?.network?.ip || (pod.spec?.hostNetwork ? ctx.hostIP : undefined);
  mark(st, "sandbox+cni");
  st.trace?.stage("8.1", "network (CNI)", {
    ip: st.podIP,
    interface: pod.spec?.hostNetwork ? "host" : "eth0",
    hostNetwork: !!pod.spec?.hostNetwork,
  });
  if (current)
    ctx.events(pod, "Normal", "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.");
  return ctx.cache.refreshPod(st.uid);
}

/** The CRI runtime handler of the pod's RuntimeClass ("" for the runtime's default). */
async function runtimeHandler(ctx: NodeContext, pod: Pod): Promise<string> {
  const name = pod.spec?.runtimeClassName;
  if (!name) return "";
  const r = await ctx.api.get(`/apis/node.k8s.io/v1/runtimeclasses/${enc(name)}`);
  if (r.status === 200) return typeof r.json?.handler === "string" ? r.json.handler : "";
  throw new Error(
    r.status === 404
      ? `runtimeclass.node.k8s.io "${name}" not found`
      : `failed to lookup RuntimeClass ${name}: ${r.status}`,
  );
}

function inSandbox(rt: PodRuntime, name: string, sandboxId: string): ContainerInfo[] {
  return rt.containers.filter((c) => c.name === name && c.sandboxId === sandboxId);
}

/** The container's newest run in any sandbox of the pod (a new sandbox restarts its containers). */
function previousRun(rt: PodRuntime, name: string): ContainerInfo | undefined {
  return rt.containers.find((c) => c.name === name);
}

/** Why a container starts again, for its restart's span (trace.ts). */
interface RestartWhy {
  cause: string;
  /** the back-off waited before this restart (ms) */
  backOffMs: number;
  /** when the previous run ended, if it is not the runtime's finishedAt (ms) */
  since?: number;
}

/**
 * Starts container `c`: its first run when `previous` is undefined, else its next (restartCount
 * one more), traced as one span (9.3, `start <c> (restart N)`) with the previous run's exit and
 * the back-off waited.
 */
async function runContainer(
  ctx: NodeContext,
  st: PodState,
  c: PodContainer,
  previous: ContainerInfo | undefined,
  isInit: boolean,
  why: RestartWhy,
): Promise<boolean> {
  const restart = previous ? previous.restartCount + 1 : 0;
  if (!(await startContainer(ctx, st, c, restart, isInit))) return false;
  if (!previous) return true;
  const killed = st.killedFor?.get(previous.id);
  st.killedFor?.delete(previous.id);
  const exited = previous.state === "CONTAINER_EXITED";
  const finished = exited && previous.finishedAt > 0 ? previous.finishedAt / 1e6 : undefined;
  const detail: Record<string, unknown> = {
    cause: killed ?? why.cause,
    previousContainerId: previous.id.slice(0, 13),
    backOffMs: why.backOffMs,
  };
  if (exited) {
    detail.exitCode = previous.exitCode;
    if (previous.reason) detail.reason = previous.reason;
    if (finished) detail.finishedAt = rfc3339(Math.floor(finished));
  }
  st.trace?.restart(c.name, restart, why.since ?? finished, detail);
  return true;
}

/**
 * The kubelet's crash-loop back-off: while in it, the ms to wait before the next try; past it,
 * the back-off that was waited (0 the first time).
 */
function crashLoop(
  ctx: NodeContext,
  st: PodState,
  c: PodContainer,
  latest: ContainerInfo,
): { waitMs: number } | { backOffMs: number } {
  const key = `${st.uid}/${c.name}`;
  const finished = latest.finishedAt > 0 ? Math.floor(latest.finishedAt / 1e6) : Date.now();
  if (ctx.crashBackoff.inBackoff(key, finished)) {
    const delayS = Math.round(ctx.crashBackoff.delay(key) / 1000);
    const pod = st.pod;
    const message = `back-off ${delayS < 60 ? `${delayS}s` : `${Math.floor(delayS / 60)}m${delayS % 60 ? `${delayS % 60}s` : ""}`} restarting failed container=${c.name} pod=${pod.metadata.name}_${pod.metadata.namespace}(${st.uid})`;
    if (st.waiting.get(c.name)?.reason !== "CrashLoopBackOff") {
      ctx.events(
        pod,
        "Warning",
        "BackOff",
        "Back-off restarting failed container",
        `spec.containers{${c.name}}`,
      );
    }
    st.waiting.set(c.name, { reason: "CrashLoopBackOff", message });
    return { waitMs: Math.max(50, ctx.crashBackoff.remaining(key, finished)) };
  }
  const backOffMs = ctx.crashBackoff.delay(key);
  ctx.crashBackoff.next(key);
  return { backOffMs };
}

/** A container started again in a new sandbox (the old one died). */
const NEW_SANDBOX: RestartWhy = { cause: "sandbox changed", backOffMs: 0 };

/** Brings the runtime in line with the pod spec. */
export async function syncPod(ctx: NodeContext, st: PodState): Promise<SyncResult> {
  const pod = st.pod;
  const uid = st.uid;
  const dir = podDir(ctx, uid);
  for (const sub of ["volumes", "plugins", "containers"]) mkdirSync(join(dir, sub), { recursive: true });
  st.trace?.first("6.5", "6.5", "pod directories", { dir });
  st.startTime ??= pod.status?.startTime ?? rfc3339();
  try {
    st.volumes = await setupVolumes(
      {
        api: ctx.api,
        pod,
        podDir: dir,
        env: {
          pod,
          podIP: st.podIP,
          hostIP: ctx.hostIP,
          nodeName: ctx.nodeName,
          allocatable: ctx.allocatable,
        },
      },
      ctx.log,
    );
  } catch (e) {
    if (!(e instanceof VolumeError)) throw e;
    ctx.events(pod, "Warning", "FailedMount", `MountVolume.SetUp failed: ${e.message}`);
    st.trace?.failed("6.6", "volumes", `FailedMount: ${e.message}`, undefined, "waiting");
    return { requeueMs: 2000 };
  }
  mark(st, "volumes");
  st.trace?.first("6.6", "6.6", "volumes", { volumes: (pod.spec?.volumes ?? []).map((v) => v.name) });
  const ensured = await ensureSandbox(ctx, st, await ctx.cache.refreshPod(uid));
  if (ensured === "wait") return { requeueMs: 2000 };
  if (ensured === "finished") return {};
  let rt = ensured;
  const sandboxId = st.sandboxId as string;
  const policy: string = pod.spec?.restartPolicy ?? "Always";
  let requeueMs = await startEphemeral(ctx, st, rt);

  // init containers, in order, each to completion
  for (const c of pod.spec?.initContainers ?? []) {
    const latest = inSandbox(rt, c.name, sandboxId)[0];
    const sidecar = c.restartPolicy === "Always";
    if (!latest) {
      if (!(await runContainer(ctx, st, c, previousRun(rt, c.name), true, NEW_SANDBOX)))
        return { requeueMs: retryDelay(ctx, st, c) };
      if (!sidecar) {
        await ctx.cache.refreshPod(uid);
        return {};
      }
      rt = await ctx.cache.refreshPod(uid);
      continue;
    }
    if (latest.state === "CONTAINER_RUNNING" || latest.state === "CONTAINER_CREATED") {
      if (sidecar && latest.state === "CONTAINER_RUNNING") continue;
      return {};
    }
    if (latest.exitCode === 0 && !sidecar) {
      st.trace?.first(`9.1 ${c.name}`, "9.1", `init ${c.name} completed`, { exitCode: 0 });
      continue;
    }
    if (policy === "Never" && !sidecar) return {}; // the pod has failed
    const loop = crashLoop(ctx, st, c, latest);
    if ("waitMs" in loop) return { requeueMs: loop.waitMs };
    if (!(await runContainer(ctx, st, c, latest, true, { cause: "exited", backOffMs: loop.backOffMs })))
      return { requeueMs: retryDelay(ctx, st, c) };
    return {};
  }

  // app containers
  const grace = pod.spec?.terminationGracePeriodSeconds ?? 30;
  let started = 0;
  for (const c of pod.spec?.containers ?? []) {
    const latest = inSandbox(rt, c.name, sandboxId)[0];
    if (!latest) {
      if (!(await runContainer(ctx, st, c, previousRun(rt, c.name), false, NEW_SANDBOX)))
        requeueMs = minReq(requeueMs, retryDelay(ctx, st, c));
      else started++;
      continue;
    }
    if (latest.state === "CONTAINER_RUNNING") {
      if (latest.hash && latest.hash !== containerHash(c)) {
        const killedAt = Date.now();
        await killContainer(
          ctx,
          st,
          latest,
          grace,
          `Container ${c.name} definition changed, will be restarted`,
        );
        const why = { cause: "definition changed", backOffMs: 0, since: killedAt };
        if (await runContainer(ctx, st, c, latest, false, why)) started++;
        else requeueMs = minReq(requeueMs, retryDelay(ctx, st, c));
        continue;
      }
      const probe = ctx.probes.get(latest.id);
      if (!probe) {
        const shown = (pod.status?.containerStatuses ?? []).find(
          (x) => x.containerID === `containerd://${latest.id}`,
        );
        ctx.probes.add({
          uid,
          containerId: latest.id,
          container: c,
          podIP: st.podIP,
          runningForS: latest.startedAt > 0 ? (Date.now() - latest.startedAt / 1e6) / 1000 : 0,
          previous: shown ? { ready: !!shown.ready, started: !!shown.started } : undefined,
        });
      } else if (probe.liveFailed || probe.startupFailed) {
        const why = probe.liveFailed ? "liveness" : "startup";
        (st.killedFor ??= new Map()).set(latest.id, `${why} probe failed`);
        await killContainer(
          ctx,
          st,
          latest,
          grace,
          `Container ${c.name} failed ${why} probe, will be restarted`,
        );
        requeueMs = minReq(requeueMs, 0);
      }
      continue;
    }
    if (latest.state === "CONTAINER_CREATED") {
      await ctx.cri.removeContainer(latest.id).catch(() => {});
      requeueMs = minReq(requeueMs, 0);
      continue;
    }
    // exited
    ctx.probes.remove(latest.id);
    const restart = policy === "Always" || (policy === "OnFailure" && latest.exitCode !== 0);
    if (!restart) continue;
    const loop = crashLoop(ctx, st, c, latest);
    if ("waitMs" in loop) {
      requeueMs = minReq(requeueMs, loop.waitMs);
      continue;
    }
    if (!(await runContainer(ctx, st, c, latest, false, { cause: "exited", backOffMs: loop.backOffMs })))
      requeueMs = minReq(requeueMs, retryDelay(ctx, st, c));
    else started++;
  }
  await removeDeadContainers(ctx, rt, sandboxId);
  if (started > 0) await ctx.cache.refreshPod(uid); // report the fresh state without waiting for the relist
  return { requeueMs };
}

/**
 * Ephemeral containers (kubectl debug): each started once, before the init containers as the
 * kubelet does (they may run while a pod initializes), and never restarted; one that ever ran
 * under its name is not started again. A targetContainerName joins that container's process
 * namespace, so it must have been created first. Returns a requeue delay when one could not start.
 */
async function startEphemeral(ctx: NodeContext, st: PodState, rt: PodRuntime): Promise<number | undefined> {
  let requeueMs: number | undefined;
  let started = 0;
  for (const c of st.pod.spec?.ephemeralContainers ?? []) {
    if (rt.containers.some((x) => x.name === c.name)) continue;
    let targetId: string | undefined;
    if (c.targetContainerName) {
      targetId = rt.containers.find((x) => x.name === c.targetContainerName)?.id;
      if (!targetId) {
        st.waiting.set(c.name, {
          reason: "CreateContainerConfigError",
          message: `unable to find target container ${c.targetContainerName}`,
        });
        requeueMs = minReq(requeueMs, 2000);
        continue;
      }
    }
    if (await startContainer(ctx, st, c, 0, false, targetId)) started++;
    else requeueMs = minReq(requeueMs, retryDelay(ctx, st, c));
  }
  if (started > 0) await ctx.cache.refreshPod(st.uid); // its status is reported at once
  return requeueMs;
}

/**
 * Container garbage collection within a pod: per container name the newest
 * two are kept (the current one and the one `kubectl logs --previous` shows);
 * older exited ones and dead sandboxes without containers are removed.
 */
async function removeDeadContainers(ctx: NodeContext, rt: PodRuntime, sandboxId: string): Promise<void> {
  const seen = new Map<string, number>();
  const kept = new Set<string>();
  for (const c of rt.containers) {
    const n = (seen.get(c.name) ?? 0) + 1;
    seen.set(c.name, n);
    if (n > 2 && c.state === "CONTAINER_EXITED") await ctx.cri.removeContainer(c.id).catch(() => {});
    else kept.add(c.sandboxId);
  }
  for (const s of rt.sandboxes) {
    if (s.id === sandboxId || s.state === "SANDBOX_READY" || kept.has(s.id)) continue;
    await ctx.cri.removePodSandbox(s.id).catch(() => {});
  }
}

/** How soon to retry a container that failed to start: image backoff aware. */
function retryDelay(ctx: NodeContext, st: PodState, c: PodContainer): number {
  const w = st.waiting.get(c.name);
  if (w?.reason === "ErrImagePull") return 1000; // show ImagePullBackOff next
  if (w?.reason === "ImagePullBackOff")
    return Math.max(200, ctx.images.backoff.remaining(`${st.uid}/${c.image}`));
  return 2000;
}

/** Stops every container (preStop hooks, grace period) and the sandboxes. */
export async function killPod(ctx: NodeContext, st: PodState, graceS: number): Promise<void> {
  const rt = await ctx.cache.refreshPod(st.uid);
  const running = rt.containers.filter(
    (c) => c.state === "CONTAINER_RUNNING" || c.state === "CONTAINER_CREATED",
  );
  await Promise.all(
    running.map((c) =>
      killContainer(ctx, st, c, graceS).catch((e) => ctx.log(`stop ${c.name}: ${(e as Error).message}`)),
    ),
  );
  for (const s of rt.sandboxes) {
    try {
      await ctx.cri.stopPodSandbox(s.id);
    } catch (e) {
      if (!(e instanceof CriError && e.isNotFound))
        ctx.log(`StopPodSandbox ${s.id}: ${(e as Error).message}`);
    }
  }
  ctx.probes.prune(st.uid, new Set());
  await ctx.cache.refreshPod(st.uid);
}

/** Removes the pod's containers, sandboxes, cgroup, directories and logs. */
export async function cleanupPod(ctx: NodeContext, uid: string, pod?: Pod): Promise<void> {
  const rt = await ctx.cache.refreshPod(uid);
  for (const c of rt.containers) await ctx.cri.removeContainer(c.id).catch(() => {});
  for (const s of rt.sandboxes) {
    await ctx.cri.stopPodSandbox(s.id).catch(() => {});
    await ctx.cri
      .removePodSandbox(s.id)
      .catch((e) => ctx.log(`RemovePodSandbox ${s.id}: ${(e as Error).message}`));
  }
  ctx.probes.prune(uid, new Set());
  if (pod) {
    removePodCgroupEventually(podCgroupParent(ctx.cgroupRoot, qosClass(pod), uid));
    rmSync(logDirectory(ctx, pod), { recursive: true, force: true });
  } else {
    // an orphan: its QoS class is unknown, so try every parent
    for (const q of ["Guaranteed", "Burstable", "BestEffort"] as const)
      removePodCgroupEventually(podCgroupParent(ctx.cgroupRoot, q, uid));
    const logs = join(ctx.root, "logs");
    for (const d of existsSync(logs) ? readdirSync(logs) : []) {
      if (d.endsWith(`_${uid}`)) rmSync(join(logs, d), { recursive: true, force: true });
    }
  }
  rmSync(podDir(ctx, uid), { recursive: true, force: true });
  ctx.crashBackoff.reset(uid);
  ctx.onPodRemoved?.(uid);
  await ctx.cache.refreshPod(uid);
}

/** 6.7: the pod's pull secrets, looked up once for its trace (a missing one is named). */
async function tracePullSecrets(ctx: NodeContext, st: PodState): Promise<void> {
  const names: string[] = (st.pod.spec?.imagePullSecrets ?? [])
    .map((r) => r?.name)
    .filter((n): n is string => !!n);
  if (names.length === 0) {
    st.trace?.first("6.7", "6.7", "pull secrets", { secrets: [] });
    return;
  }
  const found = (await ctx.images.pullSecrets(st.pod).catch(() => [])).map((s) => s.metadata?.name);
  const missing = names.filter((n) => !found.includes(n));
  st.trace?.first("6.7", "6.7", "pull secrets", { secrets: names, found, missing });
}
