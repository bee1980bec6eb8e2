// Patch metadata for the built-in kinds edgeplane serves, written from the
// upstream Go struct tags (k8s.io/api): `patchStrategy:"merge"
// patchMergeKey:"..."` for strategic merge patch, and the list types
// (+listType / +listMapKey / +structType=atomic / +mapType=atomic) that
// server-side apply uses. A list not described here is replaced by strategic
// merge patch and is atomic for server-side apply; a map or struct not
// described here is merged key by key.

export interface FieldDef {
  /** Struct type of the value, or of each list element. */
  type?: string;
  /** patchStrategy (strategic merge patch): merge lists by key, or replace a map whole. */
  strategy?: "merge" | "replace";
  /** patchMergeKey (strategic merge patch); absent for merged primitive lists. */
  mergeKey?: string;
  /** List type for server-side apply: map (associative by keys), set, atomic. */
  list?: "map" | "set" | "atomic";
  /** Key fields of an associative list (+listMapKey), in declaration order. */
  keys?: string[];
  /** Defaults of key fields (a port's protocol is TCP when omitted). */
  keyDefaults?: Record<string, unknown>;
  /** Struct or map owned as a whole by server-side apply. */
  atomic?: boolean;
  /** A non-pointer struct in Go: always present, so never "added" as a whole. */
  np?: boolean;
}

export type TypeDef = Record<string, FieldDef>;

const byKey = (mergeKey: string, type?: string, keys: string[] = [mergeKey]): FieldDef => ({
  strategy: "merge",
  mergeKey,
  list: "map",
  keys,
  type,
});
const conditions = byKey("type");
const atomic: FieldDef = { atomic: true };
const atomicList: FieldDef = { list: "atomic" };
const struct = (type: string): FieldDef => ({ type });
const npStruct = (type: string): FieldDef => ({ type, np: true });
/** A non-pointer struct nothing below which is described here. */
const np: FieldDef = { np: true };
const tcp = { protocol: "TCP" };

