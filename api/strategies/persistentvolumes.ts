// core/v1 persistentvolumes and persistentvolumeclaims: storage and the claims on it, bound
// to each other by the PersistentVolume controller. Upstream's defaults (a volume's reclaim
// policy Retain, both volume modes Filesystem, both phases Pending on create), validation in
// its words (access modes, capacity, exactly one volume source, node affinity, a claim's spec
// immutable but for a bound claim's storage request), the status subresources, and the tables.
import { field, type StatusCause } from "../errors";
import { parseQuantity } from "../quantity";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import { rfc3339 } from "../time";
import type { KubeObject } from "../types";
import { deepEqual, validateLabelSelector, validateMeta } from "../validation/metadata";
import { isDNS1123Label, isDNS1123Subdomain, isQualifiedName } from "../validation/names";
import { ageColumn, column, isObject, nameColumn } from "./common";
import { specDiff } from "./pod-validation";

/** The finalizers that keep a claim while pods use it, and a volume while it is bound. */
export const PVC_PROTECTION = "kubernetes.io/pvc-protection";
export const PV_PROTECTION = "kubernetes.io/pv-protection";

const ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"];
const SHORT_MODES: [string, string][] = [
  ["ReadWriteOnce", "RWO"],
  ["ReadOnlyMany", "ROX"],
  ["ReadWriteMany", "RWX"],
  ["ReadWriteOncePod", "RWOP"],
];
const VOLUME_MODES = ["Block", "Filesystem"];
const RECLAIM_POLICIES = ["Delete", "Recycle", "Retain"];
const HOST_PATH_TYPES = [
  "",
  "BlockDevice",
  "CharDevice",
  "Directory",
  "DirectoryOrCreate",
  "File",
  "FileOrCreate",
  "Socket",
];
/** The persistent volume sources, in the order upstream checks them. */
const SOURCES = [
  "hostPath",
  "gcePersistentDisk",
  "awsElasticBlockStore",
  "glusterfs",
  "flocker",
  "nfs",
  "rbd",
  "quobyte",
  "cephfs",
  "iscsi",
  "cinder",
  "fc",
  "flexVolume",
  "azureFile",
  "vsphereVolume",
  "photonPersistentDisk",
  "portworxVolume",
  "azureDisk",
  "scaleIO",
  "local",
  "storageos",
  "csi",
];
/** Names upstream's messages give the sources where they differ from the JSON field. */
const SOURCE_NAMES: Record<string, string> = { cephfs: "cephFS" };
/** The deprecated annotation that names a claim's or volume's class, over spec.storageClassName. */
export const BETA_CLASS = "volume.beta.kubernetes.io/storage-class";

/** The class a claim asks for or a volume belongs to ("" for none): the beta annotation, else spec.storageClassName. */
export const storageClassOf = (o: KubeObject): string =>
  o.metadata.annotations?.[BETA_CLASS] ?? o.spec?.storageClassName ?? "";

/** The claims a pod uses: its persistentVolumeClaim volumes, and its generic ephemeral ones (<pod>-<volume>). */
export function podClaimNames(pod: KubeObject): string[] {
  const out: string[] = [];
  for (const v of Array.isArray(pod.spec?.volumes) ? pod.spec.volumes : []) {
    if (typeof v?.persistentVolumeClaim?.claimName === "string") out.push(v.persistentVolumeClaim.claimName);
    else if (v?.ephemeral && v.name) out.push(`${pod.metadata.name}-${v.name}`);
  }
  return out;
}

/** Access modes as `kubectl get` shows them: RWO,ROX,RWX,RWOP, each once, in that order. */
export function accessModesCell(modes: unknown): string {
  const set = new Set(Array.isArray(modes) ? modes : []);
  return SHORT_MODES.filter(([m]) => set.has(m))
    .map(([, s]) => s)
    .join(",");
}

function validateAccessModes(modes: unknown, path: string): StatusCause[] {
  const list: string[] = Array.isArray(modes) ? modes : [];
  const causes: StatusCause[] = [];
  for (const m of list) if (!ACCESS_MODES.includes(m)) causes.push(field.notSupported(path, m, ACCESS_MODES));
  if (
    list.includes("ReadWriteOncePod") &&
    list.some((m) => m !== "ReadWriteOncePod" && ACCESS_MODES.includes(m))
  )
    causes.push(field.forbidden(path, "may not use ReadWriteOncePod with other access modes"));
  return causes;
}

