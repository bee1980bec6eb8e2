// core/v1 nodes.

import { field } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { validateMeta } from "../validation/metadata";
import { isQualifiedName } from "../validation/names";
import { ageColumn, column, isObject, nameColumn } from "./common";
import { nodeCIDRs, pairPodCIDRs, validatePodCIDRs } from "./node-cidrs";

const TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

function nodeStatus(o: KubeObject): string {
  const conds: any[] = Array.isArray(o.status?.conditions) ? o.status.conditions : [];
  const ready = conds.find((c) => c?.type === "Ready");
  const parts = [ready ? (ready.status === "True" ? "Ready" : "NotReady") : "Unknown"];
  if (o.spec?.unschedulable) parts.push("SchedulingDisabled");
  return parts.join(",");
}

/** Roles from node-role.kubernetes.io/<role> labels and the kubernetes.io/role label. */
export function nodeRoles(o: KubeObject): string {
  const roles = new Set<string>();
  for (const [k, v] of Object.entries(o.metadata?.labels ?? {})) {
    if (k.startsWith("node-role.kubernetes.io/")) {
      const role = k.slice("node-role.kubernetes.io/".length);
      if (role) roles.add(role);
    } else if (k === "kubernetes.io/role" && v) roles.add(v);
  }
  return roles.size ? [...roles].sort().join(",") : "<none>";
}

const address = (o: KubeObject, type: string) =>
  (Array.isArray(o.status?.addresses) ? o.status.addresses : []).find((a: any) => a?.type === type)
    ?.address ?? "<none>";
const info = (o: KubeObject, key: string) => o.status?.nodeInfo?.[key] || "<unknown>";

export const nodes: ResourceDef = {
  group: "",
  version: "v1",
  resource: "nodes",
  kind: "Node",
  listKind: "NodeList",
  singular: "node",
  namespaced: false,
  shortNames: ["no"],
  verbs: STANDARD_VERBS,
  subresources: {
    proxy: { kind: "NodeProxyOptions", verbs: ["create", "delete", "get", "patch", "update"] },
    status: { kind: "Node", verbs: ["get", "patch", "update"] },
  },
  strategy: {
    defaults: (obj) => {
      const status = obj.status;
      if (isObject(status) && isObject(status.capacity) && !isObject(status.allocatable))
        status.allocatable = { ...status.capacity };
      pairPodCIDRs(obj);
    },
    // Unlike other kinds with a status subresource, a Node keeps the status it is created with
    // (the kubelet registers its node with capacity, addresses and conditions filled in), as
    // upstream's node strategy does. Only the retired dynamic kubelet config is dropped.
    prepareForCreate: (obj) => {
      if (isObject(obj.spec)) delete obj.spec.configSource;
      if (isObject(obj.status)) delete obj.status.config;
    },
    prepareForUpdate: (obj, old) => {
      if (isObject(obj.spec) && !isObject(old.spec?.configSource)) delete obj.spec.configSource;
    },
    validate: (obj, old) => {
      const causes = validateMeta(obj, old, { namespaced: false });
      causes.push(...validatePodCIDRs(obj, old));
      const taints = Array.isArray(obj.spec?.taints) ? obj.spec.taints : [];
      taints.forEach((t: any, i: number) => {
        const p = `spec.taints[${i}]`;
        if (!t?.key) causes.push(field.required(`${p}.key`));
        else for (const msg of isQualifiedName(t.key)) causes.push(field.invalid(`${p}.key`, t.key, msg));
        if (!t?.effect) causes.push(field.required(`${p}.effect`));
        else if (!TAINT_EFFECTS.includes(t.effect))
          causes.push(field.notSupported(`${p}.effect`, t.effect, TAINT_EFFECTS));
      });
      return causes;
    },
    columns: [
      nameColumn,
      column("Status", "string", "The status of the node", nodeStatus),
      column("Roles", "string", "The roles of the node", nodeRoles),
      ageColumn,
      column(
        "Version",
        "string",
        "Deprecated: KubeletVersion reported by the node. For non-kubelet nodes, this field is not guaranteed to be accurate.",
        (o) => o.status?.nodeInfo?.kubeletVersion ?? "",
      ),
      column(
        "Internal-IP",
        "string",
        "List of addresses reachable to the node.",
        (o) => address(o, "InternalIP"),
        1,
      ),
      column(
        "External-IP",
        "string",
        "List of addresses reachable to the node.",
        (o) => address(o, "ExternalIP"),
        1,
      ),
      column(
        "OS-Image",
        "string",
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
        (o) => info(o, "osImage"),
        1,
      ),
      column(
        "Kernel-Version",
        "string",
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
        (o) => info(o, "kernelVersion"),
        1,
      ),
      column(
        "Container-Runtime",
        "string",
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
        (o) => info(o, "containerRuntimeVersion"),
        1,
      ),
    ],
    fields: (o) => ({ "spec.unschedulable": String(o.spec?.unschedulable === true) }),
    // no two Nodes share pod addresses (node-cidrs.ts)
    allocator: nodeCIDRs,
    generation: false,
  },
};