export const TYPES: Record<string, TypeDef> = {
  ObjectMeta: {
    finalizers: { strategy: "merge", list: "set" },
    ownerReferences: byKey("uid", "OwnerReference"),
    managedFields: atomicList,
  },
  OwnerReference: {},
  LabelSelector: {},

  // core/v1 Pod and its parts
  PodTemplateSpec: { metadata: npStruct("ObjectMeta"), spec: npStruct("PodSpec") },
  PodSpec: {
    volumes: byKey("name", "Volume"),
    initContainers: byKey("name", "Container"),
    containers: byKey("name", "Container"),
    ephemeralContainers: byKey("name", "Container"),
    imagePullSecrets: byKey("name", "LocalObjectReference"),
    hostAliases: byKey("ip"),
    topologySpreadConstraints: byKey("topologyKey", "TopologySpreadConstraint", [
      "topologyKey",
      "whenUnsatisfiable",
    ]),
    schedulingGates: byKey("name"),
    resourceClaims: byKey("name"),
    tolerations: atomicList,
    readinessGates: atomicList,
    nodeSelector: atomic,
    resources: struct("ResourceRequirements"),
    affinity: struct("Affinity"),
    securityContext: struct("PodSecurityContext"),
    dnsConfig: struct("PodDNSConfig"),
  },
  Container: {
    ports: { ...byKey("containerPort", undefined, ["containerPort", "protocol"]), keyDefaults: tcp },
    env: byKey("name", "EnvVar"),
    volumeMounts: byKey("mountPath"),
    volumeDevices: byKey("devicePath"),
    resources: npStruct("ResourceRequirements"),
    command: atomicList,
    args: atomicList,
    envFrom: atomicList,
    resizePolicy: atomicList,
  },
  ResourceRequirements: { claims: { list: "map", keys: ["name"] } },
  EnvVar: { valueFrom: struct("EnvVarSource") },
  EnvVarSource: { configMapKeyRef: atomic, secretKeyRef: atomic, fieldRef: atomic, resourceFieldRef: atomic },
  LocalObjectReference: {},
  TopologySpreadConstraint: { labelSelector: atomic },
  Volume: {
    csi: struct("CSIVolumeSource"),
    cephfs: struct("SecretRefSource"),
    cinder: struct("SecretRefSource"),
    flexVolume: struct("SecretRefSource"),
    iscsi: struct("SecretRefSource"),
    rbd: struct("SecretRefSource"),
    scaleIO: struct("SecretRefSource"),
    storageos: struct("SecretRefSource"),
    ephemeral: struct("EphemeralVolumeSource"),
  },
  /** The volume sources whose secretRef is a LocalObjectReference or SecretReference (atomic). */
  SecretRefSource: { secretRef: atomic },
  CSIVolumeSource: { nodePublishSecretRef: atomic },
  EphemeralVolumeSource: { volumeClaimTemplate: struct("PersistentVolumeClaimTemplate") },
  PersistentVolumeClaimTemplate: {
    metadata: npStruct("ObjectMeta"),
    spec: npStruct("PersistentVolumeClaimSpec"),
  },
  Affinity: { nodeAffinity: struct("NodeAffinity") },
  NodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: atomic },
  PodSecurityContext: {},
  PodDNSConfig: {},
  PodStatus: {
    conditions,
    podIPs: byKey("ip"),
    // merged by ip in a strategic merge patch, yet atomic for server-side apply
    hostIPs: { strategy: "merge", mergeKey: "ip", list: "atomic" },
    resourceClaimStatuses: byKey("name"),
  },

  // core/v1 others
  NodeSpec: { podCIDRs: { strategy: "merge", list: "set" }, taints: atomicList },
  NodeStatus: {
    conditions,
    addresses: byKey("type"),
    images: atomicList,
    volumesAttached: atomicList,
    daemonEndpoints: npStruct("NodeDaemonEndpoints"),
    nodeInfo: np,
  },
  NodeDaemonEndpoints: { kubeletEndpoint: np },
  NamespaceSpec: { finalizers: atomicList },
  NamespaceStatus: { conditions },
  ServiceSpec: {
    ports: { ...byKey("port", undefined, ["port", "protocol"]), keyDefaults: tcp },
    selector: atomic,
    clusterIPs: atomicList,
    externalIPs: atomicList,
    ipFamilies: atomicList,
  },
  ServiceStatus: { conditions, loadBalancer: np },
  LimitRangeSpec: { limits: atomicList },
  ResourceQuotaSpec: { scopes: atomicList, scopeSelector: atomic },

  // apps/v1
  DeploymentSpec: {
    selector: atomic,
    template: npStruct("PodTemplateSpec"),
    strategy: npStruct("DeploymentStrategy"),
  },
  DeploymentStrategy: {},
  ReplicaSetSpec: { selector: atomic, template: npStruct("PodTemplateSpec") },
  ReplicationControllerSpec: { selector: atomic, template: struct("PodTemplateSpec") },
  WorkloadStatus: { conditions },
  DaemonSetSpec: {
    selector: atomic,
    template: npStruct("PodTemplateSpec"),
    updateStrategy: npStruct("DaemonSetUpdateStrategy"),
  },
  DaemonSetUpdateStrategy: {},
  StatefulSetSpec: {
    selector: atomic,
    template: npStruct("PodTemplateSpec"),
    updateStrategy: npStruct("StatefulSetUpdateStrategy"),
    volumeClaimTemplates: atomicList,
  },
  StatefulSetUpdateStrategy: {},

  // batch/v1
  JobSpec: {
    selector: atomic,
    template: npStruct("PodTemplateSpec"),
    podFailurePolicy: struct("PodFailurePolicy"),
    successPolicy: struct("SuccessPolicy"),
  },
  PodFailurePolicy: { rules: atomicList },
  SuccessPolicy: { rules: atomicList },
  JobStatus: {
    conditions: { strategy: "merge", mergeKey: "type", list: "atomic" },
    uncountedTerminatedPods: struct("UncountedTerminatedPods"),
  },
  UncountedTerminatedPods: { succeeded: { list: "set" }, failed: { list: "set" } },
  CronJobSpec: { jobTemplate: npStruct("JobTemplateSpec") },
  JobTemplateSpec: { metadata: npStruct("ObjectMeta"), spec: npStruct("JobSpec") },
  CronJobStatus: { active: atomicList },

  // networking.k8s.io/v1 (every list atomic, replaced whole by strategic merge patch)
  IngressSpec: { rules: atomicList, tls: atomicList, defaultBackend: struct("IngressBackend") },
  IngressBackend: { resource: atomic, service: struct("IngressServiceBackend") },
  IngressServiceBackend: { port: atomic },
  IngressStatus: { loadBalancer: np },
  NetworkPolicySpec: {
    podSelector: atomic,
    ingress: atomicList,
    egress: atomicList,
    policyTypes: atomicList,
  },

  // autoscaling (v2; v1 has no lists)
  HorizontalPodAutoscalerSpec: { scaleTargetRef: np },
  HorizontalPodAutoscalerStatus: { conditions },

  // core/v1 storage (every list but a claim's conditions atomic)
  PersistentVolumeSpec: {
    claimRef: atomic,
    nodeAffinity: struct("VolumeNodeAffinity"),
    csi: struct("CSIPersistentVolumeSource"),
    cephfs: struct("SecretRefSource"),
    cinder: struct("SecretRefSource"),
    flexVolume: struct("SecretRefSource"),
    iscsi: struct("SecretRefSource"),
    rbd: struct("SecretRefSource"),
    scaleIO: struct("SecretRefSource"),
    storageos: struct("SecretRefSource"),
  },
  VolumeNodeAffinity: { required: atomic },
  CSIPersistentVolumeSource: {
    controllerExpandSecretRef: atomic,
    controllerPublishSecretRef: atomic,
    nodeExpandSecretRef: atomic,
    nodePublishSecretRef: atomic,
    nodeStageSecretRef: atomic,
  },
  PersistentVolumeClaimSpec: { selector: atomic, dataSource: atomic, resources: np },
  PersistentVolumeClaimStatus: { conditions },
  // storage.k8s.io/v1 CSI kinds: a node's drivers merge by name
  CSIDriverSpec: { volumeLifecycleModes: { list: "set" } },
  CSINodeSpec: { drivers: byKey("name") },
  VolumeAttachmentSpec: { source: npStruct("VolumeAttachmentSource") },
  VolumeAttachmentSource: { inlineVolumeSpec: struct("PersistentVolumeSpec") },
  VolumeAttachmentStatus: {},
  // node.k8s.io/v1
  RuntimeClassScheduling: { nodeSelector: atomic },

  // policy/v1
  PodDisruptionBudgetSpec: { selector: { strategy: "replace", atomic: true } },
  PodDisruptionBudgetStatus: { conditions },

  // certificates.k8s.io/v1: conditions are keyed by type for server-side apply only (no
  // patchStrategy upstream: a strategic merge patch replaces them)
  CertificateSigningRequestSpec: { usages: atomicList, groups: atomicList },
  CertificateSigningRequestStatus: { conditions: { list: "map", keys: ["type"] } },

  // admissionregistration.k8s.io/v1
  Webhook: {
    namespaceSelector: atomic,
    objectSelector: atomic,
    clientConfig: np,
    rules: atomicList,
    admissionReviewVersions: atomicList,
    matchConditions: byKey("name"),
  },
  ValidatingAdmissionPolicySpec: {
    paramKind: atomic,
    matchConstraints: atomic,
    validations: atomicList,
    auditAnnotations: atomicList,
    matchConditions: byKey("name"),
    variables: byKey("name"),
  },
  ValidatingAdmissionPolicyStatus: { conditions },
  ValidatingAdmissionPolicyBindingSpec: {
    paramRef: atomic,
    matchResources: atomic,
    validationActions: { list: "set" },
  },
};

