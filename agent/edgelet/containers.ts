// Starting and stopping one container: image, environment, mounts, create,
// start, postStart hook; preStop hook and stop with the grace period.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CriError } from "../cri/client";
import type { Mount } from "../cri/types";
import type { ConfigMap, Pod, PodContainer, Secret } from "../lib/kube-types";
import { enc } from "./api";
import { mark, type NodeContext, type PodState } from "./context";
import { ConfigError, expandCommand, resolveEnv } from "./env";
import { runHandler } from "./handlers";
import { qosClass } from "./qos";
import type { ContainerInfo } from "./runtime-cache";
import { containerConfig, podHostname } from "./specs";
import { containerMounts, readOnlyVolumes, VolumeError } from "./volumes";

/**
 * How long a postStart hook may run. Upstream's kubelet sets it no limit (the container's
 * start completes when the hook does, and deleting the pod cancels it); the pod's termination
 * grace period bounds preStop only. This agent cannot cancel a hook, so a hung one is cut off
 * after this long rather than holding its pod's worker for good.
 */
const POST_START_TIMEOUT_S = 120;

export function podDir(ctx: NodeContext, uid: string): string {
  return join(ctx.root, "pods", uid);
}

export function fieldPath(pod: Pod, name: string): string {
  const has = (list: "initContainers" | "ephemeralContainers") =>
    (pod.spec?.[list] ?? []).some((c) => c.name === name);
  if (has("initContainers")) return `spec.initContainers{${name}}`;
  if (has("ephemeralContainers")) return `spec.ephemeralContainers{${name}}`;
  return `spec.containers{${name}}`;
}

async function lookup<T extends ConfigMap | Secret>(
  ctx: NodeContext,
  kind: "configmaps" | "secrets",
  ns: string,
  name: string,
): Promise<T | undefined> {
  const r = await ctx.api.get(`/api/v1/namespaces/${enc(ns)}/${kind}/${enc(name)}`);
  if (r.status === 200) return r.json as T | undefined; // a GET of one object answers with it
  if (r.status === 404) return undefined;
  throw new Error(`GET ${kind} ${ns}/${name}: ${r.status}`);
}

function etcHosts(pod: Pod, podIP: string | undefined): string {
  const lines = [
    "# Kubernetes-managed hosts file.",
    "127.0.0.1\tlocalhost",
    "::1\tlocalhost ip6-localhost ip6-loopback",
    "fe00::0\tip6-localnet",
    "fe00::0\tip6-mcastprefix",
    "fe00::1\tip6-allnodes",
    "fe00::2\tip6-allrouters",
  ];
  if (podIP)
    lines.push(
      `${podIP}\t${podHostname(pod)}${pod.spec?.subdomain ? `.${pod.spec.subdomain}.${pod.metadata.namespace}.svc.cluster.local\t${podHostname(pod)}` : ""}`,
    );
  for (const h of pod.spec?.hostAliases ?? []) lines.push(`${h.ip}\t${(h.hostnames ?? []).join("\t")}`);
  return `${lines.join("\n")}\n`;
}

