// The NodeRestriction admission check (upstream's plugin, as a function): what the Node
// authorizer lets every node do is narrowed here to the node's own objects. A node may only
// create/modify its own Node (no taint changes, no labels outside the kubelet's set), create
// and delete mirror pods bound to itself, update the status of pods bound to itself, evict
// its own pods, use its own Lease, and request tokens bound to its own pods.
import { forbidden, notFound, qualifiedResource } from "../../api/errors";
import { lookupGVR } from "../../api/registry";
import type { KubeObject } from "../../api/types";
import type { UserInfo } from "../../api/user";
import type { Env } from "../../durable-objects/env";
import { Store } from "../../durable-objects/store/client";
import { NODE_LEASE_NAMESPACE, nodeIdentity } from "./node";
import { podConfigMapNames, podSecretNames } from "./node-graph";

export type AdmissionOperation = "CREATE" | "UPDATE" | "DELETE" | "CONNECT";

export interface NodeRestrictionContext {
  /** API group of the resource ("" for core) */
  apiGroup?: string;
  /** the name in the request path (delete, subresources) */
  name?: string;
  namespace?: string;
  /** reads pods and nodes when the check needs them (deletes, evictions, tokens, mirror pods) */
  env?: Env;
  /** overrides the store reads (tests) */
  getObject?: (
    resource: "pods" | "nodes",
    namespace: string,
    name: string,
  ) => Promise<KubeObject | undefined>;
}

const MIRROR_ANNOTATION = "kubernetes.io/config.mirror";
const KUBELET_LABELS = new Set([
  "kubernetes.io/hostname",
  "topology.kubernetes.io/zone",
  "topology.kubernetes.io/region",
  "failure-domain.beta.kubernetes.io/zone",
  "failure-domain.beta.kubernetes.io/region",
  "beta.kubernetes.io/instance-type",
  "node.kubernetes.io/instance-type",
  "kubernetes.io/os",
  "kubernetes.io/arch",
  "beta.kubernetes.io/os",
  "beta.kubernetes.io/arch",
]);
const KUBELET_LABEL_NAMESPACES = ["kubelet.kubernetes.io", "node.kubernetes.io"];
const NODE_RESTRICTION_NAMESPACE = "node-restriction.kubernetes.io";

const labelNamespace = (key: string) => (key.includes("/") ? key.slice(0, key.indexOf("/")) : "");
const inDomain = (ns: string, domain: string) => ns === domain || ns.endsWith(`.${domain}`);

export function isKubeletLabel(key: string): boolean {
  if (KUBELET_LABELS.has(key)) return true;
  const ns = labelNamespace(key);
  return KUBELET_LABEL_NAMESPACES.some((d) => inDomain(ns, d));
}

/** Keys added, removed or changed between two label maps. */
export function modifiedLabels(a: Record<string, string> = {}, b: Record<string, string> = {}): string[] {
  const out = new Set<string>();
  for (const [k, v] of Object.entries(a)) if (!Object.hasOwn(b, k) || b[k] !== v) out.add(k);
  for (const [k, v] of Object.entries(b)) if (!Object.hasOwn(a, k) || a[k] !== v) out.add(k);
  return [...out];
}