const root = (spec?: string, status?: string, extra: TypeDef = {}): TypeDef => ({
  metadata: npStruct("ObjectMeta"),
  ...(spec ? { spec: npStruct(spec) } : {}),
  ...(status ? { status: npStruct(status) } : {}),
  ...extra,
});

/** Root type of each kind served with strategic merge patch support. */
export const KINDS: Record<string, TypeDef> = {
  Pod: root("PodSpec", "PodStatus"),
  PodTemplate: root(undefined, undefined, { template: npStruct("PodTemplateSpec") }),
  Namespace: root("NamespaceSpec", "NamespaceStatus"),
  Node: root("NodeSpec", "NodeStatus"),
  ConfigMap: root(),
  Secret: root(),
  ServiceAccount: root(undefined, undefined, {
    secrets: byKey("name"),
    imagePullSecrets: atomicList,
  }),
  Service: root("ServiceSpec", "ServiceStatus"),
  Endpoints: root(undefined, undefined, { subsets: atomicList }),
  Event: root(undefined, undefined, { involvedObject: atomic, related: atomic, source: np }),
  LimitRange: root("LimitRangeSpec"),
  ResourceQuota: root("ResourceQuotaSpec", undefined, { status: np }),
  Deployment: root("DeploymentSpec", "WorkloadStatus"),
  ReplicaSet: root("ReplicaSetSpec", "WorkloadStatus"),
  ReplicationController: root("ReplicationControllerSpec", "WorkloadStatus"),
  DaemonSet: root("DaemonSetSpec", "WorkloadStatus"),
  StatefulSet: root("StatefulSetSpec", "WorkloadStatus"),
  ControllerRevision: root(undefined, undefined, { data: atomic }),
  Job: root("JobSpec", "JobStatus"),
  CronJob: root("CronJobSpec", "CronJobStatus"),
  Ingress: root("IngressSpec", "IngressStatus"),
  IngressClass: root(undefined, undefined, { spec: np }),
  NetworkPolicy: root("NetworkPolicySpec"),
  PodDisruptionBudget: root("PodDisruptionBudgetSpec", "PodDisruptionBudgetStatus"),
  Lease: root(undefined, undefined, { spec: np }),
  PersistentVolume: root("PersistentVolumeSpec", undefined, { status: np }),
  PersistentVolumeClaim: root("PersistentVolumeClaimSpec", "PersistentVolumeClaimStatus"),
  StorageClass: root(),
  CSIDriver: root("CSIDriverSpec"),
  CSINode: root("CSINodeSpec"),
  CSIStorageCapacity: root(undefined, undefined, { nodeTopology: atomic }),
  VolumeAttachment: root("VolumeAttachmentSpec", "VolumeAttachmentStatus"),
  PriorityClass: root(),
  RuntimeClass: root(undefined, undefined, { scheduling: struct("RuntimeClassScheduling") }),
  CertificateSigningRequest: root("CertificateSigningRequestSpec", "CertificateSigningRequestStatus"),
  HorizontalPodAutoscaler: root("HorizontalPodAutoscalerSpec", "HorizontalPodAutoscalerStatus"),
  Role: root(undefined, undefined, { rules: atomicList }),
  ClusterRole: root(undefined, undefined, { rules: atomicList }),
  RoleBinding: root(undefined, undefined, { subjects: atomicList, roleRef: atomic }),
  ClusterRoleBinding: root(undefined, undefined, { subjects: atomicList, roleRef: atomic }),
  MutatingWebhookConfiguration: root(undefined, undefined, { webhooks: byKey("name", "Webhook") }),
  ValidatingWebhookConfiguration: root(undefined, undefined, { webhooks: byKey("name", "Webhook") }),
  ValidatingAdmissionPolicy: root("ValidatingAdmissionPolicySpec", "ValidatingAdmissionPolicyStatus"),
  ValidatingAdmissionPolicyBinding: root("ValidatingAdmissionPolicyBindingSpec"),
};

/** A schema position: the fields of a struct type, or nothing known. */
export type Schema = TypeDef | undefined;

/** True when strategic merge patch metadata exists for `kind`. */
export function hasPatchMeta(kind: string): boolean {
  return Object.hasOwn(KINDS, kind);
}

/** Root schema of a kind; unknown kinds get ObjectMeta and nothing else. */
export function rootSchema(kind: string): TypeDef {
  return KINDS[kind] ?? root();
}

/** Metadata of field `name` in `schema`, if any. */
export function fieldDef(schema: Schema, name: string): FieldDef | undefined {
  return schema && Object.hasOwn(schema, name) ? schema[name] : undefined;
}

/** Schema of the value (or list element) of a field. */
export function schemaOf(def: FieldDef | undefined): Schema {
  return def?.type ? TYPES[def.type] : undefined;
}
