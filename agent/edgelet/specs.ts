// CRI configs from a pod: the PodSandboxConfig and each ContainerConfig, with
// the labels and annotations upstream's kubelet sets.
import { createHash } from "node:crypto";
import type {
  ContainerConfig,
  DNSConfig,
  LinuxContainerSecurityContext,
  Mount,
  NamespaceOption,
  PodSandboxConfig,
  PortMapping,
  SecurityProfile,
} from "../cri/types";
import type { Pod, PodContainer, PodSpec } from "../lib/kube-types";
import { linuxResources, type QOSClass } from "./qos";
import {
  CONTAINER_NAME_LABEL,
  HASH_ANNOTATION,
  NODE_LABEL,
  POD_NAME_LABEL,
  POD_NAMESPACE_LABEL,
  POD_UID_LABEL,
  RESTART_COUNT_ANNOTATION,
} from "./runtime-cache";

export interface SandboxInputs {
  pod: Pod;
  nodeName: string;
  attempt: number;
  logDirectory: string;
  cgroupParent: string;
  dns: DNSConfig;
  hostHostname: string;
}

function podLabels(pod: Pod, nodeName: string): Record<string, string> {
  return {
    [POD_NAME_LABEL]: pod.metadata.name,
    [POD_NAMESPACE_LABEL]: pod.metadata.namespace,
    [POD_UID_LABEL]: pod.metadata.uid,
    [NODE_LABEL]: nodeName,
  };
}

function seccomp(pod: Pod, c?: PodContainer): SecurityProfile {
  const p = c?.securityContext?.seccompProfile ?? pod.spec?.securityContext?.seccompProfile;
  if (p?.type === "Unconfined") return { profile_type: "Unconfined" };
  if (p?.type === "Localhost") return { profile_type: "Localhost", localhost_ref: p.localhostProfile };
  return { profile_type: "RuntimeDefault" };
}

/** The pod's hostname: spec.hostname or the pod name, at most 63 characters. */
export function podHostname(pod: Pod): string {
  const h: string = pod.spec?.hostname || pod.metadata.name;
  return h.slice(0, 63).replace(/[-.]+$/, "");
}

export function portMappings(pod: Pod): PortMapping[] {
  const out: PortMapping[] = [];
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports ?? []) {
      if (!p.hostPort) continue;
      out.push({
        protocol: p.protocol ?? "TCP",
        container_port: p.containerPort,
        host_port: p.hostPort,
        host_ip: p.hostIP ?? "",
      });
    }
  }
  return out;
}

export function sandboxConfig(i: SandboxInputs): PodSandboxConfig {
  const { pod } = i;
  const spec: Partial<PodSpec> = pod.spec ?? {};
  const psc = spec.securityContext ?? {};
  const sysctls: Record<string, string> = {};
  for (const s of psc.sysctls ?? []) sysctls[s.name] = s.value;
  return {
    metadata: {
      name: pod.metadata.name,
      uid: pod.metadata.uid,
      namespace: pod.metadata.namespace,
      attempt: i.attempt,
    },
    hostname: spec.hostNetwork ? i.hostHostname : podHostname(pod),
    log_directory: i.logDirectory,
    dns_config: i.dns,
    port_mappings: portMappings(pod),
    labels: { ...(pod.metadata.labels ?? {}), ...podLabels(pod, i.nodeName) },
    annotations: {
      ...(pod.metadata.annotations ?? {}),
      "kubernetes.io/config.source": "api",
      "kubernetes.io/config.seen": new Date().toISOString(),
    },
    linux: {
      cgroup_parent: i.cgroupParent,
      security_context: {
        namespace_options: {
          network: spec.hostNetwork ? "NODE" : "POD",
          pid: spec.hostPID ? "NODE" : spec.shareProcessNamespace ? "POD" : "CONTAINER",
          ipc: spec.hostIPC ? "NODE" : "POD",
        },
        seccomp: seccomp(pod),
        ...(psc.runAsUser !== undefined ? { run_as_user: { value: psc.runAsUser } } : {}),
        ...(psc.runAsGroup !== undefined ? { run_as_group: { value: psc.runAsGroup } } : {}),
        ...(psc.supplementalGroups?.length || psc.fsGroup !== undefined
          ? {
              supplemental_groups: [
                ...(psc.supplementalGroups ?? []),
                ...(psc.fsGroup !== undefined ? [psc.fsGroup] : []),
              ],
            }
          : {}),
      },
      sysctls,
    },
  };
}