/** Creates and starts a container; on a failure notes the waiting reason and returns false. */
export async function startContainer(
  ctx: NodeContext,
  st: PodState,
  c: PodContainer,
  restartCount: number,
  _isInit: boolean,
  targetId?: string,
): Promise<boolean> {
  const pod = st.pod;
  const fp = fieldPath(pod, c.name);
  const early = st.prepulls?.get(c.name);
  st.prepulls?.delete(c.name);
  const pulled = (await early) ?? (await ctx.images.ensure(pod, c, fp));
  mark(st, `image ${c.name}`);
  if (!pulled.ok) {
    st.waiting.set(c.name, { reason: pulled.reason, message: pulled.message });
    st.trace?.failed("9.2", `image pull ${c.name}`, `${pulled.reason}: ${pulled.message}`, {
      image: c.image,
    });
    return false;
  }
  st.trace?.first(`9.2 ${c.name}`, "9.2", `image pull ${c.name}`, {
    image: c.image,
    imageRef: pulled.imageRef,
    cached: pulled.cached,
    pullMs: pulled.pullMs,
    bytes: pulled.bytes,
    startedBeforeSandbox: !!early,
  });
  let env: { key: string; value: string }[];
  let mounts: Mount[];
  try {
    env = await resolveEnv(
      {
        pod,
        container: c,
        podIP: st.podIP,
        hostIP: ctx.hostIP,
        nodeName: ctx.nodeName,
        allocatable: ctx.allocatable,
        serviceEnv: await ctx.network?.serviceEnv(
          pod.metadata.namespace,
          pod.spec?.enableServiceLinks !== false,
        ),
      },
      {
        configMap: (ns, n) => lookup<ConfigMap>(ctx, "configmaps", ns, n),
        secret: (ns, n) => lookup<Secret>(ctx, "secrets", ns, n),
      },
    );
    mounts = containerMounts(c, st.volumes ?? new Map(), env, readOnlyVolumes(pod));
  } catch (e) {
    if (e instanceof ConfigError || e instanceof VolumeError) {
      st.waiting.set(c.name, { reason: "CreateContainerConfigError", message: e.message });
      ctx.events(pod, "Warning", "Failed", `Error: ${e.message}`, fp);
      return false;
    }
    throw e;
  }
  const dir = podDir(ctx, st.uid);
  if (!pod.spec?.hostNetwork && !mounts.some((m) => m.container_path === "/etc/hosts")) {
    const hosts = join(dir, "etc-hosts");
    writeFileSync(hosts, etcHosts(pod, st.podIP));
    mounts.push({ container_path: "/etc/hosts", host_path: hosts, readonly: false });
  }
  const tmp = c.terminationMessagePath ?? "/dev/termination-log";
  if (tmp) {
    const cdir = join(dir, "containers", c.name);
    mkdirSync(cdir, { recursive: true });
    const file = join(cdir, Math.random().toString(16).slice(2, 10));
    if (!existsSync(file)) writeFileSync(file, "", { mode: 0o666 });
    mounts.push({ container_path: tmp, host_path: file, readonly: false });
  }
  const config = containerConfig({
    pod,
    container: c,
    nodeName: ctx.nodeName,
    restartCount,
    command: expandCommand(c.command, env),
    args: expandCommand(c.args, env),
    env,
    mounts,
    imageRef: pulled.imageRef.startsWith("sha256:") ? pulled.imageRef : (c.image ?? ""),
    qos: qosClass(pod),
    memoryCapacity: ctx.memoryCapacity,
    targetId,
  });
  let id: string;
  try {
    id = await ctx.cri.createContainer(
      st.sandboxId as string,
      config,
      st.sandboxConfig ?? {
        metadata: { name: pod.metadata.name, uid: st.uid, namespace: pod.metadata.namespace },
      },
    );
  } catch (e) {
    const msg = e instanceof CriError ? e.details : (e as Error).message;
    st.waiting.set(c.name, { reason: "CreateContainerError", message: msg });
    st.trace?.failed("9.3", `create ${c.name}`, `CreateContainerError: ${msg}`);
    ctx.events(pod, "Warning", "Failed", `Error: ${msg}`, fp);
    return false;
  }
  mark(st, `created ${c.name}`);
  // a restart is traced as one span of its own, by the caller (pod-sync.ts restartContainer)
  const traced = restartCount === 0 ? st.trace : undefined;
  traced?.stage("9.3", `create ${c.name}`, { containerId: id.slice(0, 13), restartCount });
  ctx.events(pod, "Normal", "Created", `Created container ${c.name}`, fp);
  if (ctx.onContainerCreated) {
    await ctx.onContainerCreated(pod, c, id);
    traced?.stage("9.4", `cpu manager ${c.name}`);
  }
  try {
    await ctx.cri.startContainer(id);
  } catch (e) {
    const msg = e instanceof CriError ? e.details : (e as Error).message;
    st.waiting.set(c.name, { reason: "RunContainerError", message: msg });
    st.trace?.failed("9.5", `start ${c.name}`, `RunContainerError: ${msg}`);
    ctx.events(pod, "Warning", "Failed", `Error: ${msg}`, fp);
    await ctx.cri.removeContainer(id).catch(() => {});
    return false;
  }
  st.waiting.delete(c.name);
  mark(st, `started ${c.name}`);
  traced?.stage("9.5", `start ${c.name}`);
  ctx.events(pod, "Normal", "Started", `Started container ${c.name}`, fp);
  if (c.lifecycle?.postStart) {
    const grace = pod.spec?.terminationGracePeriodSeconds ?? 30;
    const r = await runHandler(
      c.lifecycle.postStart,
      { cri: ctx.cri, containerId: id, podIP: st.podIP, container: c },
      POST_START_TIMEOUT_S,
    );
    if (!r.ok) {
      const msg = `PostStartHook failed: ${r.output}`.trim();
      // as upstream, the event leaves out the handler's output (it may hold secrets); the status keeps it
      ctx.events(pod, "Warning", "FailedPostStartHook", "PostStartHook failed", fp);
      ctx.events(pod, "Normal", "Killing", "FailedPostStartHook", fp);
      await ctx.cri.stopContainer(id, grace).catch(() => {});
      st.waiting.set(c.name, { reason: "PostStartHookError", message: msg });
      st.trace?.failed("9.5", `postStart ${c.name}`, `PostStartHookError: ${msg}`);
      return false;
    }
    traced?.stage("9.5", `postStart ${c.name}`);
  }
  return true;
}

/** Runs the preStop hook (if any) then stops the container within `graceS` seconds. */
export async function killContainer(
  ctx: NodeContext,
  st: PodState,
  info: ContainerInfo,
  graceS: number,
  message?: string,
): Promise<void> {
  const pod = st.pod;
  const spec = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find(
    (x) => x.name === info.name,
  );
  const fp = fieldPath(pod, info.name);
  ctx.probes.remove(info.id);
  if (info.state !== "CONTAINER_RUNNING" && info.state !== "CONTAINER_CREATED") return;
  ctx.events(pod, "Normal", "Killing", message ?? `Stopping container ${info.name}`, fp);
  const started = Date.now();
  if (spec?.lifecycle?.preStop && info.state === "CONTAINER_RUNNING" && graceS > 0) {
    const r = await runHandler(
      spec.lifecycle.preStop,
      { cri: ctx.cri, containerId: info.id, podIP: st.podIP, container: spec },
      graceS,
    );
    if (!r.ok) ctx.events(pod, "Warning", "FailedPreStopHook", `PreStopHook failed: ${r.output}`, fp);
  }
  const left = Math.max(graceS > 0 ? 2 : 0, graceS - Math.floor((Date.now() - started) / 1000));
  try {
    await ctx.cri.stopContainer(info.id, left);
  } catch (e) {
    if (!(e instanceof CriError && e.isNotFound)) throw e;
  }
}
