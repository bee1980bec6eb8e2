// The Node object: registration, podCIDR, and the periodic status report
// (capacity, conditions, addresses, nodeInfo, images) as the kubelet posts it.
import { readFileSync } from "node:fs";
import os from "node:os";
import { rfc3339 } from "../../api/time";
import type { Node, NodeCondition, NodeStatus } from "../lib/kube-types";
import { type Api, enc, errorText } from "./api";
import { createMergePatch } from "./merge-patch";

export const KUBELET_VERSION = "v1.32.0-edgeplane";
export const MAX_PODS = 110;

export interface MachineInfo {
  cpus: number;
  memoryBytes: number;
  machineID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
  architecture: string;
  hostname: string;
}

function readTrim(path: string, fallback = ""): string {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return fallback;
  }
}

export function machineInfo(): MachineInfo {
  const release = readTrim("/etc/os-release");
  const pretty = /^PRETTY_NAME="?([^"\n]*)"?/m.exec(release)?.[1] ?? "Linux";
  const arch = os.arch() === "x64" ? "amd64" : os.arch();
  return {
    cpus: os.cpus().length || 1,
    memoryBytes: os.totalmem(),
    machineID: readTrim("/etc/machine-id"),
    bootID: readTrim("/proc/sys/kernel/random/boot_id"),
    kernelVersion: os.release(),
    osImage: pretty,
    architecture: arch,
    hostname: os.hostname(),
  };
}

/** The host's first non-loopback IPv4 outside pod bridges, else 127.0.0.1. */
export function nodeIP(explicit?: string): string {
  if (explicit) return explicit;
  for (const [name, addrs] of Object.entries(os.networkInterfaces())) {
    if (/^(edgeplane|cni|veth|docker|br-|flannel|cali)/.test(name)) continue;
    for (const a of addrs ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  }
  return "127.0.0.1";
}

export interface NodeFacts {
  name: string;
  ip: string;
  machine: MachineInfo;
  runtimeVersion: string;
  labels: Record<string, string>;
}

export function capacity(m: MachineInfo): Record<string, string> {
  return {
    cpu: String(m.cpus),
    memory: `${Math.floor(m.memoryBytes / 1024)}Ki`,
    pods: String(MAX_PODS),
    "ephemeral-storage": "10Gi",
    "hugepages-2Mi": "0",
  };
}

export function nodeLabels(f: NodeFacts): Record<string, string> {
  return {
    "beta.kubernetes.io/arch": f.machine.architecture,
    "beta.kubernetes.io/os": "linux",
    "kubernetes.io/arch": f.machine.architecture,
    "kubernetes.io/hostname": f.name,
    "kubernetes.io/os": "linux",
    ...f.labels,
  };
}

export function newNode(f: NodeFacts, podCIDR?: string): Node {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: f.name,
      labels: nodeLabels(f),
      annotations: {
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
      },
    },
    spec: podCIDR ? { podCIDR, podCIDRs: [podCIDR] } : {},
  };
}

export interface Health {
  runtimeReady: boolean;
  networkReady: boolean;
  message?: string;
}

/** A node condition as the agent reports it: every field set. */
export type Cond = {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastHeartbeatTime: string;
  lastTransitionTime: string;
};