function validateClassName(name: unknown, path: string): StatusCause[] {
  if (typeof name !== "string" || !name) return [];
  return isDNS1123Subdomain(name).map((m) => field.invalid(path, name, m));
}

function validateVolumeMode(mode: unknown, path: string): StatusCause[] {
  return mode != null && !VOLUME_MODES.includes(String(mode))
    ? [field.notSupported(path, mode, VOLUME_MODES)]
    : [];
}

function validatePath(p: unknown, path: string): StatusCause[] {
  if (!p) return [field.required(path)];
  return String(p).split("/").includes("..") ? [field.invalid(path, p, "must not contain '..'")] : [];
}

/** The one source a volume must have, checked as upstream checks the common ones. */
function validateSource(spec: any): StatusCause[] {
  const causes: StatusCause[] = [];
  let found = 0;
  for (const s of SOURCES) {
    if (spec[s] == null) continue;
    const name = SOURCE_NAMES[s] ?? s;
    if (found > 0 && s !== "flexVolume") {
      causes.push(field.forbidden(`spec.${name}`, "may not specify more than 1 volume type"));
      continue;
    }
    found++;
    const src = isObject(spec[s]) ? spec[s] : {};
    if (s === "hostPath") {
      const bad = validatePath(src.path, "spec.hostPath.path");
      causes.push(...bad);
      if (src.path && src.type != null && !HOST_PATH_TYPES.includes(src.type))
        causes.push(field.notSupported("spec.hostPath.type", src.type, HOST_PATH_TYPES));
    } else if (s === "local") {
      causes.push(...validatePath(src.path, "spec.local.path"));
      if (!causes.length && spec.nodeAffinity == null)
        causes.push(field.required("spec.nodeAffinity", "Local volume requires node affinity"));
    } else if (s === "nfs") {
      if (!src.server) causes.push(field.required("spec.nfs.server"));
      if (!src.path) causes.push(field.required("spec.nfs.path"));
      if (!String(src.path ?? "").startsWith("/"))
        causes.push(field.invalid("spec.nfs.path", src.path ?? "", "must be an absolute path"));
    } else if (s === "csi") {
      if (!src.driver) causes.push(field.required("spec.csi.driver"));
      else if (String(src.driver).length > 63) causes.push(field.tooLong("spec.csi.driver", 63));
      else
        for (const m of isDNS1123Subdomain(String(src.driver).toLowerCase()))
          causes.push(field.invalid("spec.csi.driver", src.driver, m));
      if (!src.volumeHandle) causes.push(field.required("spec.csi.volumeHandle"));
    }
  }
  if (found === 0) causes.push(field.required("spec", "must specify a volume type"));
  return causes;
}

function validateNodeAffinity(aff: any): StatusCause[] {
  if (aff == null) return [];
  const path = "spec.nodeAffinity.required";
  if (!isObject(aff.required)) return [field.required(path, "must specify required node constraints")];
  const terms: any[] = Array.isArray(aff.required.nodeSelectorTerms) ? aff.required.nodeSelectorTerms : [];
  if (!terms.length)
    return [field.required(`${path}.nodeSelectorTerms`, "must have at least one node selector term")];
  const causes: StatusCause[] = [];
  terms.forEach((t, i) => {
    for (const [list, key] of [
      ["matchExpressions", true],
      ["matchFields", false],
    ] as const)
      (Array.isArray(t?.[list]) ? t[list] : []).forEach((r: any, j: number) => {
        const p = `${path}.nodeSelectorTerms[${i}].${list}[${j}]`;
        const values: unknown[] = Array.isArray(r?.values) ? r.values : [];
        if (r?.operator === "In" || r?.operator === "NotIn") {
          if (!values.length)
            causes.push(
              field.required(`${p}.values`, "must be specified when `operator` is 'In' or 'NotIn'"),
            );
        } else if (r?.operator === "Exists" || r?.operator === "DoesNotExist") {
          if (values.length)
            causes.push(
              field.forbidden(
                `${p}.values`,
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
              ),
            );
        } else if (r?.operator === "Gt" || r?.operator === "Lt") {
          if (values.length !== 1)
            causes.push(
              field.required(`${p}.values`, "must be specified single value when `operator` is 'Lt' or 'Gt'"),
            );
        } else
          causes.push(field.invalid(`${p}.operator`, r?.operator ?? "", "not a valid selector operator"));
        if (key)
          for (const m of isQualifiedName(String(r?.key ?? "")))
            causes.push(field.invalid(`${p}.key`, r?.key, m));
      });
  });
  return causes;
}

