// The CSI kinds of storage.k8s.io/v1: CSIDriver, CSINode, VolumeAttachment and
// CSIStorageCapacity, stored with upstream's defaults, validation (in its words, its path
// quirks included) and tables, so CSI drivers' manifests install. Nodes here run no CSI
// drivers: each edgelet registers its CSINode with no drivers, as a kubelet does, and nothing
// attaches volumes.
import { field, type StatusCause } from "../errors";
import { parseQuantity } from "../quantity";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { deepEqual, validateLabelSelector, validateMeta } from "../validation/metadata";
import { isDNS1123Subdomain, isQualifiedName } from "../validation/names";
import { ageColumn, column, isObject, nameColumn } from "./common";

const FS_GROUP_POLICIES = ["File", "None", "ReadWriteOnceWithFSType"];
const LIFECYCLE_MODES = ["Persistent", "Ephemeral"];
const MIN_TOKEN_SECONDS = 600;
const MAX_TOKEN_SECONDS = 2 ** 32;

/** A CSI driver's name where one is named (a VolumeAttachment's attacher, a CSINode's drivers). */
function driverName(name: unknown, path: string): StatusCause[] {
  const n = typeof name === "string" ? name : "";
  const causes: StatusCause[] = [];
  if (!n) causes.push(field.required(path));
  if (n.length > 63) causes.push(field.tooLong(path, 63));
  for (const m of isDNS1123Subdomain(n.toLowerCase())) causes.push(field.invalid(path, n, m));
  return causes;
}

function subdomain(value: unknown, path: string): StatusCause[] {
  return isDNS1123Subdomain(String(value ?? "")).map((m) => field.invalid(path, value ?? "", m));
}

export function validateCSIDriver(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: false });
  const spec = isObject(obj.spec) ? obj.spec : {};
  // (sic) upstream names attachRequired's path "attachedRequired"
  if (spec.attachRequired == null) causes.push(field.required("spec.attachedRequired"));
  for (const f of ["podInfoOnMount", "storageCapacity"])
    if (spec[f] == null) causes.push(field.required(`spec.${f}`));
  if (spec.fsGroupPolicy != null && !FS_GROUP_POLICIES.includes(spec.fsGroupPolicy))
    causes.push(field.notSupported("spec.fsGroupPolicy", spec.fsGroupPolicy, FS_GROUP_POLICIES));
  const audiences = new Set<string>();
  (Array.isArray(spec.tokenRequests) ? spec.tokenRequests : []).forEach((t: any, i: number) => {
    const p = `spec.tokenRequests[${i}]`;
    const aud = String(t?.audience ?? "");
    if (audiences.has(aud)) {
      causes.push(field.duplicate(`${p}.audience`, aud));
      return;
    }
    audiences.add(aud);
    const s = t?.expirationSeconds;
    if (typeof s === "number" && s < MIN_TOKEN_SECONDS)
      causes.push(
        field.invalid(`${p}.expirationSeconds`, s, "may not specify a duration less than 10 minutes"),
      );
    else if (typeof s === "number" && s > MAX_TOKEN_SECONDS)
      causes.push(
        field.invalid(`${p}.expirationSeconds`, s, "may not specify a duration larger than 2^32 seconds"),
      );
  });
  for (const m of Array.isArray(spec.volumeLifecycleModes) ? spec.volumeLifecycleModes : [])
    if (!LIFECYCLE_MODES.includes(m))
      causes.push(field.notSupported("spec.volumeLifecycleModes", m, LIFECYCLE_MODES));
  if (old) {
    if ((spec.attachRequired ?? null) !== (old.spec?.attachRequired ?? null))
      causes.push(field.invalid("spec.attachedRequired", spec.attachRequired ?? null, "field is immutable"));
    if (!deepEqual(spec.volumeLifecycleModes, old.spec?.volumeLifecycleModes))
      causes.push(
        field.invalid("spec.volumeLifecycleModes", spec.volumeLifecycleModes ?? null, "field is immutable"),
      );
  }
  return causes;
}

