// Test-only helpers: a hand-written subset of the Kubernetes protobuf schema (field numbers as in
// upstream's generated.proto files) compiled with protobufjs, to build request bodies
// independently of the decoder's own tables.
import protobuf from "protobufjs";

const PROTO = `
syntax = "proto2";
package t;

// runtime
message TypeMeta { optional string apiVersion = 1; optional string kind = 2; }
message Unknown {
  optional TypeMeta typeMeta = 1; optional bytes raw = 2;
  optional string contentEncoding = 3; optional string contentType = 4;
}
message RawExtension { optional bytes raw = 1; }

// apimachinery value types
message Time { optional int64 seconds = 1; optional int32 nanos = 2; }
message IntOrString { optional int64 type = 1; optional int32 intVal = 2; optional string strVal = 3; }
message Quantity { optional string string = 1; }
message FieldsV1 { optional bytes Raw = 1; }

// meta/v1
message ObjectMeta {
  optional string name = 1; optional string generateName = 2; optional string namespace = 3;
  optional string uid = 5; optional string resourceVersion = 6; optional int64 generation = 7;
  optional Time creationTimestamp = 8; optional Time deletionTimestamp = 9;
  optional int64 deletionGracePeriodSeconds = 10;
  map<string, string> labels = 11; map<string, string> annotations = 12;
  repeated OwnerReference ownerReferences = 13; repeated string finalizers = 14;
  repeated ManagedFieldsEntry managedFields = 17;
}
message OwnerReference {
  optional string kind = 1; optional string name = 3; optional string uid = 4; optional string apiVersion = 5;
  optional bool controller = 6; optional bool blockOwnerDeletion = 7;
}
message ManagedFieldsEntry {
  optional string manager = 1; optional string operation = 2; optional string apiVersion = 3;
  optional Time time = 4; optional string fieldsType = 6; optional FieldsV1 fieldsV1 = 7; optional string subresource = 8;
}
message LabelSelector { map<string, string> matchLabels = 1; repeated LabelSelectorRequirement matchExpressions = 2; }
message LabelSelectorRequirement { optional string key = 1; optional string operator = 2; repeated string values = 3; }
message Preconditions { optional string uid = 1; optional string resourceVersion = 2; }
message DeleteOptions {
  optional int64 gracePeriodSeconds = 1; optional Preconditions preconditions = 2; optional bool orphanDependents = 3;
  optional string propagationPolicy = 4; repeated string dryRun = 5;
}
message WatchEvent { optional string type = 1; optional RawExtension object = 2; }

// core/v1
message ConfigMap {
  optional ObjectMeta metadata = 1; map<string, string> data = 2; map<string, bytes> binaryData = 3; optional bool immutable = 4;
}
message Secret {
  optional ObjectMeta metadata = 1; map<string, bytes> data = 2; optional string type = 3;
  map<string, string> stringData = 4; optional bool immutable = 5;
}
message PodTemplateSpec { optional ObjectMeta metadata = 1; optional PodSpec spec = 2; }
message PodSpec {
  repeated Volume volumes = 1; repeated Container containers = 2; optional string restartPolicy = 3;
  optional int64 terminationGracePeriodSeconds = 4; optional string dnsPolicy = 6;
  map<string, string> nodeSelector = 7; optional bool hostNetwork = 11; optional string schedulerName = 19;
  repeated Toleration tolerations = 22;
}
message Volume { optional string name = 1; optional VolumeSource volumeSource = 2; }
message VolumeSource { optional EmptyDirVolumeSource emptyDir = 2; }
message EmptyDirVolumeSource { optional string medium = 1; optional Quantity sizeLimit = 2; }
message Container {
  optional string name = 1; optional string image = 2; repeated string command = 3; repeated ContainerPort ports = 6;
  repeated EnvVar env = 7; optional ResourceRequirements resources = 8; optional Probe livenessProbe = 10;
  optional string terminationMessagePath = 13; optional string imagePullPolicy = 14; optional bool stdin = 16;
}
message ContainerPort { optional string name = 1; optional int32 hostPort = 2; optional int32 containerPort = 3; optional string protocol = 4; }
message EnvVar { optional string name = 1; optional string value = 2; optional EnvVarSource valueFrom = 3; }
message EnvVarSource { optional ObjectFieldSelector fieldRef = 1; }
message ObjectFieldSelector { optional string apiVersion = 1; optional string fieldPath = 2; }
message ResourceRequirements { map<string, Quantity> limits = 1; map<string, Quantity> requests = 2; }
message Probe { optional ProbeHandler handler = 1; optional int32 initialDelaySeconds = 2; optional int32 periodSeconds = 4; }
message ProbeHandler { optional HTTPGetAction httpGet = 2; }
message HTTPGetAction { optional string path = 1; optional IntOrString port = 2; optional string scheme = 4; }
message Toleration {
  optional string key = 1; optional string operator = 2; optional string value = 3; optional string effect = 4;
  optional int64 tolerationSeconds = 5;
}

// apps/v1
message Deployment { optional ObjectMeta metadata = 1; optional DeploymentSpec spec = 2; optional DeploymentStatus status = 3; }
message DeploymentSpec {
  optional int32 replicas = 1; optional LabelSelector selector = 2; optional PodTemplateSpec template = 3;
  optional DeploymentStrategy strategy = 4; optional int32 minReadySeconds = 5; optional int32 revisionHistoryLimit = 6;
  optional bool paused = 7; optional int32 progressDeadlineSeconds = 9;
}
// DeploymentSpec plus a field number upstream does not define, for the unknown-field test.
message DeploymentSpecWithExtra { optional int32 replicas = 1; optional string futureField = 999; }
message DeploymentWithExtra { optional ObjectMeta metadata = 1; optional DeploymentSpecWithExtra spec = 2; optional string topLevelExtra = 77; }
message DeploymentStrategy { optional string type = 1; optional RollingUpdateDeployment rollingUpdate = 2; }
message RollingUpdateDeployment { optional IntOrString maxUnavailable = 1; optional IntOrString maxSurge = 2; }
message DeploymentStatus {
  optional int64 observedGeneration = 1; optional int32 replicas = 2; optional int32 updatedReplicas = 3;
  optional int32 availableReplicas = 4; optional int32 readyReplicas = 7;
}

// rbac/v1
message RoleBinding { optional ObjectMeta metadata = 1; repeated Subject subjects = 2; optional RoleRef roleRef = 3; }
message Subject { optional string kind = 1; optional string apiGroup = 2; optional string name = 3; optional string namespace = 4; }
message RoleRef { optional string apiGroup = 1; optional string kind = 2; optional string name = 3; }

// authorization/v1
message SelfSubjectAccessReview {
  optional ObjectMeta metadata = 1; optional SelfSubjectAccessReviewSpec spec = 2; optional SubjectAccessReviewStatus status = 3;
}
message SelfSubjectAccessReviewSpec { optional ResourceAttributes resourceAttributes = 1; optional NonResourceAttributes nonResourceAttributes = 2; }
message ResourceAttributes {
  optional string namespace = 1; optional string verb = 2; optional string group = 3; optional string version = 4;
  optional string resource = 5; optional string subresource = 6; optional string name = 7;
}
message NonResourceAttributes { optional string path = 1; optional string verb = 2; }
message SubjectAccessReviewStatus { optional bool allowed = 1; optional string reason = 2; optional bool denied = 4; }
message SubjectAccessReview {
  optional ObjectMeta metadata = 1; optional SubjectAccessReviewSpec spec = 2; optional SubjectAccessReviewStatus status = 3;
}
message SubjectAccessReviewSpec {
  optional ResourceAttributes resourceAttributes = 1; optional string user = 3; repeated string groups = 4;
  map<string, ExtraValue> extra = 5; optional string uid = 6;
}
message ExtraValue { repeated string items = 1; }

// authentication/v1
message TokenRequest { optional ObjectMeta metadata = 1; optional TokenRequestSpec spec = 2; optional TokenRequestStatus status = 3; }
message TokenRequestSpec { repeated string audiences = 1; optional BoundObjectReference boundObjectRef = 3; optional int64 expirationSeconds = 4; }
message BoundObjectReference { optional string kind = 1; optional string apiVersion = 2; optional string name = 3; optional string uID = 4; }
message TokenRequestStatus { optional string token = 1; optional Time expirationTimestamp = 2; }

// coordination/v1
message Lease { optional ObjectMeta metadata = 1; optional LeaseSpec spec = 2; }
message LeaseSpec {
  optional string holderIdentity = 1; optional int32 leaseDurationSeconds = 2; optional Time acquireTime = 3;
  optional Time renewTime = 4; optional int32 leaseTransitions = 5;
}

// policy/v1
message Eviction { optional ObjectMeta metadata = 1; optional DeleteOptions deleteOptions = 2; }

// autoscaling/v1
message Scale { optional ObjectMeta metadata = 1; optional ScaleSpec spec = 2; optional ScaleStatus status = 3; }
message ScaleSpec { optional int32 replicas = 1; }
message ScaleStatus { optional int32 replicas = 1; optional string selector = 2; }
`;