function validateCapacity(capacity: unknown): StatusCause[] {
  const cap = isObject(capacity) ? capacity : {};
  const keys = Object.keys(cap);
  const causes: StatusCause[] = [];
  if (!keys.length) causes.push(field.required("spec.capacity"));
  if (!("storage" in cap) || keys.length > 1)
    causes.push(field.notSupported("spec.capacity", keys.length ? cap : null, ["storage"]));
  for (const k of keys) {
    const v = parseQuantity(cap[k]);
    if (v === undefined || v < 0)
      causes.push(field.invalid(`spec.capacity[${k}]`, cap[k], "must be a valid resource quantity"));
    else if (v <= 0)
      causes.push(field.invalid(`spec.capacity[${k}]`, String(cap[k]), "must be greater than zero"));
  }
  return causes;
}

export function validatePersistentVolume(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: false });
  const spec = isObject(obj.spec) ? obj.spec : {};
  const modes = spec.accessModes;
  if (!Array.isArray(modes) || !modes.length) causes.push(field.required("spec.accessModes"));
  causes.push(...validateAccessModes(modes, "spec.accessModes"));
  causes.push(...validateCapacity(spec.capacity));
  if (spec.persistentVolumeReclaimPolicy && !RECLAIM_POLICIES.includes(spec.persistentVolumeReclaimPolicy))
    causes.push(
      field.notSupported(
        "spec.persistentVolumeReclaimPolicy",
        spec.persistentVolumeReclaimPolicy,
        RECLAIM_POLICIES,
      ),
    );
  causes.push(...validateNodeAffinity(spec.nodeAffinity));
  causes.push(...validateSource(spec));
  causes.push(...validateClassName(spec.storageClassName, "spec.storageClassName"));
  causes.push(...validateVolumeMode(spec.volumeMode, "spec.volumeMode"));
  if (old && isObject(old.spec)) {
    const source = (s: any) => Object.fromEntries(SOURCES.filter((k) => s[k] != null).map((k) => [k, s[k]]));
    if (!deepEqual(source(spec), source(old.spec)))
      causes.push(
        field.forbidden(
          "spec.persistentvolumesource",
          `spec.persistentvolumesource is immutable after creation\n${specDiff(source(old.spec), source(spec), "core.PersistentVolumeSource")}`,
        ),
      );
    if ((spec.volumeMode ?? null) !== (old.spec.volumeMode ?? null))
      causes.push(field.invalid("volumeMode", spec.volumeMode ?? null, "field is immutable"));
    if (old.spec.nodeAffinity != null && !deepEqual(spec.nodeAffinity, old.spec.nodeAffinity))
      causes.push(
        field.invalid(
          "nodeAffinity",
          spec.nodeAffinity ?? null,
          "field is immutable, except for updating from beta label to GA",
        ),
      );
  }
  return causes;
}

/** spec.resources.requests.storage: required and above zero (reported at spec.resources[storage]). */
function validateRequest(spec: any): StatusCause[] {
  const path = "spec.resources[storage]";
  const q = spec.resources?.requests?.storage;
  if (q == null) return [field.required(path)];
  const v = parseQuantity(q);
  if (v === undefined || v < 0) return [field.invalid(path, q, "must be a valid resource quantity")];
  return v <= 0 ? [field.invalid(path, String(q), "must be greater than zero")] : [];
}