export function validateCSINode(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: false });
  const drivers: any[] = Array.isArray(obj.spec?.drivers) ? obj.spec.drivers : [];
  const names = new Set<string>();
  drivers.forEach((d, i) => {
    const p = `spec.drivers[${i}]`;
    causes.push(...driverName(d?.name, `${p}.name`));
    if (!d?.nodeID) causes.push(field.required(`${p}.nodeID`));
    else if (String(d.nodeID).length > 256)
      causes.push(field.invalid(`${p}.nodeID`, d.nodeID, "must be 256 characters or less"));
    const count = d?.allocatable?.count;
    if (typeof count === "number" && count < 0)
      causes.push(field.invalid(`${p}.allocatable.count`, count, "must be greater than or equal to 0"));
    if (names.has(d?.name)) causes.push(field.duplicate(`${p}.name`, d.name));
    names.add(d?.name);
    const keys = new Set<string>();
    for (const k of Array.isArray(d?.topologyKeys) ? d.topologyKeys : []) {
      if (!k) causes.push(field.required(p));
      else if (keys.has(k)) causes.push(field.duplicate(p, k));
      else for (const m of isQualifiedName(k)) causes.push(field.invalid(p, k, m));
      keys.add(k);
    }
  });
  // a driver, once registered, does not change (it may be removed and added again)
  for (const was of Array.isArray(old?.spec?.drivers) ? old!.spec.drivers : []) {
    const now = drivers.find((d) => d?.name === was?.name);
    if (now && !deepEqual(now, was)) causes.push(field.invalid("CSINodeDriver", now, "field is immutable"));
  }
  return causes;
}

export function validateVolumeAttachment(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: false });
  const spec = isObject(obj.spec) ? obj.spec : {};
  if (!spec.attacher) causes.push(field.required("spec.attacher"));
  const src = isObject(spec.source) ? spec.source : {};
  const one = "must specify exactly one of inlineVolumeSpec and persistentVolumeName";
  if (src.inlineVolumeSpec == null && src.persistentVolumeName == null)
    causes.push(field.required("spec.source", one));
  else if (src.inlineVolumeSpec != null && src.persistentVolumeName != null)
    causes.push(field.forbidden("spec.source", one));
  else if (src.persistentVolumeName === "")
    causes.push(
      field.required("spec.source.persistentVolumeName", "must specify non empty persistentVolumeName"),
    );
  causes.push(...subdomain(spec.nodeName, "spec.nodeName"));
  if (!old) {
    if (spec.attacher) causes.push(...driverName(spec.attacher, "spec.attacher"));
    if (src.persistentVolumeName)
      causes.push(...subdomain(src.persistentVolumeName, "spec.source.persistentVolumeName"));
  } else if (!deepEqual(spec, old.spec)) causes.push(field.invalid("spec", spec, "field is immutable"));
  return causes;
}

export function validateCSIStorageCapacity(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true });
  const o = obj as any;
  if (isObject(o.nodeTopology)) causes.push(...validateLabelSelector(o.nodeTopology, "nodeTopology"));
  causes.push(...subdomain(o.storageClassName, "storageClassName"));
  if (o.capacity != null) {
    const v = parseQuantity(o.capacity);
    if (v === undefined || v < 0)
      causes.push(field.invalid("capacity", String(o.capacity), "must be greater than or equal to 0"));
  }
  if (old) {
    const was = old as any;
    if (!deepEqual(o.nodeTopology, was.nodeTopology))
      causes.push(field.invalid("nodeTopology", o.nodeTopology ?? null, "field is immutable"));
    if (o.storageClassName !== was.storageClassName)
      causes.push(field.invalid("storageClassName", o.storageClassName ?? null, "field is immutable"));
  }
  return causes;
}

const flag = (v: unknown, dflt: boolean) => (typeof v === "boolean" ? v : dflt);

