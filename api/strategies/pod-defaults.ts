// Upstream's SetDefaults for pods and pod templates (pkg/apis/core/v1/defaults.go plus
// the generated defaulters that walk containers, probes, volumes).

import type { KubeObject } from "../types";
import { dropZeroTimestamp, ensureObject, isObject } from "./common";

const DEFAULT_MODE = 0o644; // 420

/** The tag of an image reference the way the docker reference parser sees it ("latest" when absent). */
export function imageTag(image: string): string {
  if (image.includes("@")) {
    const beforeDigest = image.slice(0, image.indexOf("@"));
    const slash = beforeDigest.lastIndexOf("/");
    const colon = beforeDigest.lastIndexOf(":");
    return colon > slash ? beforeDigest.slice(colon + 1) : "";
  }
  const slash = image.lastIndexOf("/");
  const colon = image.lastIndexOf(":");
  return colon > slash ? image.slice(colon + 1) : "latest";
}

function defaultHandler(h: any): void {
  if (!isObject(h)) return;
  if (isObject(h.httpGet)) {
    if (!h.httpGet.path) h.httpGet.path = "/";
    if (!h.httpGet.scheme) h.httpGet.scheme = "HTTP";
  }
}

function defaultProbe(p: any): void {
  if (!isObject(p)) return;
  if (!p.timeoutSeconds) p.timeoutSeconds = 1;
  if (!p.periodSeconds) p.periodSeconds = 10;
  if (!p.successThreshold) p.successThreshold = 1;
  if (!p.failureThreshold) p.failureThreshold = 3;
  defaultHandler(p);
  if (isObject(p.grpc) && (p.grpc.service === undefined || p.grpc.service === null)) p.grpc.service = "";
}

function defaultEnv(env: any[]): void {
  for (const e of env) {
    const fieldRef = e?.valueFrom?.fieldRef;
    if (isObject(fieldRef) && !fieldRef.apiVersion) fieldRef.apiVersion = "v1";
  }
}

export function defaultContainer(c: any, hostNetwork: boolean): void {
  if (!isObject(c)) return;
  if (!c.imagePullPolicy) {
    // an unparsable or empty image reads as "no tag": IfNotPresent, as upstream
    const image = typeof c.image === "string" ? c.image : "";
    c.imagePullPolicy = image && imageTag(image) === "latest" ? "Always" : "IfNotPresent";
  }
  if (!c.terminationMessagePath) c.terminationMessagePath = "/dev/termination-log";
  if (!c.terminationMessagePolicy) c.terminationMessagePolicy = "File";
  if (!isObject(c.resources)) c.resources = {};
  if (Array.isArray(c.ports)) {
    for (const p of c.ports) {
      if (!isObject(p)) continue;
      if (!p.protocol) p.protocol = "TCP";
      if (hostNetwork && !p.hostPort && p.containerPort) p.hostPort = p.containerPort;
    }
  }
  if (Array.isArray(c.env)) defaultEnv(c.env);
  defaultProbe(c.livenessProbe);
  defaultProbe(c.readinessProbe);
  defaultProbe(c.startupProbe);
  if (isObject(c.lifecycle)) {
    defaultHandler(c.lifecycle.postStart);
    defaultHandler(c.lifecycle.preStop);
  }
}

const VOLUME_SOURCES = [
  "hostPath",
  "emptyDir",
  "gcePersistentDisk",
  "awsElasticBlockStore",
  "gitRepo",
  "secret",
  "nfs",
  "iscsi",
  "glusterfs",
  "persistentVolumeClaim",
  "rbd",
  "flexVolume",
  "cinder",
  "cephfs",
  "flocker",
  "downwardAPI",
  "fc",
  "azureFile",
  "configMap",
  "vsphereVolume",
  "quobyte",
  "azureDisk",
  "photonPersistentDisk",
  "projected",
  "portworxVolume",
  "scaleIO",
  "storageos",
  "csi",
  "ephemeral",
  "image",
];

export const volumeSourceKeys = (v: Record<string, any>) =>
  VOLUME_SOURCES.filter((k) => v[k] !== undefined && v[k] !== null);

function defaultItemsFieldRefs(items: unknown): void {
  if (!Array.isArray(items)) return;
  for (const it of items)
    if (isObject(it?.fieldRef) && !it.fieldRef.apiVersion) it.fieldRef.apiVersion = "v1";
}