function validateDataSource(ds: any, path: string): StatusCause[] {
  if (!isObject(ds)) return [];
  const causes: StatusCause[] = [];
  if (!ds.name) causes.push(field.required(`${path}.name`));
  if (!ds.kind) causes.push(field.required(`${path}.kind`));
  if (!ds.apiGroup && ds.kind && ds.kind !== "PersistentVolumeClaim")
    causes.push(
      field.invalid(path, ds.kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"),
    );
  else if (ds.apiGroup)
    for (const m of isDNS1123Subdomain(ds.apiGroup))
      causes.push(field.invalid(`${path}.apiGroup`, ds.apiGroup, m));
  if (ds.namespace)
    for (const m of isDNS1123Label(ds.namespace))
      causes.push(field.invalid(`${path}.namespace`, ds.namespace, m));
  return causes;
}

function validateClaimSpec(spec: any): StatusCause[] {
  const causes: StatusCause[] = [];
  const modes = spec.accessModes;
  if (!Array.isArray(modes) || !modes.length)
    causes.push(field.required("spec.accessModes", "at least 1 access mode is required"));
  if (isObject(spec.selector)) causes.push(...validateLabelSelector(spec.selector, "spec.selector"));
  causes.push(...validateAccessModes(modes, "spec.accessModes"));
  causes.push(...validateRequest(spec));
  causes.push(...validateClassName(spec.storageClassName, "spec.storageClassName"));
  causes.push(...validateVolumeMode(spec.volumeMode, "spec.volumeMode"));
  causes.push(...validateDataSource(spec.dataSource, "spec.dataSource"));
  causes.push(...validateDataSource(spec.dataSourceRef, "spec.dataSourceRef"));
  const ds = spec.dataSource;
  const ref = spec.dataSourceRef;
  if (isObject(ref) && ref.namespace && isObject(ds))
    causes.push(
      field.invalid(
        "spec",
        "spec.dataSource",
        "may not be specified when dataSourceRef.namespace is specified",
      ),
    );
  else if (
    isObject(ds) &&
    isObject(ref) &&
    (ds.apiGroup ?? "") + ds.kind + ds.name !== (ref.apiGroup ?? "") + ref.kind + ref.name
  )
    causes.push(field.invalid("spec", "spec.dataSource", "must match dataSourceRef"));
  return causes;
}

/** What a claim update may change: volumeName once, the class once (nil to a name), a bound claim's request. */
function claimUpdateCauses(obj: KubeObject, old: KubeObject): StatusCause[] {
  const spec = { ...obj.spec };
  const was = { ...old.spec };
  const causes: StatusCause[] = [];
  if (!was.volumeName) was.volumeName = spec.volumeName;
  if (was.storageClassName == null) was.storageClassName = spec.storageClassName;
  const bound = old.status?.phase === "Bound";
  const request = (s: any) => s.resources?.requests?.storage;
  if (bound) {
    const newer = parseQuantity(request(spec)) ?? 0;
    const capacity = parseQuantity(old.status?.capacity?.storage);
    if (newer < (parseQuantity(request(was)) ?? 0) && capacity !== undefined && newer < capacity)
      causes.push(
        field.forbidden("spec.resources.requests.storage", "field can not be less than status.capacity"),
      );
    spec.resources = was.resources;
  }
  if ((spec.volumeMode ?? null) !== (was.volumeMode ?? null))
    causes.push(field.invalid("volumeMode", spec.volumeMode ?? null, "field is immutable"));
  spec.volumeMode = was.volumeMode;
  if (!deepEqual(spec, was))
    causes.unshift(
      field.forbidden(
        "spec",
        `spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n${specDiff(was, spec, "core.PersistentVolumeClaimSpec")}`,
      ),
    );
  return causes;
}

export function validatePersistentVolumeClaim(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true });
  const spec = isObject(obj.spec) ? obj.spec : {};
  causes.push(...validateClaimSpec(spec));
  if (old) causes.push(...claimUpdateCauses(obj, old));
  return causes;
}

/** A class named by the deprecated beta annotation warns, as upstream. */
function betaClassWarnings(obj: KubeObject): string[] {
  return obj.metadata.annotations?.[BETA_CLASS] !== undefined
    ? [`metadata.annotations[${BETA_CLASS}]: deprecated since v1.8; use "storageClassName" attribute instead`]
    : [];
}

const phaseCell = (o: KubeObject) => (o.metadata.deletionTimestamp ? "Terminating" : (o.status?.phase ?? ""));
const unset = (v: unknown) => (v == null ? "<unset>" : String(v));
const PHASE_ONLY = { kind: "", verbs: ["get", "patch", "update"] };