/** The labels a node may not set: node-restriction.kubernetes.io/*, and k8s.io/kubernetes.io ones not the kubelet's. */
export function forbiddenNodeLabels(keys: string[]): string[] {
  const out = new Set<string>();
  for (const key of keys) {
    const ns = labelNamespace(key);
    if (inDomain(ns, NODE_RESTRICTION_NAMESPACE)) out.add(key);
    const k8s = inDomain(ns, "kubernetes.io") || inDomain(ns, "k8s.io");
    if (k8s && !isKubeletLabel(key)) out.add(key);
  }
  return [...out].sort();
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

async function fetchObject(
  ctx: NodeRestrictionContext,
  resource: "pods" | "nodes",
  namespace: string,
  name: string,
) {
  if (ctx.getObject) return ctx.getObject(resource, namespace, name);
  if (!ctx.env) return undefined;
  const def = lookupGVR("", "v1", resource);
  return def ? new Store(ctx.env, def).find(namespace, name) : undefined;
}

/**
 * Throws a 403 StatusError (upstream's messages) when a node oversteps; returns for
 * everyone else. `obj` is the object being written (undefined on delete), `old` the stored one.
 */
export async function nodeRestriction(
  user: UserInfo,
  operation: AdmissionOperation,
  resource: string,
  subresource: string,
  obj: KubeObject | undefined,
  old: KubeObject | undefined,
  ctx: NodeRestrictionContext = {},
): Promise<void> {
  const [node, isNode] = nodeIdentity(user);
  if (!isNode) return;
  const group = ctx.apiGroup ?? "";
  const gr = { group, resource };
  // upstream's admission.NewForbidden: the request's name (a delete, a subresource), else the
  // object's name or generateName, else "Unknown"
  const objName = ctx.name || obj?.metadata?.name || obj?.metadata?.generateName || "Unknown";
  const deny = (msg: string) =>
    forbidden(`${qualifiedResource(gr)} ${JSON.stringify(objName)} is forbidden: ${msg}`, {
      name: objName,
      group: group || undefined,
      kind: resource,
    });
  if (!node) throw deny(`could not determine node from user ${JSON.stringify(user.name)}`);
  const namespace = ctx.namespace ?? obj?.metadata?.namespace ?? old?.metadata?.namespace ?? "";
  const q = JSON.stringify(node);

  const existingPod = async (name: string) => {
    const pod = old && old.metadata?.name === name ? old : await fetchObject(ctx, "pods", namespace, name);
    if (!pod) throw notFound({ group: "", resource: "pods" }, name);
    return pod;
  };

  switch (`${resource}.${group}`) {
    case "pods.": {
      if (subresource === "") {
        if (operation === "CREATE") return admitMirrorPod(node, obj!, deny, ctx);
        if (operation === "DELETE") {
          const pod = await existingPod(ctx.name || old?.metadata?.name || "");
          if (pod.spec?.nodeName !== node)
            throw deny(`node ${q} can only delete pods with spec.nodeName set to itself`);
          return;
        }
        throw deny(
          `unexpected operation ${JSON.stringify(operation)}, node ${q} can only create and delete mirror pods`,
        );
      }
      if (subresource === "status") {
        if (operation !== "UPDATE") throw deny(`unexpected operation ${JSON.stringify(operation)}`);
        if (!old || old.spec?.nodeName !== node)
          throw deny(`node ${q} can only update pod status for pods with spec.nodeName set to itself`);
        if (!same(sortedLabels(old), sortedLabels(obj)))
          throw deny(`node ${q} cannot update labels through pod status`);
        if (!same(old.status?.resourceClaimStatuses, obj?.status?.resourceClaimStatuses))
          throw deny(`node ${q} cannot update resource claim statues`);
        return;
      }
      if (subresource === "eviction") {
        if (operation !== "CREATE") throw deny(`unexpected operation ${operation}`);
        const podName = ctx.name || obj?.metadata?.name;
        if (!podName) throw deny("could not determine pod from request data");
        const pod = await existingPod(podName);
        if (pod.spec?.nodeName !== node)
          throw deny(`node ${node} can only evict pods with spec.nodeName set to itself`);
        return;
      }
      throw deny(
        `unexpected pod subresource ${JSON.stringify(subresource)}, only 'status' and 'eviction' are allowed`,
      );
    }
    case "nodes.":
      return admitNode(node, operation, ctx.name || obj?.metadata?.name || "", obj, old, deny);
    case "persistentvolumeclaims.":
      if (subresource !== "status") throw deny("may only update PVC status");
      if (operation !== "UPDATE") throw deny(`unexpected operation ${JSON.stringify(operation)}`);
      if (!same(pvcComparable(old), pvcComparable(obj)))
        throw deny(
          `node ${q} is not allowed to update fields other than status.capacity and status.conditions`,
        );
      return;
    case "serviceaccounts.": {
      if (operation !== "CREATE" || subresource !== "token") return;
      const ref = obj?.spec?.boundObjectRef;
      if (ref?.apiVersion !== "v1" || ref.kind !== "Pod" || !ref.name)
        throw deny("node requested token not bound to a pod");
      if (!ref.uid) throw deny("node requested token with a pod binding without a uid");
      const pod = await fetchObject(ctx, "pods", namespace, ref.name);
      if (!pod) throw notFound({ group: "", resource: "pods" }, ref.name);
      if (ref.uid !== pod.metadata.uid)
        throw deny(
          `the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
        );
      if (pod.spec?.nodeName !== node)
        throw deny("node requested token bound to a pod scheduled on a different node");
      return;
    }
    case "leases.coordination.k8s.io": {
      if (namespace !== NODE_LEASE_NAMESPACE)
        throw deny(`can only access leases in the ${JSON.stringify(NODE_LEASE_NAMESPACE)} system namespace`);
      const name =
        operation === "CREATE" ? obj?.metadata?.name : ctx.name || obj?.metadata?.name || old?.metadata?.name;
      if (name !== node) throw deny("can only access node lease with the same name as the requesting node");
      return;
    }
    case "csinodes.storage.k8s.io": {
      const name = operation === "CREATE" ? obj?.metadata?.name : ctx.name || obj?.metadata?.name;
      if (name !== node) throw deny("can only access CSINode with the same name as the requesting node");
      return;
    }
  }
}

function sortedLabels(o: KubeObject | undefined): [string, string][] {
  return Object.entries(o?.metadata?.labels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function pvcComparable(o: KubeObject | undefined): unknown {
  if (!o) return null;
  const c = structuredClone(o);
  delete c.metadata.resourceVersion;
  delete c.metadata.managedFields;
  if (c.status) {
    delete c.status.capacity;
    delete c.status.conditions;
    delete c.status.allocatedResourceStatuses;
    delete c.status.allocatedResources;
  }
  return c;
}

type Deny = (msg: string) => Error;

async function admitMirrorPod(
  node: string,
  pod: KubeObject,
  deny: Deny,
  ctx: NodeRestrictionContext,
): Promise<void> {
  const q = JSON.stringify(node);
  if (!Object.hasOwn(pod.metadata?.annotations ?? {}, MIRROR_ANNOTATION))
    throw deny(
      `pod does not have ${JSON.stringify(MIRROR_ANNOTATION)} annotation, node ${q} can only create mirror pods`,
    );
  if (pod.spec?.nodeName !== node)
    throw deny(`node ${q} can only create pods with spec.nodeName set to itself`);
  const owners = pod.metadata?.ownerReferences ?? [];
  if (owners.length > 1)
    throw deny(`node ${q} can only create pods with a single owner reference set to itself`);
  if (owners.length === 0) throw deny(`node ${q} can only create pods with an owner reference set to itself`);
  const owner = owners[0];
  if (owner.apiVersion !== "v1" || owner.kind !== "Node" || owner.name !== node)
    throw deny(`node ${q} can only create pods with an owner reference set to itself`);
  if (owner.controller !== true)
    throw deny(`node ${q} can only create pods with a controller owner reference set to itself`);
  if (owner.blockOwnerDeletion === true)
    throw deny(`node ${q} must not set blockOwnerDeletion on an owner reference`);
  const nodeObj = await fetchObject(ctx, "nodes", "", node);
  if (!nodeObj && (ctx.env || ctx.getObject)) throw notFound({ group: "", resource: "nodes" }, node);
  if (nodeObj && owner.uid !== nodeObj.metadata.uid)
    throw deny(`node ${node} UID mismatch: expected ${owner.uid} got ${nodeObj.metadata.uid}`);
  if (pod.spec?.serviceAccountName)
    throw deny(`node ${q} can not create pods that reference a service account`);
  if (podSecretNames(pod).length) throw deny(`node ${q} can not create pods that reference secrets`);
  if (podConfigMapNames(pod).length) throw deny(`node ${q} can not create pods that reference configmaps`);
  for (const v of pod.spec?.volumes ?? [])
    for (const s of v?.projected?.sources ?? [])
      if (s?.clusterTrustBundle)
        throw deny(`node ${q} can not create pods that reference clustertrustbundles`);
  for (const v of pod.spec?.volumes ?? [])
    if (v?.persistentVolumeClaim)
      throw deny(`node ${q} can not create pods that reference persistentvolumeclaims`);
}

function admitNode(
  node: string,
  operation: AdmissionOperation,
  requested: string,
  obj: KubeObject | undefined,
  old: KubeObject | undefined,
  deny: Deny,
): void {
  const q = JSON.stringify(node);
  if (requested !== node) throw deny(`node ${q} is not allowed to modify node ${JSON.stringify(requested)}`);
  if (operation === "CREATE") {
    if (obj?.spec?.configSource)
      throw deny(`node ${q} is not allowed to create pods with a non-nil configSource`);
    const bad = forbiddenNodeLabels(modifiedLabels(obj?.metadata?.labels, undefined));
    if (bad.length) throw deny(`node ${q} is not allowed to set the following labels: ${bad.join(", ")}`);
  }
  if (operation === "UPDATE") {
    if (obj?.spec?.configSource && !same(obj.spec.configSource, old?.spec?.configSource))
      throw deny(`node ${q} is not allowed to update configSource to a new non-nil configSource`);
    if (!same(obj?.spec?.taints ?? [], old?.spec?.taints ?? []))
      throw deny(`node ${q} is not allowed to modify taints`);
    const bad = forbiddenNodeLabels(modifiedLabels(obj?.metadata?.labels, old?.metadata?.labels));
    if (bad.length) throw deny(`is not allowed to modify labels: ${bad.join(", ")}`);
  }
}
