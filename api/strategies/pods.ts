// core/v1 pods.

import { field, type StatusCause } from "../errors";
import { parseQuantity } from "../quantity";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { ensureObject, isObject } from "./common";
import { defaultPod } from "./pod-defaults";
import { ephemeralOnCreate, validateEphemeralUpdate } from "./pod-ephemeral";
import { podColumns } from "./pod-table";
import { validatePod, validatePodUpdate } from "./pod-validation";

const QOS_RESOURCES = ["cpu", "memory"];

/** Upstream's GetPodQOS: Guaranteed, Burstable or BestEffort from cpu/memory requests and limits. */
export function podQOSClass(pod: KubeObject): "Guaranteed" | "Burstable" | "BestEffort" {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const requests = new Map<string, number>();
  const limits = new Map<string, number>();
  let guaranteed = true;
  const containers = [
    ...(Array.isArray(spec.initContainers) ? spec.initContainers : []),
    ...(Array.isArray(spec.containers) ? spec.containers : []),
  ];
  for (const c of containers) {
    const res = isObject(c?.resources) ? c.resources : {};
    for (const [name, q] of Object.entries(isObject(res.requests) ? res.requests : {})) {
      if (!QOS_RESOURCES.includes(name)) continue;
      const v = parseQuantity(q) ?? 0;
      if (v !== 0) requests.set(name, (requests.get(name) ?? 0) + v);
    }
    const found = new Set<string>();
    for (const [name, q] of Object.entries(isObject(res.limits) ? res.limits : {})) {
      if (!QOS_RESOURCES.includes(name)) continue;
      const v = parseQuantity(q) ?? 0;
      if (v !== 0) {
        found.add(name);
        limits.set(name, (limits.get(name) ?? 0) + v);
      }
    }
    if (!QOS_RESOURCES.every((r) => found.has(r))) guaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return "BestEffort";
  if (guaranteed) {
    for (const [name, v] of requests) if (limits.get(name) !== v) guaranteed = false;
  }
  return guaranteed && requests.size === limits.size ? "Guaranteed" : "Burstable";
}

/** ValidatePodBinding: a Binding (pods/binding) must name a Node. */
export function validatePodBinding(binding: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const target = isObject(binding.target) ? binding.target : {};
  if (target.kind && target.kind !== "Node")
    causes.push(field.notSupported("target.kind", target.kind, ["Node", "<empty>"]));
  if (!target.name) causes.push(field.required("target.name"));
  return causes;
}

export const pods: ResourceDef = {
  group: "",
  version: "v1",
  resource: "pods",
  kind: "Pod",
  listKind: "PodList",
  singular: "pod",
  namespaced: true,
  shortNames: ["po"],
  categories: ["all"],
  verbs: STANDARD_VERBS,
  subresources: {
    attach: { kind: "PodAttachOptions", verbs: ["create", "get"] },
    binding: { kind: "Binding", verbs: ["create"] },
    ephemeralcontainers: { kind: "Pod", verbs: ["get", "patch", "update"] },
    eviction: { kind: "Eviction", group: "policy", version: "v1", verbs: ["create"] },
    exec: { kind: "PodExecOptions", verbs: ["create", "get"] },
    log: { kind: "Pod", verbs: ["get"] },
    portforward: { kind: "PodPortForwardOptions", verbs: ["create", "get"] },
    proxy: { kind: "PodProxyOptions", verbs: ["create", "delete", "get", "patch", "update"] },
    status: { kind: "Pod", verbs: ["get", "patch", "update"] },
  },
  strategy: {
    defaults: defaultPod,
    validate: (obj, old) =>
      old ? validatePodUpdate(obj, old) : [...validatePod(obj), ...ephemeralOnCreate(obj.spec)],
    validateSubresource: { ephemeralcontainers: validateEphemeralUpdate },
    columns: podColumns,
    generation: false,
    fields: (o) => {
      const ips = Array.isArray(o.status?.podIPs) ? o.status.podIPs : [];
      return {
        "spec.nodeName": o.spec?.nodeName ?? "",
        "spec.restartPolicy": o.spec?.restartPolicy ?? "",
        "spec.schedulerName": o.spec?.schedulerName ?? "",
        "spec.serviceAccountName": o.spec?.serviceAccountName ?? "",
        "spec.hostNetwork": String(o.spec?.hostNetwork === true),
        "status.phase": o.status?.phase ?? "",
        "status.podIP": ips[0]?.ip ?? o.status?.podIP ?? "",
        "status.nominatedNodeName": o.status?.nominatedNodeName ?? "",
      };
    },
    prepareForCreate: (obj) => {
      ensureObject(obj, "spec");
      // spec.priority and preemptionPolicy are the Priority admission plugin's (workers/admission/priority.ts)
      obj.status = { phase: "Pending", qosClass: podQOSClass(obj) };
    },
  },
};

/**
 * core/v1 bindings: the older way to bind a pod (POST a Binding named after the pod to the
 * namespace's bindings), served as upstream still serves it, beside pods/binding.
 */
export const bindings: ResourceDef = {
  group: "",
  version: "v1",
  resource: "bindings",
  kind: "Binding",
  listKind: "BindingList",
  singular: "binding",
  namespaced: true,
  verbs: ["create"],
  strategy: { generation: false },
};