export const csidrivers: ResourceDef = {
  group: "storage.k8s.io",
  version: "v1",
  resource: "csidrivers",
  kind: "CSIDriver",
  listKind: "CSIDriverList",
  singular: "csidriver",
  namespaced: false,
  verbs: STANDARD_VERBS,
  strategy: {
    defaults: (obj) => {
      const spec = isObject(obj.spec) ? obj.spec : (obj.spec = {});
      spec.attachRequired ??= true;
      spec.podInfoOnMount ??= false;
      spec.storageCapacity ??= false;
      spec.fsGroupPolicy ??= "ReadWriteOnceWithFSType";
      if (!Array.isArray(spec.volumeLifecycleModes) || !spec.volumeLifecycleModes.length)
        spec.volumeLifecycleModes = ["Persistent"];
      spec.requiresRepublish ??= false;
      spec.seLinuxMount ??= false;
    },
    validate: validateCSIDriver,
    generation: true,
    columns: [
      nameColumn,
      column(
        "AttachRequired",
        "boolean",
        "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume interface which checks the volumeattachment status and waits until the volume is attached before proceeding to mounting. The CSI external-attacher coordinates with CSI volume driver and updates the volumeattachment status when the attach operation is complete. If the CSIDriverRegistry feature gate is enabled and the value is specified to false, the attach operation will be skipped. Otherwise the attach operation will be called.\n\nThis field is immutable.",
        (o) => flag(o.spec?.attachRequired, true),
      ),
      column(
        "PodInfoOnMount",
        "boolean",
        'podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations, if set to true. If set to false, pod information will not be passed on mount. Default is false.\n\nThe CSI driver specifies podInfoOnMount as part of driver deployment. If true, Kubelet will pass pod information as VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is responsible for parsing and validating the information passed in as VolumeContext.\n\nThe following VolumeContext will be passed if podInfoOnMount is set to true. This list might grow, but the prefix will be used. "csi.storage.k8s.io/pod.name": pod.Name "csi.storage.k8s.io/pod.namespace": pod.Namespace "csi.storage.k8s.io/pod.uid": string(pod.UID) "csi.storage.k8s.io/ephemeral": "true" if the volume is an ephemeral inline volume\n                                defined by a CSIVolumeSource, otherwise "false"\n\n"csi.storage.k8s.io/ephemeral" is a new feature in Kubernetes 1.16. It is only required for drivers which support both the "Persistent" and "Ephemeral" VolumeLifecycleMode. Other drivers can leave pod info disabled and/or ignore this field. As Kubernetes 1.15 doesn\'t support this field, drivers can only support one mode when deployed on such a cluster and the deployment determines which mode that is, for example via a command line parameter of the driver.\n\nThis field was immutable in Kubernetes < 1.29 and now is mutable.',
        (o) => flag(o.spec?.podInfoOnMount, false),
      ),
      column(
        "StorageCapacity",
        "boolean",
        "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to true.\n\nThe check can be enabled immediately when deploying a driver. In that case, provisioning new volumes with late binding will pause until the driver deployment has published some suitable CSIStorageCapacity object.\n\nAlternatively, the driver can be deployed with the field unset or false and it can be flipped later when storage capacity information has been published.\n\nThis field was immutable in Kubernetes <= 1.22 and now is mutable.",
        (o) => flag(o.spec?.storageCapacity, false),
      ),
      column(
        "TokenRequests",
        "string",
        'tokenRequests indicates the CSI driver needs pods\' service account tokens it is mounting volume for to do necessary authentication. Kubelet will pass the tokens in VolumeContext in the CSI NodePublishVolume calls. The CSI driver should parse and validate the following VolumeContext: "csi.storage.k8s.io/serviceAccount.tokens": {\n  "<audience>": {\n    "token": <token>,\n    "expirationTimestamp": <expiration timestamp in RFC3339>,\n  },\n  ...\n}\n\nNote: Audience in each TokenRequest should be different and at most one token is empty string. To receive a new token after expiry, RequiresRepublish can be used to trigger NodePublishVolume periodically.',
        (o) =>
          Array.isArray(o.spec?.tokenRequests) && o.spec.tokenRequests.length
            ? o.spec.tokenRequests.map((t: any) => t?.audience ?? "").join(",")
            : "<unset>",
      ),
      column(
        "RequiresRepublish",
        "boolean",
        "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume. This field defaults to false.\n\nNote: After a successful initial NodePublishVolume call, subsequent calls to NodePublishVolume should only update the contents of the volume. New mount points will not be seen by a running container.",
        (o) => flag(o.spec?.requiresRepublish, false),
      ),
      column(
        "Modes",
        "string",
        'volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The default if the list is empty is "Persistent", which is the usage defined by the CSI specification and implemented in Kubernetes via the usual PV/PVC mechanism.\n\nThe other mode is "Ephemeral". In this mode, volumes are defined inline inside the pod spec with CSIVolumeSource and their lifecycle is tied to the lifecycle of that pod. A driver has to be aware of this because it is only going to get a NodePublishVolume call for such a volume.\n\nFor more information about implementing this mode, see https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support one or more of these modes and more modes may be added in the future.\n\nThis field is beta. This field is immutable.',
        (o) =>
          Array.isArray(o.spec?.volumeLifecycleModes) && o.spec.volumeLifecycleModes.length
            ? o.spec.volumeLifecycleModes.join(",")
            : "<none>",
      ),
      ageColumn,
    ],
  },
};

