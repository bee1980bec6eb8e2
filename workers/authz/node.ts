// The Node authorizer (upstream 1.32, AuthorizeNodeWithSelectors on): kubelets, users named
// system:node:<name> in group system:nodes, may read the secrets, configmaps and PVCs of pods
// bound to them (and the PersistentVolumes those claims are bound to), request tokens for those pods' service accounts, read and write their own
// Node and Lease, list/watch pods only with spec.nodeName=<self>, and otherwise what the
// static node rules allow. Everything it refuses is "no opinion", with upstream's reasons.
import { NODE_RULES } from "../../api/rbac/bootstrap";
import { rulesAllow } from "../../api/rbac/rules";
import { lookupGVR } from "../../api/registry";
import { parseFieldSelector } from "../../api/selectors";
import type { UserInfo } from "../../api/user";
import { METRICS_REPORT_PREFIX } from "../../api/wire/metrics";
import type { Env } from "../../durable-objects/env";
import { Store } from "../../durable-objects/store/client";
import { NodeGraph, type RefKind } from "./node-graph";
import { ALLOW, type Attributes, type AuthorizerResult, NO_OPINION, type RulesResult } from "./types";

export const NODE_USER_PREFIX = "system:node:";
export const NODES_GROUP = "system:nodes";
export const NODE_LEASE_NAMESPACE = "kube-node-lease";

/** The node a user is, as upstream's default node identifier: [name, isNode]. */
export function nodeIdentity(user: Pick<UserInfo, "name" | "groups"> | undefined): [string, boolean] {
  if (!user?.name.startsWith(NODE_USER_PREFIX)) return ["", false];
  if (!user.groups.includes(NODES_GROUP)) return ["", false];
  return [user.name.slice(NODE_USER_PREFIX.length), true];
}

const no = (reason: string): AuthorizerResult => ({ decision: "noOpinion", reason });

/** Whether a field selector has `field=value` (or `==`). */
export function selectsExactly(fieldSelector: string | undefined, field: string, value: string): boolean {
  if (!fieldSelector) return false;
  try {
    return parseFieldSelector(fieldSelector).some(
      (r) => r.key === field && r.op === "=" && r.values[0] === value,
    );
  } catch {
    return false;
  }
}

export class NodeAuthorizer {
  constructor(readonly graph = new NodeGraph()) {}

  async authorize(attrs: Attributes, env: Env): Promise<AuthorizerResult> {
    const [node, isNode] = nodeIdentity(attrs.user);
    if (!isNode) return NO_OPINION;
    if (!node) return no(`unknown node for user ${JSON.stringify(attrs.user.name)}`);
    if (attrs.isResourceRequest) {
      const gr = `${attrs.resource}.${attrs.apiGroup}`;
      switch (gr) {
        case "secrets.":
          return this.readNamespaced(node, "secrets", attrs, env);
        case "configmaps.":
          return this.readNamespaced(node, "configmaps", attrs, env);
        case "persistentvolumeclaims.":
          if (attrs.subresource === "status")
            return this.statusUpdate(node, "persistentvolumeclaims", attrs, env);
          return this.get(node, "persistentvolumeclaims", attrs, env);
        case "persistentvolumes.":
          return this.volume(node, attrs, env);
        case "resourceclaims.resource.k8s.io":
        case "volumeattachments.storage.k8s.io":
          // no such objects are served here, so no path from the node can exist
          return this.get(node, undefined, attrs, env);
        case "serviceaccounts.":
          return this.createToken(node, attrs, env);
        case "leases.coordination.k8s.io":
          return lease(node, attrs);
        case "csinodes.storage.k8s.io":
          return csiNode(node, attrs);
        case "resourceslices.resource.k8s.io":
          return resourceSlice(node, attrs);
        case "nodes.":
          return nodeObject(node, attrs);
        case "pods.":
          return this.pod(node, attrs, env);
      }
    }
    // a node may open its own stream tunnel (workers/handlers/streams.ts), no other
    if (!attrs.isResourceRequest && attrs.verb === "get" && attrs.path === `/edgeplane/tunnel/${node}`)
      return ALLOW;
    // and post its own resource-usage reports (workers/handlers/metrics-report.ts), no other's
    if (
      !attrs.isResourceRequest &&
      attrs.verb === "create" &&
      attrs.path === `${METRICS_REPORT_PREFIX}${encodeURIComponent(node)}`
    )
      return ALLOW;
    return rulesAllow(attrs, NODE_RULES) ? ALLOW : NO_OPINION;
  }

  /** Nodes' permissions are not enumerable (upstream says the same). */
  rulesFor(user: UserInfo): RulesResult {
    const [, isNode] = nodeIdentity(user);
    if (!isNode) return { resourceRules: [], nonResourceRules: [], incomplete: false, errors: [] };
    return {
      resourceRules: [],
      nonResourceRules: [],
      incomplete: true,
      errors: ["node authorizer does not support user rule resolution"],
    };
  }

  private async related(
    node: string,
    kind: RefKind | undefined,
    attrs: Attributes,
    env: Env,
  ): Promise<AuthorizerResult> {
    if (!attrs.name) return no("No Object name found");
    const ok = kind !== undefined && (await this.graph.related(env, node, kind, attrs.namespace, attrs.name));
    return ok ? ALLOW : no(`no relationship found between node '${node}' and this object`);
  }

  private statusUpdate(
    node: string,
    kind: RefKind,
    attrs: Attributes,
    env: Env,
  ): Promise<AuthorizerResult> | AuthorizerResult {
    if (attrs.verb !== "update" && attrs.verb !== "patch") return no("can only get/update/patch this type");
    if (attrs.subresource !== "status") return no("can only update status subresource");
    return this.related(node, kind, attrs, env);
  }

