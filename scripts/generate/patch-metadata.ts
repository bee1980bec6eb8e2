// Strategic-merge and list metadata that kubernetes-models does not carry
// (it is in upstream's Go struct tags and OpenAPI extensions). Keyed by
// "<definition>.<property>". Values are the upstream extension values for
// the definitions edgeplane serves; lists not named here are left untagged.

export interface FieldMeta {
  strategy?: string;
  mergeKey?: string;
  listType?: "atomic" | "set" | "map";
  mapKeys?: string[];
  mapType?: "atomic" | "granular";
}

const CORE = "io.k8s.api.core.v1";
const APPS = "io.k8s.api.apps.v1";
const BATCH = "io.k8s.api.batch.v1";
const META = "io.k8s.apimachinery.pkg.apis.meta.v1";

const byName = (key = "name"): FieldMeta => ({
  strategy: "merge",
  mergeKey: key,
  listType: "map",
  mapKeys: [key],
});
const byType: FieldMeta = { strategy: "merge", mergeKey: "type", listType: "map", mapKeys: ["type"] };
const atomic: FieldMeta = { listType: "atomic" };

export const FIELD_META: Record<string, FieldMeta> = {
  // metadata
  [`${META}.ObjectMeta.finalizers`]: { strategy: "merge", listType: "set" },
  [`${META}.ObjectMeta.ownerReferences`]: {
    strategy: "merge",
    mergeKey: "uid",
    listType: "map",
    mapKeys: ["uid"],
  },
  [`${META}.ObjectMeta.managedFields`]: atomic,
  [`${META}.LabelSelector.matchExpressions`]: atomic,
  [`${META}.StatusDetails.causes`]: atomic,

  // pod spec
  [`${CORE}.PodSpec.containers`]: byName(),
  [`${CORE}.PodSpec.initContainers`]: byName(),
  [`${CORE}.PodSpec.ephemeralContainers`]: byName(),
  [`${CORE}.PodSpec.volumes`]: {
    strategy: "merge,retainKeys",
    mergeKey: "name",
    listType: "map",
    mapKeys: ["name"],
  },
  [`${CORE}.PodSpec.imagePullSecrets`]: byName(),
  [`${CORE}.PodSpec.hostAliases`]: { strategy: "merge", mergeKey: "ip", listType: "map", mapKeys: ["ip"] },
  [`${CORE}.PodSpec.topologySpreadConstraints`]: {
    strategy: "merge",
    mergeKey: "topologyKey",
    listType: "map",
    mapKeys: ["topologyKey", "whenUnsatisfiable"],
  },
  [`${CORE}.PodSpec.resourceClaims`]: {
    strategy: "merge,retainKeys",
    mergeKey: "name",
    listType: "map",
    mapKeys: ["name"],
  },
  [`${CORE}.PodSpec.schedulingGates`]: byName(),
  [`${CORE}.PodSpec.tolerations`]: atomic,
  [`${CORE}.PodSpec.nodeSelector`]: { mapType: "atomic" },
  [`${CORE}.PodSpec.readinessGates`]: atomic,
  [`${CORE}.Container.env`]: byName(),
  [`${CORE}.Container.ports`]: {
    strategy: "merge",
    mergeKey: "containerPort",
    listType: "map",
    mapKeys: ["containerPort", "protocol"],
  },
  [`${CORE}.Container.volumeMounts`]: byName("mountPath"),
  [`${CORE}.Container.volumeDevices`]: byName("devicePath"),
  [`${CORE}.Container.args`]: atomic,
  [`${CORE}.Container.command`]: atomic,
  [`${CORE}.Container.envFrom`]: atomic,
  [`${CORE}.Container.resizePolicy`]: atomic,
  [`${CORE}.EphemeralContainer.env`]: byName(),
  [`${CORE}.EphemeralContainer.ports`]: {
    strategy: "merge",
    mergeKey: "containerPort",
    listType: "map",
    mapKeys: ["containerPort", "protocol"],
  },
  [`${CORE}.EphemeralContainer.volumeMounts`]: byName("mountPath"),
  [`${CORE}.EphemeralContainer.volumeDevices`]: byName("devicePath"),
  [`${CORE}.ResourceRequirements.claims`]: { listType: "map", mapKeys: ["name"] },
  [`${CORE}.PodStatus.conditions`]: {
    strategy: "merge",
    mergeKey: "type",
    listType: "map",
    mapKeys: ["type"],
  },
  [`${CORE}.PodStatus.podIPs`]: { strategy: "merge", mergeKey: "ip", listType: "map", mapKeys: ["ip"] },
  [`${CORE}.PodStatus.hostIPs`]: { strategy: "merge", mergeKey: "ip", listType: "atomic" },
  [`${CORE}.PodStatus.containerStatuses`]: atomic,
  [`${CORE}.PodStatus.initContainerStatuses`]: atomic,
  [`${CORE}.PodStatus.ephemeralContainerStatuses`]: atomic,
  [`${CORE}.PodStatus.resourceClaimStatuses`]: {
    strategy: "merge,retainKeys",
    mergeKey: "name",
    listType: "map",
    mapKeys: ["name"],
  },

  // nodes
  [`${CORE}.NodeSpec.podCIDRs`]: { strategy: "merge", listType: "set" },
  [`${CORE}.NodeSpec.taints`]: atomic,
  [`${CORE}.NodeStatus.addresses`]: byType,
  [`${CORE}.NodeStatus.conditions`]: byType,
  [`${CORE}.NodeStatus.images`]: atomic,
  [`${CORE}.NodeStatus.volumesInUse`]: atomic,
  [`${CORE}.NodeStatus.volumesAttached`]: atomic,

  // services, endpoints, accounts, quotas
  [`${CORE}.ServiceSpec.ports`]: {
    strategy: "merge",
    mergeKey: "port",
    listType: "map",
    mapKeys: ["port", "protocol"],
  },
  [`${CORE}.ServiceSpec.clusterIPs`]: atomic,
  [`${CORE}.ServiceSpec.externalIPs`]: atomic,
  [`${CORE}.ServiceSpec.ipFamilies`]: atomic,
  [`${CORE}.ServiceSpec.loadBalancerSourceRanges`]: atomic,
  [`${CORE}.ServiceStatus.conditions`]: byType,
  [`${CORE}.LoadBalancerStatus.ingress`]: atomic,
  [`${CORE}.EndpointSubset.addresses`]: atomic,
  [`${CORE}.EndpointSubset.notReadyAddresses`]: atomic,
  [`${CORE}.EndpointSubset.ports`]: atomic,
  [`${CORE}.Endpoints.subsets`]: atomic,
  [`${CORE}.ServiceAccount.secrets`]: {
    strategy: "merge",
    mergeKey: "name",
    listType: "map",
    mapKeys: ["name"],
  },
  [`${CORE}.ServiceAccount.imagePullSecrets`]: atomic,
  [`${CORE}.NamespaceStatus.conditions`]: byType,
  [`${CORE}.NamespaceSpec.finalizers`]: atomic,
  [`${CORE}.LimitRangeSpec.limits`]: atomic,
  [`${CORE}.PersistentVolumeSpec.accessModes`]: atomic,
  [`${CORE}.PersistentVolumeSpec.mountOptions`]: atomic,
  [`${CORE}.PersistentVolumeClaimSpec.accessModes`]: atomic,
  [`${CORE}.PersistentVolumeClaimStatus.accessModes`]: atomic,
  [`${CORE}.PersistentVolumeClaimStatus.conditions`]: byType,
  ["io.k8s.api.storage.v1.StorageClass.mountOptions"]: atomic,
  ["io.k8s.api.storage.v1.CSINodeSpec.drivers"]: {
    strategy: "merge",
    mergeKey: "name",
    listType: "map",
    mapKeys: ["name"],
  },
  ["io.k8s.api.storage.v1.StorageClass.allowedTopologies"]: atomic,
  [`${CORE}.ResourceQuotaSpec.scopes`]: atomic,

  // apps
  [`${APPS}.DeploymentSpec.strategy`]: { strategy: "retainKeys" },
  [`${APPS}.DeploymentStatus.conditions`]: byType,
  [`${APPS}.ReplicaSetStatus.conditions`]: byType,
  [`${CORE}.ReplicationControllerStatus.conditions`]: byType,
  [`${CORE}.ReplicationControllerSpec.selector`]: { mapType: "atomic" },
  [`${CORE}.ServiceSpec.selector`]: { mapType: "atomic" },
  ["io.k8s.api.node.v1.Scheduling.nodeSelector"]: { mapType: "atomic" },
  ["io.k8s.api.storage.v1.CSIDriverSpec.volumeLifecycleModes"]: { listType: "set" },
  ["io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus.conditions"]: byType,
  [`${APPS}.DaemonSetStatus.conditions`]: byType,
  [`${APPS}.StatefulSetStatus.conditions`]: byType,
  ["io.k8s.api.networking.v1.IngressSpec.rules"]: atomic,
  ["io.k8s.api.networking.v1.IngressSpec.tls"]: atomic,
  ["io.k8s.api.networking.v1.IngressTLS.hosts"]: atomic,
  ["io.k8s.api.networking.v1.HTTPIngressRuleValue.paths"]: atomic,
  ["io.k8s.api.networking.v1.IngressLoadBalancerStatus.ingress"]: atomic,
  ["io.k8s.api.networking.v1.IngressLoadBalancerIngress.ports"]: atomic,
  ["io.k8s.api.networking.v1.NetworkPolicySpec.ingress"]: atomic,
  ["io.k8s.api.networking.v1.NetworkPolicySpec.egress"]: atomic,
  ["io.k8s.api.networking.v1.NetworkPolicySpec.policyTypes"]: atomic,
  ["io.k8s.api.networking.v1.NetworkPolicyIngressRule.ports"]: atomic,
  ["io.k8s.api.networking.v1.NetworkPolicyIngressRule.from"]: atomic,
  ["io.k8s.api.networking.v1.NetworkPolicyEgressRule.ports"]: atomic,
  ["io.k8s.api.networking.v1.NetworkPolicyEgressRule.to"]: atomic,
  ["io.k8s.api.networking.v1.IPBlock.except"]: atomic,
  ["io.k8s.api.policy.v1.PodDisruptionBudgetSpec.selector"]: { strategy: "replace" },
  ["io.k8s.api.policy.v1.PodDisruptionBudgetStatus.conditions"]: byType,
  [`${APPS}.StatefulSetSpec.volumeClaimTemplates`]: atomic,
  [`${BATCH}.CronJobStatus.active`]: atomic,
  [`${BATCH}.JobStatus.conditions`]: { strategy: "merge", mergeKey: "type", listType: "atomic" },
  [`${BATCH}.UncountedTerminatedPods.succeeded`]: { listType: "set" },
  [`${BATCH}.UncountedTerminatedPods.failed`]: { listType: "set" },
  [`${BATCH}.PodFailurePolicy.rules`]: atomic,
  [`${BATCH}.PodFailurePolicyRule.onPodConditions`]: atomic,
  [`${BATCH}.PodFailurePolicyOnExitCodesRequirement.values`]: { listType: "set" },
  [`${BATCH}.SuccessPolicy.rules`]: atomic,

  // admissionregistration
  ["io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration.webhooks"]: byName(),
  ["io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration.webhooks"]: byName(),
  ["io.k8s.api.admissionregistration.v1.MutatingWebhook.rules"]: atomic,
  ["io.k8s.api.admissionregistration.v1.ValidatingWebhook.rules"]: atomic,
  ["io.k8s.api.admissionregistration.v1.MutatingWebhook.admissionReviewVersions"]: atomic,
  ["io.k8s.api.admissionregistration.v1.ValidatingWebhook.admissionReviewVersions"]: atomic,
  ["io.k8s.api.admissionregistration.v1.MutatingWebhook.matchConditions"]: byName(),
  ["io.k8s.api.admissionregistration.v1.ValidatingWebhook.matchConditions"]: byName(),
  ["io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec.validations"]: atomic,
  ["io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec.variables"]: byName(),
  ["io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec.auditAnnotations"]: atomic,
  ["io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec.matchConditions"]: byName(),
  ["io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBindingSpec.validationActions"]: {
    listType: "set",
  },
  ["io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyStatus.conditions"]: byType,

  // certificates
  ["io.k8s.api.certificates.v1.CertificateSigningRequestSpec.usages"]: atomic,
  ["io.k8s.api.certificates.v1.CertificateSigningRequestSpec.groups"]: atomic,
  ["io.k8s.api.certificates.v1.CertificateSigningRequestStatus.conditions"]: {
    listType: "map",
    mapKeys: ["type"],
  },

  // rbac
  ["io.k8s.api.rbac.v1.ClusterRole.rules"]: atomic,
  ["io.k8s.api.rbac.v1.Role.rules"]: atomic,
  ["io.k8s.api.rbac.v1.RoleBinding.subjects"]: atomic,
  ["io.k8s.api.rbac.v1.ClusterRoleBinding.subjects"]: atomic,
  ["io.k8s.api.rbac.v1.PolicyRule.verbs"]: atomic,
  ["io.k8s.api.rbac.v1.PolicyRule.apiGroups"]: atomic,
  ["io.k8s.api.rbac.v1.PolicyRule.resources"]: atomic,
  ["io.k8s.api.rbac.v1.PolicyRule.resourceNames"]: atomic,
  ["io.k8s.api.rbac.v1.PolicyRule.nonResourceURLs"]: atomic,
};

/** Definitions whose map is atomic for server-side apply (x-kubernetes-map-type). */
export const ATOMIC_STRUCTS = new Set<string>([
  `${CORE}.ObjectReference`,
  `${CORE}.LocalObjectReference`,
  `${CORE}.NodeSelector`,
  `${CORE}.NodeSelectorTerm`,
  `${CORE}.TopologySelectorTerm`,
  `${CORE}.ConfigMapKeySelector`,
  `${CORE}.SecretKeySelector`,
  `${CORE}.ObjectFieldSelector`,
  `${CORE}.ResourceFieldSelector`,
  `${CORE}.ConfigMapEnvSource`,
  `${CORE}.SecretEnvSource`,
  `${CORE}.TypedLocalObjectReference`,
  `${CORE}.SecretReference`,
  `${CORE}.ScopeSelector`,
  "io.k8s.api.networking.v1.ServiceBackendPort",
  "io.k8s.api.rbac.v1.RoleRef",
  "io.k8s.api.admissionregistration.v1.ParamKind",
  "io.k8s.api.admissionregistration.v1.ParamRef",
  "io.k8s.api.admissionregistration.v1.MatchResources",
  `${META}.LabelSelector`,
]);