export const csinodes: ResourceDef = {
  group: "storage.k8s.io",
  version: "v1",
  resource: "csinodes",
  kind: "CSINode",
  listKind: "CSINodeList",
  singular: "csinode",
  namespaced: false,
  verbs: STANDARD_VERBS,
  strategy: {
    validate: validateCSINode,
    columns: [
      nameColumn,
      column(
        "Drivers",
        "integer",
        "Drivers indicates the number of CSI drivers registered on the node",
        (o) => (Array.isArray(o.spec?.drivers) ? o.spec.drivers.length : 0),
      ),
      ageColumn,
    ],
  },
};

export const volumeattachments: ResourceDef = {
  group: "storage.k8s.io",
  version: "v1",
  resource: "volumeattachments",
  kind: "VolumeAttachment",
  listKind: "VolumeAttachmentList",
  singular: "volumeattachment",
  namespaced: false,
  verbs: STANDARD_VERBS,
  subresources: { status: { kind: "VolumeAttachment", verbs: ["get", "patch", "update"] } },
  strategy: {
    validate: validateVolumeAttachment,
    prepareForCreate: (obj) => {
      obj.status = { attached: false };
    },
    columns: [
      nameColumn,
      {
        ...column(
          "Attacher",
          "string",
          "attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().",
          (o) => o.spec?.attacher ?? "",
        ),
        format: "name",
      },
      column(
        "PV",
        "string",
        "persistentVolumeName represents the name of the persistent volume to attach.",
        (o) => o.spec?.source?.persistentVolumeName ?? "",
      ),
      column(
        "Node",
        "string",
        "nodeName represents the node that the volume should be attached to.",
        (o) => o.spec?.nodeName ?? "",
      ),
      column(
        "Attached",
        "boolean",
        "attached indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher.",
        (o) => o.status?.attached === true,
      ),
      ageColumn,
    ],
  },
};

/** Upstream serves these with the default table (NAME, CREATED AT). */
export const csistoragecapacities: ResourceDef = {
  group: "storage.k8s.io",
  version: "v1",
  resource: "csistoragecapacities",
  kind: "CSIStorageCapacity",
  listKind: "CSIStorageCapacityList",
  singular: "csistoragecapacity",
  namespaced: true,
  verbs: STANDARD_VERBS,
  strategy: { validate: validateCSIStorageCapacity },
};
