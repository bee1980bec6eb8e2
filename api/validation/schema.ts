// OpenAPI schema check with kubernetes-models' precompiled (ajv standalone, no eval)
// validators, mapped to upstream-like field causes. Only the kinds we serve are
// imported, to keep the Worker bundle small.

import { ControllerRevision } from "kubernetes-models/apps/v1/ControllerRevision";
import { DaemonSet } from "kubernetes-models/apps/v1/DaemonSet";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { ReplicaSet } from "kubernetes-models/apps/v1/ReplicaSet";
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { SelfSubjectReview } from "kubernetes-models/authentication.k8s.io/v1/SelfSubjectReview";
import { TokenRequest } from "kubernetes-models/authentication.k8s.io/v1/TokenRequest";
import { TokenReview } from "kubernetes-models/authentication.k8s.io/v1/TokenReview";
import { LocalSubjectAccessReview } from "kubernetes-models/authorization.k8s.io/v1/LocalSubjectAccessReview";
import { SelfSubjectAccessReview } from "kubernetes-models/authorization.k8s.io/v1/SelfSubjectAccessReview";
import { SelfSubjectRulesReview } from "kubernetes-models/authorization.k8s.io/v1/SelfSubjectRulesReview";
import { SubjectAccessReview } from "kubernetes-models/authorization.k8s.io/v1/SubjectAccessReview";
import { HorizontalPodAutoscaler as HorizontalPodAutoscalerV1 } from "kubernetes-models/autoscaling/v1/HorizontalPodAutoscaler";
import { Scale } from "kubernetes-models/autoscaling/v1/Scale";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { CronJob } from "kubernetes-models/batch/v1/CronJob";
import { Job } from "kubernetes-models/batch/v1/Job";
import { Lease } from "kubernetes-models/coordination.k8s.io/v1/Lease";
import { EndpointSlice } from "kubernetes-models/discovery.k8s.io/v1/EndpointSlice";
import { Event as EventsEvent } from "kubernetes-models/events.k8s.io/v1/Event";
import { Ingress } from "kubernetes-models/networking.k8s.io/v1/Ingress";
import { IngressClass } from "kubernetes-models/networking.k8s.io/v1/IngressClass";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { RuntimeClass } from "kubernetes-models/node.k8s.io/v1/RuntimeClass";
import { Eviction } from "kubernetes-models/policy/v1/Eviction";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { ClusterRole } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole";
import { ClusterRoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding";
import { Role } from "kubernetes-models/rbac.authorization.k8s.io/v1/Role";
import { RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding";
import { PriorityClass } from "kubernetes-models/scheduling.k8s.io/v1/PriorityClass";
import { CSIDriver } from "kubernetes-models/storage.k8s.io/v1/CSIDriver";
import { CSINode } from "kubernetes-models/storage.k8s.io/v1/CSINode";
import { CSIStorageCapacity } from "kubernetes-models/storage.k8s.io/v1/CSIStorageCapacity";
import { StorageClass } from "kubernetes-models/storage.k8s.io/v1/StorageClass";
import { VolumeAttachment } from "kubernetes-models/storage.k8s.io/v1/VolumeAttachment";
import { Binding } from "kubernetes-models/v1/Binding";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Endpoints } from "kubernetes-models/v1/Endpoints";
import { Event } from "kubernetes-models/v1/Event";
import { LimitRange } from "kubernetes-models/v1/LimitRange";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { Node } from "kubernetes-models/v1/Node";
import { PersistentVolume } from "kubernetes-models/v1/PersistentVolume";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { Pod } from "kubernetes-models/v1/Pod";
import { PodTemplate } from "kubernetes-models/v1/PodTemplate";
import { ReplicationController } from "kubernetes-models/v1/ReplicationController";
import { ResourceQuota } from "kubernetes-models/v1/ResourceQuota";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { field, type StatusCause } from "../errors";

interface ModelClass {
  apiVersion: string;
  kind: string;
  new (data?: any): { validate(): void };
}

const MODELS: ModelClass[] = [
  Namespace,
  Pod,
  Node,
  ConfigMap,
  Secret,
  ServiceAccount,
  Event,
  LimitRange,
  ResourceQuota,
  Service,
  Endpoints,
  PodTemplate,
  ReplicationController,
  Binding,
  ControllerRevision,
  DaemonSet,
  Deployment,
  ReplicaSet,
  StatefulSet,
  CronJob,
  Job,
  Scale,
  HorizontalPodAutoscaler,
  HorizontalPodAutoscalerV1,
  Lease,
  EventsEvent,
  EndpointSlice,
  Eviction,
  PodDisruptionBudget,
  Ingress,
  IngressClass,
  NetworkPolicy,
  PersistentVolume,
  PersistentVolumeClaim,
  StorageClass,
  CSIDriver,
  CSINode,
  CSIStorageCapacity,
  VolumeAttachment,
  PriorityClass,
  RuntimeClass,
  Role,
  ClusterRole,
  RoleBinding,
  ClusterRoleBinding,
  SelfSubjectAccessReview,
  SelfSubjectRulesReview,
  SubjectAccessReview,
  LocalSubjectAccessReview,
  TokenReview,
  SelfSubjectReview,
  TokenRequest,
] as unknown as ModelClass[];

const BY_GVK = new Map<string, ModelClass>(MODELS.map((m) => [`${m.apiVersion}/${m.kind}`, m]));

interface AjvError {
  instancePath: string;
  keyword: string;
  params: Record<string, any>;
  message?: string;
}

/** Whether a schema is known for this apiVersion/kind. */
export function hasSchema(apiVersion: string, kind: string): boolean {
  return BY_GVK.has(`${apiVersion}/${kind}`);
}

/** Schema violations of obj as causes; [] when valid or when the kind has no schema here. */
export function schemaCauses(apiVersion: string, kind: string, obj: unknown): StatusCause[] {
  const Model = BY_GVK.get(`${apiVersion}/${kind}`);
  if (!Model || typeof obj !== "object" || obj === null) return [];
  try {
    const data = { ...(obj as Record<string, unknown>), apiVersion, kind };
    // The model's constructor deep-copies its input only to drop undefined properties
    // (a map's undefined value would fail its type); the validators only read. So the
    // validator runs on the object itself unless it holds one: a pod create saves a copy.
    if (holdsUndefined(obj)) new Model(data).validate();
    else Model.prototype.validate.call(data);
    return [];
  } catch (err) {
    const errors = (err as { errors?: AjvError[] }).errors;
    if (!Array.isArray(errors)) return [];
    return mapErrors(errors, obj);
  }
}

/** Whether an object below `v` has a property whose value is undefined (JSON never has). */
function holdsUndefined(v: unknown): boolean {
  if (Array.isArray(v)) return v.some((x) => x !== null && typeof x === "object" && holdsUndefined(x));
  if (v === null || typeof v !== "object") return false;
  for (const x of Object.values(v)) {
    if (x === undefined) return true;
    if (x !== null && typeof x === "object" && holdsUndefined(x)) return true;
  }
  return false;
}

function mapErrors(errors: AjvError[], root: unknown): StatusCause[] {
  const causes: StatusCause[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    const segments = pointerSegments(e.instancePath);
    if (e.keyword === "required") {
      const path = fieldPath([...segments, String(e.params.missingProperty)]);
      if (seen.has(path)) continue;
      seen.add(path);
      causes.push(field.required(path));
      continue;
    }
    const path = fieldPath(segments);
    if (seen.has(path)) continue;
    seen.add(path);
    const value = valueAt(root, segments);
    if (e.keyword === "enum")
      causes.push(field.notSupported(path, value, (e.params.allowedValues ?? []).map(String)));
    else if (e.keyword === "type")
      causes.push(field.invalid(path, value, `must be of type ${[e.params.type].flat().join(",")}`));
    else causes.push(field.invalid(path, value, e.message ?? `failed ${e.keyword} check`));
  }
  return causes;
}

function pointerSegments(pointer: string): string[] {
  if (!pointer) return [];
  return pointer
    .split("/")
    .slice(1)
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** JSON pointer segments to upstream's field path: spec.containers[0].name, metadata.labels[a/b]. */
export function fieldPath(segments: string[]): string {
  let out = "";
  for (const s of segments) {
    if (/^\d+$/.test(s) || /[./]/.test(s)) out += `[${s}]`;
    else out += out ? `.${s}` : s;
  }
  return out;
}

/** The value at a path's segments (an array's items by their index), or undefined. */
export function valueAt(root: unknown, segments: string[]): unknown {
  let cur: any = root;
  for (const s of segments) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = cur[s];
  }
  return cur;
}