export function defaultVolume(v: any): void {
  if (!isObject(v)) return;
  if (volumeSourceKeys(v).length === 0) v.emptyDir = {};
  if (isObject(v.secret) && v.secret.defaultMode === undefined) v.secret.defaultMode = DEFAULT_MODE;
  if (isObject(v.configMap) && v.configMap.defaultMode === undefined) v.configMap.defaultMode = DEFAULT_MODE;
  if (isObject(v.downwardAPI)) {
    if (v.downwardAPI.defaultMode === undefined) v.downwardAPI.defaultMode = DEFAULT_MODE;
    defaultItemsFieldRefs(v.downwardAPI.items);
  }
  if (isObject(v.projected)) {
    if (v.projected.defaultMode === undefined) v.projected.defaultMode = DEFAULT_MODE;
    for (const s of Array.isArray(v.projected.sources) ? v.projected.sources : []) {
      if (isObject(s?.serviceAccountToken) && s.serviceAccountToken.expirationSeconds === undefined)
        s.serviceAccountToken.expirationSeconds = 3600;
      if (isObject(s?.downwardAPI)) defaultItemsFieldRefs(s.downwardAPI.items);
    }
  }
  if (isObject(v.hostPath) && v.hostPath.type === undefined) v.hostPath.type = "";
  if (isObject(v.iscsi)) {
    if (!v.iscsi.iscsiInterface) v.iscsi.iscsiInterface = "default";
  }
  if (isObject(v.azureDisk)) {
    const d = v.azureDisk;
    if (d.cachingMode === undefined) d.cachingMode = "ReadWrite";
    if (d.kind === undefined) d.kind = "Shared";
    if (d.fsType === undefined) d.fsType = "ext4";
    if (d.readOnly === undefined) d.readOnly = false;
  }
}

/** SetDefaults_PodSpec and the generated walk over its parts. */
export function defaultPodSpec(spec: Record<string, any>, isPod = false): void {
  if (!spec.dnsPolicy) spec.dnsPolicy = "ClusterFirst";
  if (!spec.restartPolicy) spec.restartPolicy = "Always";
  if (!isObject(spec.securityContext)) spec.securityContext = {};
  if (spec.terminationGracePeriodSeconds === undefined || spec.terminationGracePeriodSeconds === null)
    spec.terminationGracePeriodSeconds = 30;
  if (!spec.schedulerName) spec.schedulerName = "default-scheduler";
  // v1 carries the deprecated serviceAccount alongside serviceAccountName.
  if (!spec.serviceAccountName && spec.serviceAccount) spec.serviceAccountName = spec.serviceAccount;
  if (spec.serviceAccountName) spec.serviceAccount = spec.serviceAccountName;
  // host ports follow container ports with hostNetwork, for pods only (not templates) in 1.32
  const hostNetwork = isPod && spec.hostNetwork === true;
  for (const key of ["initContainers", "containers", "ephemeralContainers"]) {
    if (Array.isArray(spec[key])) for (const c of spec[key]) defaultContainer(c, hostNetwork);
  }
  if (Array.isArray(spec.volumes)) for (const v of spec.volumes) defaultVolume(v);
}

/** A Pod's own defaults: SetDefaults_Pod on top of the spec's. */
export function defaultPod(obj: KubeObject): void {
  const spec = ensureObject(obj, "spec");
  defaultPodSpec(spec, true);
  for (const key of ["initContainers", "containers"]) {
    if (!Array.isArray(spec[key])) continue;
    for (const c of spec[key]) {
      if (!isObject(c) || !isObject(c.resources) || !isObject(c.resources.limits)) continue;
      const requests = isObject(c.resources.requests) ? c.resources.requests : {};
      for (const [k, v] of Object.entries(c.resources.limits)) if (!(k in requests)) requests[k] = v;
      c.resources.requests = requests;
    }
  }
  if (spec.enableServiceLinks === undefined || spec.enableServiceLinks === null)
    spec.enableServiceLinks = true;
}

/** Defaults for a pod template inside a workload (`spec.template`). */
export function defaultTemplate(template: unknown): void {
  if (!isObject(template)) return;
  dropZeroTimestamp(template);
  defaultPodSpec(ensureObject(template, "spec"));
}