  private get(
    node: string,
    kind: RefKind | undefined,
    attrs: Attributes,
    env: Env,
  ): Promise<AuthorizerResult> | AuthorizerResult {
    if (attrs.verb !== "get") return no("can only get individual resources of this type");
    if (attrs.subresource) return no("cannot get subresource");
    return this.related(node, kind, attrs, env);
  }

  /** A PersistentVolume, when a pod bound to the node uses the claim the volume is bound to. */
  private async volume(node: string, attrs: Attributes, env: Env): Promise<AuthorizerResult> {
    if (attrs.verb !== "get") return no("can only get individual resources of this type");
    if (attrs.subresource) return no("cannot get subresource");
    if (!attrs.name) return no("No Object name found");
    const def = lookupGVR("", "v1", "persistentvolumes");
    const pv = def ? await new Store(env, def).find("", attrs.name) : undefined;
    const ref = pv?.spec?.claimRef;
    const ok =
      typeof ref?.namespace === "string" &&
      typeof ref?.name === "string" &&
      (await this.graph.related(env, node, "persistentvolumeclaims", ref.namespace, ref.name));
    return ok ? ALLOW : no(`no relationship found between node '${node}' and this object`);
  }

  private readNamespaced(
    node: string,
    kind: RefKind,
    attrs: Attributes,
    env: Env,
  ): Promise<AuthorizerResult> | AuthorizerResult {
    if (!["get", "list", "watch"].includes(attrs.verb)) return no("can only read resources of this type");
    if (attrs.subresource) return no("cannot read subresource");
    if (!attrs.namespace) return no("can only read namespaced object of this type");
    return this.related(node, kind, attrs, env);
  }

  private createToken(
    node: string,
    attrs: Attributes,
    env: Env,
  ): Promise<AuthorizerResult> | AuthorizerResult {
    if (attrs.verb !== "create" || !attrs.name)
      return no("can only create tokens for individual service accounts");
    if (attrs.subresource !== "token") return no("can only create token subresource of serviceaccount");
    return this.related(node, "serviceaccounts", attrs, env);
  }

  private pod(node: string, attrs: Attributes, env: Env): Promise<AuthorizerResult> | AuthorizerResult {
    switch (attrs.subresource) {
      case "":
        switch (attrs.verb) {
          case "get":
            return this.get(node, "pods", attrs, env);
          case "list":
          case "watch":
            if (selectsExactly(attrs.fieldSelector, "spec.nodeName", node)) return ALLOW;
            if (attrs.name) return this.related(node, "pods", attrs, env);
            return no("can only list/watch pods with spec.nodeName field selector");
          case "create":
          case "delete":
            return ALLOW; // mirror pods; NodeRestriction admission limits them to this node
        }
        break;
      case "status":
        if (attrs.verb === "update" || attrs.verb === "patch") return ALLOW; // NodeRestriction checks the pod's node
        break;
      case "eviction":
        if (attrs.verb === "create") return ALLOW;
        break;
    }
    return NO_OPINION;
  }
}

function lease(node: string, attrs: Attributes): AuthorizerResult {
  if (!["get", "create", "update", "patch", "delete"].includes(attrs.verb))
    return no("can only get, create, update, patch, or delete a node lease");
  if (attrs.namespace !== NODE_LEASE_NAMESPACE)
    return no(`can only access leases in the ${JSON.stringify(NODE_LEASE_NAMESPACE)} system namespace`);
  if (attrs.verb !== "create" && attrs.name !== node)
    return no("can only access node lease with the same name as the requesting node");
  return ALLOW;
}

function csiNode(node: string, attrs: Attributes): AuthorizerResult {
  if (!["get", "create", "update", "patch", "delete"].includes(attrs.verb))
    return no("can only get, create, update, patch, or delete a CSINode");
  if (attrs.subresource) return no("cannot authorize CSINode subresources");
  if (attrs.verb !== "create" && attrs.name !== node)
    return no("can only access CSINode with the same name as the requesting node");
  return ALLOW;
}

function resourceSlice(node: string, attrs: Attributes): AuthorizerResult {
  if (attrs.subresource) return no("cannot authorize ResourceSlice subresources");
  switch (attrs.verb) {
    case "create":
      return ALLOW;
    case "get":
    case "update":
    case "patch":
    case "delete":
      // no slice is served here, so none can be related to the node
      return attrs.name
        ? no(`no relationship found between node '${node}' and this object`)
        : no("No Object name found");
    case "watch":
    case "list":
    case "deletecollection":
      if (selectsExactly(attrs.fieldSelector, "nodeName", node)) return ALLOW;
      return no("can only list/watch/deletecollection resourceslices with nodeName field selector");
  }
  return no(
    "only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection",
  );
}

function nodeObject(node: string, attrs: Attributes): AuthorizerResult {
  if (attrs.subresource === "") {
    switch (attrs.verb) {
      case "create":
      case "update":
      case "patch":
        return ALLOW; // NodeRestriction admission limits a node to its own object
      case "get":
      case "list":
      case "watch":
        if (attrs.name === node) return ALLOW;
        if (attrs.name === "") return no(`node '${node}' cannot read all nodes, only its own Node object`);
        return no(`node '${node}' cannot read '${attrs.name}', only its own Node object`);
    }
  } else if (attrs.subresource === "status" && (attrs.verb === "update" || attrs.verb === "patch")) {
    return ALLOW;
  }
  return NO_OPINION;
}

export const nodeAuthorizer = new NodeAuthorizer();