/** Sorted-key JSON, so a hash does not depend on how the server ordered fields. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}

/**
 * A hash of the fields that define what runs (the io.kubernetes.container.hash
 * annotation): a running container whose hash differs is restarted.
 */
const DEFINING_FIELDS = [
  "name",
  "image",
  "command",
  "args",
  "workingDir",
  "env",
  "envFrom",
  "volumeMounts",
  "ports",
  "securityContext",
  "tty",
  "stdin",
] as const;

export function containerHash(c: PodContainer): string {
  const defining = Object.fromEntries(DEFINING_FIELDS.map((k) => [k, c[k]]));
  return createHash("sha256").update(canonical(defining)).digest("hex").slice(0, 8);
}

export interface ContainerInputs {
  pod: Pod;
  container: PodContainer;
  nodeName: string;
  restartCount: number;
  command?: string[];
  args?: string[];
  env: { key: string; value: string }[];
  mounts: Mount[];
  imageRef: string;
  qos: QOSClass;
  memoryCapacity: number;
  /**
   * An ephemeral container's targetContainerName, as the CRI id of that container: it joins
   * the target's process namespace (kubectl debug --target) unless the pod shares one.
   */
  targetId?: string;
}

function namespaces(spec: Partial<PodSpec>, targetId?: string): NamespaceOption {
  const pid = spec.hostPID ? "NODE" : spec.shareProcessNamespace ? "POD" : "CONTAINER";
  return {
    network: spec.hostNetwork ? "NODE" : "POD",
    // a target's namespace replaces only a container's own: a pod-wide or host one stays
    ...(pid === "CONTAINER" && targetId ? { pid: "TARGET", target_id: targetId } : { pid }),
    ipc: spec.hostIPC ? "NODE" : "POD",
  };
}

function securityContext(pod: Pod, c: PodContainer, targetId?: string): LinuxContainerSecurityContext {
  const psc = pod.spec?.securityContext ?? {};
  const sc = c.securityContext ?? {};
  const spec: Partial<PodSpec> = pod.spec ?? {};
  const runAsUser = sc.runAsUser ?? psc.runAsUser;
  const runAsGroup = sc.runAsGroup ?? psc.runAsGroup;
  return {
    privileged: !!sc.privileged,
    ...(sc.capabilities
      ? {
          capabilities: {
            add_capabilities: sc.capabilities.add ?? [],
            drop_capabilities: sc.capabilities.drop ?? [],
          },
        }
      : {}),
    namespace_options: namespaces(spec, targetId),
    ...(runAsUser !== undefined ? { run_as_user: { value: runAsUser } } : {}),
    ...(runAsGroup !== undefined ? { run_as_group: { value: runAsGroup } } : {}),
    readonly_rootfs: !!sc.readOnlyRootFilesystem,
    no_new_privs: sc.allowPrivilegeEscalation === false,
    seccomp: seccomp(pod, c),
    ...(psc.supplementalGroups?.length ? { supplemental_groups: psc.supplementalGroups } : {}),
  };
}

