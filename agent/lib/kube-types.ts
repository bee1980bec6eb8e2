// The Kubernetes objects the node agent reads from and writes to the apiserver, as
// kubernetes-models types shaped to what really travels: objects in a list carry no
// apiVersion/kind, a stored object always has name, namespace and uid, and the status the
// agent writes says `null` for a time not yet known (as Go's zero time marshals).
// Replies are `ApiBody` until narrowed: `isPod` checks what the pod source is given.
import type { ILease } from "kubernetes-models/coordination.k8s.io/v1/Lease";
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap";
import type { IContainer } from "kubernetes-models/v1/Container";
import type { IContainerPort } from "kubernetes-models/v1/ContainerPort";
import type { IContainerStateTerminated } from "kubernetes-models/v1/ContainerStateTerminated";
import type { IContainerStateWaiting } from "kubernetes-models/v1/ContainerStateWaiting";
import type { IContainerStatus } from "kubernetes-models/v1/ContainerStatus";
import type { IEphemeralContainer } from "kubernetes-models/v1/EphemeralContainer";
import type { IHTTPGetAction } from "kubernetes-models/v1/HTTPGetAction";
import type { ILifecycleHandler } from "kubernetes-models/v1/LifecycleHandler";
import type { INode } from "kubernetes-models/v1/Node";
import type { INodeCondition } from "kubernetes-models/v1/NodeCondition";
import type { INodeStatus } from "kubernetes-models/v1/NodeStatus";
import type { IPod } from "kubernetes-models/v1/Pod";
import type { IPodCondition } from "kubernetes-models/v1/PodCondition";
import type { IPodSpec } from "kubernetes-models/v1/PodSpec";
import type { IPodStatus } from "kubernetes-models/v1/PodStatus";
import type { IProbe } from "kubernetes-models/v1/Probe";
import type { ISecret } from "kubernetes-models/v1/Secret";
import type { ITCPSocketAction } from "kubernetes-models/v1/TCPSocketAction";
import type { IVolume } from "kubernetes-models/v1/Volume";

export type ObjectMeta = NonNullable<IPod["metadata"]>;

/** Metadata of an object the apiserver has stored: these three are always set. */
export type StoredMeta = ObjectMeta & { name: string; namespace: string; uid: string };

export type PodSpec = IPodSpec;
export type Container = IContainer;
export type EphemeralContainer = IEphemeralContainer;
/** Any container of a pod: init, app or ephemeral (kubectl debug). */
export type PodContainer = IContainer | IEphemeralContainer;
export type ContainerPort = IContainerPort;
export type Volume = IVolume;
export type Probe = IProbe;
/** A probe's or lifecycle hook's action: exec, httpGet, tcpSocket, sleep (grpc on probes). */
export type Handler = ILifecycleHandler & Pick<IProbe, "grpc">;
export type HTTPGetAction = IHTTPGetAction;
export type TCPSocketAction = ITCPSocketAction;
/** Resource amounts by name ("cpu", "memory", ...), as quantities. */
export type ResourceList = Record<string, string | number>;

// ---- the status the agent writes ---------------------------------------------

/** A time the agent does not know yet is sent as null. */
type WireTime = string | null;

export interface ContainerStateRunning {
  startedAt?: WireTime;
}

export interface ContainerStateTerminated
  extends Omit<IContainerStateTerminated, "startedAt" | "finishedAt"> {
  startedAt?: WireTime;
  finishedAt?: WireTime;
}

export type ContainerStateWaiting = IContainerStateWaiting;

export interface ContainerState {
  waiting?: ContainerStateWaiting;
  running?: ContainerStateRunning;
  terminated?: ContainerStateTerminated;
}

export interface ContainerStatus extends Omit<IContainerStatus, "state" | "lastState"> {
  state?: ContainerState;
  lastState?: ContainerState;
}

export interface PodCondition extends Omit<IPodCondition, "lastProbeTime"> {
  lastProbeTime?: WireTime;
}

export interface PodStatus
  extends Omit<
    IPodStatus,
    "conditions" | "containerStatuses" | "initContainerStatuses" | "ephemeralContainerStatuses"
  > {
  conditions?: PodCondition[];
  containerStatuses?: ContainerStatus[];
  initContainerStatuses?: ContainerStatus[];
  ephemeralContainerStatuses?: ContainerStatus[];
}

/** A pod as the apiserver gives it to the node (from a list, a watch or a GET). */
export interface Pod {
  apiVersion?: string;
  kind?: string;
  metadata: StoredMeta;
  spec?: PodSpec;
  status?: PodStatus;
}

/** A JSON object (not null, not an array). */
export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Whether a decoded body is a stored pod: an object whose metadata names it and carries its uid. */
export function isPod(v: unknown): v is Pod {
  if (!isObject(v) || !isObject(v.metadata)) return false;
  const m = v.metadata;
  return (
    typeof m.uid === "string" &&
    m.uid !== "" &&
    typeof m.name === "string" &&
    typeof m.namespace === "string" &&
    (v.spec === undefined || isObject(v.spec)) &&
    (v.status === undefined || isObject(v.status))
  );
}

// ---- other kinds -------------------------------------------------------------

type Listed<T extends { apiVersion: string; kind: string }> = Omit<T, "apiVersion" | "kind"> & {
  apiVersion?: string;
  kind?: string;
};

export type ConfigMap = Listed<IConfigMap>;
export type Secret = Listed<ISecret>;
export type Node = Listed<INode>;
export type NodeStatus = INodeStatus;
export type NodeCondition = INodeCondition;
export type Taint = NonNullable<NonNullable<INode["spec"]>["taints"]>[number];
export type Lease = Listed<ILease>;

// ---- replies -----------------------------------------------------------------

/**
 * A decoded JSON reply of the apiserver: some object, or a metav1.Status. Only what every
 * object has is named; the rest is unknown until the caller narrows it.
 */
export interface ApiBody {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
  /** metav1.Status */
  code?: number;
  reason?: string;
  message?: string;
  [field: string]: unknown;
}

/** A decoded body as ApiBody when it is a JSON object; undefined for anything else. */
export function asApiBody(v: unknown): ApiBody | undefined {
  return isObject(v) ? (v as ApiBody) : undefined;
}

/** A ConfigMap's `data` from a decoded body: its string entries; undefined when it is no object. */
export function stringData(v: unknown): Record<string, string> | undefined {
  if (!isObject(v)) return undefined;
  const out: Record<string, string> = {};
  for (const [k, s] of Object.entries(v)) if (typeof s === "string") out[k] = s;
  return out;
}

/** The items of a list reply, or undefined when the body is no list. */
export function itemsOf(body: ApiBody | undefined): unknown[] | undefined {
  return Array.isArray(body?.items) ? body.items : undefined;
}

// ---- parts of a pod spec ----------------------------------------------------

export type ConfigMapVolumeSource = NonNullable<IVolume["configMap"]>;
export type SecretVolumeSource = NonNullable<IVolume["secret"]>;
export type DownwardAPIVolumeSource = NonNullable<IVolume["downwardAPI"]>;
export type VolumeProjection = NonNullable<NonNullable<IVolume["projected"]>["sources"]>[number];
export type ServiceAccountTokenProjection = NonNullable<VolumeProjection["serviceAccountToken"]>;
export type KeyToPath = NonNullable<ConfigMapVolumeSource["items"]>[number];
export type EnvVar = NonNullable<IContainer["env"]>[number];
export type ResourceFieldSelector = NonNullable<NonNullable<EnvVar["valueFrom"]>["resourceFieldRef"]>;
export type VolumeMount = NonNullable<IContainer["volumeMounts"]>[number];