export const persistentvolumes: ResourceDef = {
  group: "",
  version: "v1",
  resource: "persistentvolumes",
  kind: "PersistentVolume",
  listKind: "PersistentVolumeList",
  singular: "persistentvolume",
  namespaced: false,
  shortNames: ["pv"],
  verbs: STANDARD_VERBS,
  subresources: { status: { ...PHASE_ONLY, kind: "PersistentVolume" } },
  strategy: {
    defaults: (obj) => {
      const spec = isObject(obj.spec) ? obj.spec : (obj.spec = {});
      spec.persistentVolumeReclaimPolicy ||= "Retain";
      spec.volumeMode ??= "Filesystem";
      if (isObject(spec.hostPath)) spec.hostPath.type ??= "";
      if (isObject(obj.status) && !obj.status.phase) obj.status.phase = "Pending";
    },
    prepareForCreate: (obj) => {
      obj.status = { phase: "Pending", lastPhaseTransitionTime: rfc3339(Date.now()) };
    },
    prepareForStatusUpdate: (obj, old) => {
      const status = isObject(obj.status) ? obj.status : (obj.status = {});
      const was = old.status ?? {};
      if (status.phase === was.phase) status.lastPhaseTransitionTime ??= was.lastPhaseTransitionTime;
      else if (
        !status.lastPhaseTransitionTime ||
        status.lastPhaseTransitionTime === was.lastPhaseTransitionTime
      )
        status.lastPhaseTransitionTime = rfc3339(Date.now());
      if (status.lastPhaseTransitionTime == null) delete status.lastPhaseTransitionTime;
    },
    validate: validatePersistentVolume,
    warningsOnCreate: betaClassWarnings,
    columns: [
      nameColumn,
      column(
        "Capacity",
        "string",
        "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity",
        (o) => String(o.spec?.capacity?.storage ?? "0"),
      ),
      column(
        "Access Modes",
        "string",
        "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes",
        (o) => accessModesCell(o.spec?.accessModes),
      ),
      column(
        "Reclaim Policy",
        "string",
        "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming",
        (o) => o.spec?.persistentVolumeReclaimPolicy ?? "",
      ),
      column(
        "Status",
        "string",
        "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase",
        phaseCell,
      ),
      column(
        "Claim",
        "string",
        "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding",
        (o) => (o.spec?.claimRef ? `${o.spec.claimRef.namespace ?? ""}/${o.spec.claimRef.name ?? ""}` : ""),
      ),
      column("StorageClass", "string", "StorageClass of the pv", storageClassOf),
      column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv", (o) =>
        unset(o.spec?.volumeAttributesClassName),
      ),
      column(
        "Reason",
        "string",
        "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.",
        (o) => o.status?.reason ?? "",
      ),
      ageColumn,
      column(
        "VolumeMode",
        "string",
        "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec.",
        (o) => unset(o.spec?.volumeMode),
        1,
      ),
    ],
  },
};

export const persistentvolumeclaims: ResourceDef = {
  group: "",
  version: "v1",
  resource: "persistentvolumeclaims",
  kind: "PersistentVolumeClaim",
  listKind: "PersistentVolumeClaimList",
  singular: "persistentvolumeclaim",
  namespaced: true,
  shortNames: ["pvc"],
  verbs: STANDARD_VERBS,
  subresources: { status: { ...PHASE_ONLY, kind: "PersistentVolumeClaim" } },
  strategy: {
    defaults: (obj) => {
      const spec = isObject(obj.spec) ? obj.spec : (obj.spec = {});
      spec.volumeMode ??= "Filesystem";
      if (isObject(obj.status) && !obj.status.phase) obj.status.phase = "Pending";
    },
    prepareForCreate: (obj) => {
      obj.status = { phase: "Pending" };
    },
    validate: validatePersistentVolumeClaim,
    warningsOnCreate: betaClassWarnings,
    columns: [
      nameColumn,
      column("Status", "string", "phase represents the current phase of PersistentVolumeClaim.", phaseCell),
      column(
        "Volume",
        "string",
        "volumeName is the binding reference to the PersistentVolume backing this claim.",
        (o) => o.spec?.volumeName ?? "",
      ),
      column(
        "Capacity",
        "string",
        "capacity represents the actual resources of the underlying volume.",
        (o) => (o.spec?.volumeName ? String(o.status?.capacity?.storage ?? "0") : ""),
      ),
      column(
        "Access Modes",
        "string",
        "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1",
        (o) => (o.spec?.volumeName ? accessModesCell(o.status?.accessModes) : ""),
      ),
      column("StorageClass", "string", "StorageClass of the pvc", storageClassOf),
      column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc", (o) =>
        unset(o.spec?.volumeAttributesClassName),
      ),
      ageColumn,
      column(
        "VolumeMode",
        "string",
        "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.",
        (o) => unset(o.spec?.volumeMode),
        1,
      ),
    ],
  },
};