export function containerConfig(i: ContainerInputs): ContainerConfig {
  const { pod, container: c } = i;
  const annotations: Record<string, string> = {
    [HASH_ANNOTATION]: containerHash(c),
    [RESTART_COUNT_ANNOTATION]: String(i.restartCount),
    "io.kubernetes.container.terminationMessagePath": c.terminationMessagePath ?? "/dev/termination-log",
    "io.kubernetes.container.terminationMessagePolicy": c.terminationMessagePolicy ?? "File",
    "io.kubernetes.pod.terminationGracePeriod": String(pod.spec?.terminationGracePeriodSeconds ?? 30),
  };
  if (c.ports?.length) annotations["io.kubernetes.container.ports"] = JSON.stringify(c.ports);
  if (c.lifecycle?.preStop)
    annotations["io.kubernetes.container.preStopHandler"] = JSON.stringify(c.lifecycle.preStop);
  return {
    metadata: { name: c.name, attempt: i.restartCount },
    image: { image: i.imageRef, user_specified_image: c.image },
    command: i.command,
    args: i.args,
    working_dir: c.workingDir ?? "",
    envs: i.env,
    mounts: i.mounts,
    labels: {
      [POD_NAME_LABEL]: pod.metadata.name,
      [POD_NAMESPACE_LABEL]: pod.metadata.namespace,
      [POD_UID_LABEL]: pod.metadata.uid,
      [CONTAINER_NAME_LABEL]: c.name,
      [NODE_LABEL]: i.nodeName,
    },
    annotations,
    log_path: `${c.name}/${i.restartCount}.log`,
    stdin: !!c.stdin,
    stdin_once: !!c.stdinOnce,
    tty: !!c.tty,
    linux: {
      resources: linuxResources(c, i.qos, i.memoryCapacity),
      security_context: securityContext(pod, c, i.targetId),
    },
  };
}

/** The cluster DNS a node gives pods: the kube-dns Service's address and the cluster domain. */
export interface ClusterDnsSettings {
  server: string;
  domain: string;
}

/**
 * DNS for the sandbox, as the kubelet's getPodDNS: ClusterFirst (the default) gives the cluster
 * DNS server, the search path <ns>.svc.<domain> svc.<domain> <domain> before the host's, and
 * ndots:5; a hostNetwork pod gets that only with ClusterFirstWithHostNet, else the host's
 * resolv.conf (Default), as when the node has no cluster DNS; None starts empty. The pod's
 * dnsConfig is then merged in (nameservers and searches appended, options replaced by name).
 */
export function dnsConfig(pod: Pod, hostResolv: string, cluster?: ClusterDnsSettings): DNSConfig {
  let servers: string[] = [];
  let searches: string[] = [];
  let options: string[] = [];
  const policy = pod.spec?.dnsPolicy ?? "ClusterFirst";
  const hostNet = !!pod.spec?.hostNetwork;
  let mode: "cluster" | "host" | "none" =
    policy === "None"
      ? "none"
      : policy === "Default"
        ? "host"
        : policy === "ClusterFirstWithHostNet" || (policy === "ClusterFirst" && !hostNet)
          ? "cluster"
          : "host";
  if (mode === "cluster" && !cluster) mode = "host";
  if (mode !== "none") {
    for (const line of hostResolv.split("\n")) {
      const [k, ...rest] = line.trim().split(/\s+/);
      // a loopback resolver of the host (systemd-resolved) is out of a pod's reach
      if (k === "nameserver" && rest[0] && !rest[0].startsWith("127.")) servers.push(rest[0]);
      else if (k === "search") searches = [...rest];
      else if (k === "options") options.push(...rest);
    }
  }
  if (mode === "cluster" && cluster) {
    const ns = pod.metadata?.namespace ?? "default";
    servers = [cluster.server];
    searches = [`${ns}.svc.${cluster.domain}`, `svc.${cluster.domain}`, cluster.domain, ...searches];
    options = ["ndots:5"];
  }
  const dc = pod.spec?.dnsConfig ?? {};
  servers.push(...(dc.nameservers ?? []));
  searches.push(...(dc.searches ?? []));
  const byName = new Map<string, string>();
  for (const o of options) byName.set(o.split(":")[0]!, o);
  for (const o of dc.options ?? []) {
    if (o.name === undefined) continue; // validation refuses an option without a name
    byName.set(o.name, o.value !== undefined && o.value !== null ? `${o.name}:${o.value}` : o.name);
  }
  return {
    servers: [...new Set(servers)].slice(0, 3),
    searches: [...new Set(searches)].slice(0, 32),
    options: [...byName.values()],
  };
}
