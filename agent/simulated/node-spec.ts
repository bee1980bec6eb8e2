// What a simulated node looks like to the API: the Node object a kubelet registers, its
// status, and its (never contacted) addresses. Its pod CIDR is the one the control plane
// allocates (as for any node); its InternalIP is derived from that CIDR, so no two nodes of
// the cluster share one whichever simulator joined them: 10.1.0.1 up to 10.2.0.0, by block.
import { parseCIDR } from "../../api/network";
import { asApiBody, isObject, type Node, type NodeStatus, type Taint } from "../lib/kube-types";

export interface NodeTemplate {
  zones: string[];
  capacity: Record<string, string>;
  /** Nodes whose capacity differs from `capacity`, by name. */
  capacityByName?: Record<string, Record<string, string>>;
  labels: Record<string, string>;
  taints: Taint[];
  instanceType: string;
}

export const KUBELET_VERSION = "v1.32.0-edgeplane-sim";
export const RUNTIME_VERSION = "simulated://1.0";

/**
 * A simulated node's InternalIP, from its allocated pod CIDR: the CIDR's block number (its
 * network address over its size). Blocks of one cluster CIDR differ in their low 16 bits (the
 * allocator cuts a range into at most 2^16 blocks), so two nodes never get one address.
 */
export function nodeIPFor(podCIDR: string): string | undefined {
  const n = parseCIDR(podCIDR);
  if (!n) return undefined;
  const k = ((n.base >>> (32 - n.bits)) & 0xffff) + 1;
  return `10.${1 + ((k >> 16) & 0x3f)}.${(k >> 8) & 255}.${k & 255}`;
}

export function nodeObject(name: string, index: number, t: NodeTemplate): Node {
  const zone = t.zones.length ? t.zones[index % t.zones.length] : undefined;
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      labels: {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": t.instanceType,
        ...(zone ? { "topology.kubernetes.io/zone": zone } : {}),
        ...t.labels,
      },
      annotations: {
        "node.alpha.kubernetes.io/ttl": "0",
        "kwok.x-k8s.io/node": "fake",
      },
    },
    spec: t.taints.length ? { taints: t.taints } : {},
  };
}

function condition(
  type: string,
  status: string,
  reason: string,
  message: string,
  now: string,
  since: string,
) {
  return { type, status, lastHeartbeatTime: now, lastTransitionTime: since, reason, message };
}

/**
 * A healthy node's status; `since` is when the conditions last changed; `ip` its InternalIP
 * (none until its pod CIDR is allocated).
 */
export function nodeStatus(
  name: string,
  index: number,
  t: NodeTemplate,
  now: string,
  since: string,
  ip?: string,
): NodeStatus {
  const id = `${index.toString(16).padStart(8, "0")}-0000-4000-8000-${hex(name)}`;
  const capacity = t.capacityByName?.[name] ?? t.capacity;
  return {
    capacity: { ...capacity },
    allocatable: { ...capacity },
    conditions: [
      condition(
        "MemoryPressure",
        "False",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
        now,
        since,
      ),
      condition(
        "DiskPressure",
        "False",
        "KubeletHasNoDiskPressure",
        "kubelet has no disk pressure",
        now,
        since,
      ),
      condition(
        "PIDPressure",
        "False",
        "KubeletHasSufficientPID",
        "kubelet has sufficient PID available",
        now,
        since,
      ),
      condition("Ready", "True", "KubeletReady", "kubelet is posting ready status", now, since),
    ],
    addresses: [...(ip ? [{ type: "InternalIP", address: ip }] : []), { type: "Hostname", address: name }],
    daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
    nodeInfo: {
      machineID: id.replaceAll("-", "").slice(0, 32),
      systemUUID: id,
      bootID: id,
      kernelVersion: "6.1.0-edgeplane-sim",
      osImage: "edgeplane simulated node",
      containerRuntimeVersion: RUNTIME_VERSION,
      kubeletVersion: KUBELET_VERSION,
      kubeProxyVersion: "",
      operatingSystem: "linux",
      architecture: "amd64",
    },
  };
}

/** Whether the status the API holds still says what this node reports (Ready and healthy). */
export function statusIsHealthy(status: unknown): boolean {
  const list = isObject(status) ? status.conditions : undefined;
  const conds = (Array.isArray(list) ? list : []).map(asApiBody);
  const want: Record<string, string> = {
    Ready: "True",
    MemoryPressure: "False",
    DiskPressure: "False",
    PIDPressure: "False",
  };
  return Object.entries(want).every(([type, s]) => conds.some((c) => c?.type === type && c.status === s));
}

function hex(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return `${h.toString(16).padStart(8, "0")}0000`;
}

/** metav1.Time and metav1.MicroTime, as the fleet writes them. */
export { microTime, rfc3339 } from "../../api/time";