/** The node's status; keeps lastTransitionTime from `previous` conditions whose status is unchanged. */
export function nodeStatus(
  f: NodeFacts,
  health: Health,
  images: { names: string[]; sizeBytes: number }[],
  previous: NodeCondition[] = [],
  now = new Date(),
  /** conditions other parts of the node report (e.g. the network proxier's) */
  extra: { type: string; status: string; reason: string; message: string }[] = [],
): NodeStatus & { conditions: Cond[] } {
  const ts = rfc3339(now.getTime());
  const ready = health.runtimeReady && health.networkReady;
  const cond = (type: string, status: string, reason: string, message: string): Cond => {
    const prev = previous.find((c) => c.type === type);
    return {
      type,
      status,
      reason,
      message,
      lastHeartbeatTime: ts,
      lastTransitionTime: (prev && prev.status === status ? prev.lastTransitionTime : undefined) ?? ts,
    };
  };
  const cap = capacity(f.machine);
  return {
    capacity: cap,
    allocatable: { ...cap },
    conditions: [
      cond(
        "MemoryPressure",
        "False",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
      ),
      cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
      cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
      ready
        ? cond("Ready", "True", "KubeletReady", "kubelet is posting ready status")
        : cond("Ready", "False", "KubeletNotReady", health.message ?? "container runtime is not ready"),
      ...extra.map((c) => cond(c.type, c.status, c.reason, c.message)),
    ],
    addresses: [
      { type: "InternalIP", address: f.ip },
      { type: "Hostname", address: f.name },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
    nodeInfo: {
      machineID: f.machine.machineID,
      systemUUID: f.machine.machineID,
      bootID: f.machine.bootID,
      kernelVersion: f.machine.kernelVersion,
      osImage: f.machine.osImage,
      containerRuntimeVersion: f.runtimeVersion,
      kubeletVersion: KUBELET_VERSION,
      kubeProxyVersion: "",
      operatingSystem: "linux",
      architecture: f.machine.architecture,
    },
    images: images.slice(0, 50),
  };
}

/**
 * The node's CSINode, as a kubelet makes it at start: named after the node, owned by it, with
 * no drivers (no CSI driver runs here). Left as it is when it exists.
 */
export async function ensureCSINode(api: Api, node: Node): Promise<void> {
  const name = node.metadata?.name ?? "";
  const path = `/apis/storage.k8s.io/v1/csinodes/${enc(name)}`;
  const got = await api.get(path);
  if (got.status === 200) return;
  if (got.status !== 404) throw new Error(`get csinode: ${errorText(got)}`);
  const made = await api.request("POST", "/apis/storage.k8s.io/v1/csinodes", {
    apiVersion: "storage.k8s.io/v1",
    kind: "CSINode",
    metadata: {
      name,
      ownerReferences: [{ apiVersion: "v1", kind: "Node", name, uid: node.metadata?.uid }],
    },
    spec: { drivers: [] },
  });
  if (made.status !== 201 && made.status !== 409) throw new Error(`create csinode: ${errorText(made)}`);
}

/**
 * Creates the Node (with `podCIDR` when the agent was given one), or adopts an existing one
 * (its labels reconciled). Returns the node object. Without a podCIDR of its own the node then
 * waits for the one the control plane allocates (waitForPodCIDR).
 */
export async function registerNode(api: Api, f: NodeFacts, podCIDR?: string): Promise<Node> {
  const created = await api.request("POST", "/api/v1/nodes", newNode(f, podCIDR));
  // each answer below is the Node itself (a create, GET or patch of it)
  let node: Node;
  if (created.status === 201 || created.status === 200) node = created.json as Node;
  else if (created.status === 409) {
    const got = await api.get(`/api/v1/nodes/${enc(f.name)}`);
    if (got.status !== 200) throw new Error(`get node ${f.name}: ${errorText(got)}`);
    node = got.json as Node;
    const labels = node.metadata?.labels ?? {};
    const want = { metadata: { labels: { ...labels, ...nodeLabels(f) } } };
    const patch = createMergePatch({ metadata: { labels } }, want);
    if (patch) {
      const r = await api.mergePatch(`/api/v1/nodes/${enc(f.name)}`, patch);
      if (r.status === 200) node = r.json as Node;
    }
    if (podCIDR && !node.spec?.podCIDR) {
      const r = await api.mergePatch(`/api/v1/nodes/${enc(f.name)}`, {
        spec: { podCIDR, podCIDRs: [podCIDR] },
      });
      if (r.status !== 200) throw new Error(`node ${f.name}: setting podCIDR ${podCIDR}: ${errorText(r)}`);
      node = r.json as Node;
    }
  } else throw new Error(`register node ${f.name}: ${errorText(created)}`);
  return node;
}

/** Waits until the Node has a podCIDR (the control plane's node IPAM controller gives it), as kubelet does. */
export async function waitForPodCIDR(
  api: Api,
  name: string,
  log: (m: string) => void,
  signal?: AbortSignal,
): Promise<{ podCIDR: string; node: Node }> {
  const began = Date.now();
  let told = 0;
  for (;;) {
    const r = await api.get(`/api/v1/nodes/${enc(name)}`).catch(() => undefined);
    const node = r?.status === 200 ? (r.json as Node | undefined) : undefined;
    const cidr = node?.spec?.podCIDR;
    if (node && cidr) return { podCIDR: cidr, node };
    if (signal?.aborted) throw new Error("stopped while waiting for a podCIDR");
    if (Date.now() - began > 5000 * (told + 1)) {
      told++;
      log(`node ${name} has no podCIDR yet (the control plane allocates it; its cluster CIDR may be full)`);
    }
    await new Promise((res) => setTimeout(res, 200));
  }
}