const root = protobuf.parse(PROTO, { keepCase: true }).root;

/** Encodes a message of the subset (type name without package) from a plain object. */
export function encodeMessage(type: string, value: Record<string, unknown>): Uint8Array {
  const t = root.lookupType(`t.${type}`);
  const err = t.verify(value);
  if (err) throw new Error(`${type}: ${err}`);
  return t.encode(t.fromObject(value)).finish();
}

const MAGIC = [0x6b, 0x38, 0x73, 0x00];

/** Wraps raw object bytes in the "k8s\0" + runtime.Unknown envelope. */
export function envelopeRaw(
  apiVersion: string,
  kind: string,
  raw: Uint8Array,
  extra: { contentEncoding?: string; contentType?: string } = {},
): Uint8Array {
  const unknown = encodeMessage("Unknown", {
    typeMeta: { apiVersion, kind },
    raw,
    contentEncoding: extra.contentEncoding ?? "",
    contentType: extra.contentType ?? "",
  });
  const out = new Uint8Array(4 + unknown.length);
  out.set(MAGIC, 0);
  out.set(unknown, 4);
  return out;
}

/** A full request body as a Go client would send it. */
export function body(
  apiVersion: string,
  kind: string,
  type: string,
  value: Record<string, unknown>,
): Uint8Array {
  return envelopeRaw(apiVersion, kind, encodeMessage(type, value));
}

export const seconds = (iso: string) => Date.parse(iso) / 1000;
