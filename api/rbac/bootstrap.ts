// The default RBAC policy every cluster starts with (upstream's bootstrappolicy for 1.32):
// the user-facing roles (cluster-admin, admin, edit, view and their aggregate-to-* parts),
// discovery and self-review roles, and the roles of the core components, with their
// ClusterRoleBindings. Data only; workers/authz/bootstrap-policy.ts writes it to the store.
import type { KubeObject } from "../types";
import type { PolicyRule } from "./rules";

export const RBAC_GROUP = "rbac.authorization.k8s.io";
export const BOOTSTRAP_LABEL = { "kubernetes.io/bootstrapping": "rbac-defaults" };
export const AUTOUPDATE_ANNOTATION = "rbac.authorization.kubernetes.io/autoupdate";
export const AGGREGATE_TO = (role: "admin" | "edit" | "view") =>
  `rbac.authorization.k8s.io/aggregate-to-${role}`;

const READ = ["get", "list", "watch"];
const WRITE = ["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
const EVENTS = ["create", "patch", "update"];

/** A resource rule; verbs are kept in the order given. */
const r = (
  verbs: string[],
  apiGroups: string[],
  resources: string[],
  resourceNames?: string[],
): PolicyRule =>
  resourceNames ? { verbs, apiGroups, resources, resourceNames } : { verbs, apiGroups, resources };
const urls = (verbs: string[], nonResourceURLs: string[]): PolicyRule => ({ verbs, nonResourceURLs });

interface RoleSpec {
  name: string;
  rules?: PolicyRule[];
  labels?: Record<string, string>;
  /** label keys whose "true" value selects the roles aggregated into this one */
  aggregateFrom?: string;
}

const ROLES: RoleSpec[] = [
  { name: "cluster-admin", rules: [r(["*"], ["*"], ["*"]), urls(["*"], ["*"])] },
  { name: "admin", aggregateFrom: AGGREGATE_TO("admin") },
  { name: "edit", aggregateFrom: AGGREGATE_TO("edit"), labels: { [AGGREGATE_TO("admin")]: "true" } },
  { name: "view", aggregateFrom: AGGREGATE_TO("view"), labels: { [AGGREGATE_TO("edit")]: "true" } },
  {
    name: "system:aggregate-to-admin",
    labels: { [AGGREGATE_TO("admin")]: "true" },
    rules: [
      r(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
      r(READ_WRITE, [RBAC_GROUP], ["rolebindings", "roles"]),
    ],
  },
  {
    name: "system:aggregate-to-edit",
    labels: { [AGGREGATE_TO("edit")]: "true" },
    rules: [
      r(
        READ,
        [""],
        ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"],
      ),
      r(["impersonate"], [""], ["serviceaccounts"]),
      r(WRITE, [""], ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"]),
      r(["create"], [""], ["pods/eviction"]),
      r(
        WRITE,
        [""],
        [
          "configmaps",
          "events",
          "persistentvolumeclaims",
          "replicationcontrollers",
          "replicationcontrollers/scale",
          "secrets",
          "serviceaccounts",
          "services",
          "services/proxy",
        ],
      ),
      r(["create"], [""], ["serviceaccounts/token"]),
      r(
        WRITE,
        ["apps"],
        [
          "daemonsets",
          "deployments",
          "deployments/rollback",
          "deployments/scale",
          "replicasets",
          "replicasets/scale",
          "statefulsets",
          "statefulsets/scale",
        ],
      ),
      r(WRITE, ["autoscaling"], ["horizontalpodautoscalers"]),
      r(WRITE, ["batch"], ["cronjobs", "jobs"]),
      r(
        WRITE,
        ["extensions"],
        [
          "daemonsets",
          "deployments",
          "deployments/rollback",
          "deployments/scale",
          "ingresses",
          "networkpolicies",
          "replicasets",
          "replicasets/scale",
          "replicationcontrollers/scale",
        ],
      ),
      r(WRITE, ["policy"], ["poddisruptionbudgets"]),
      r(WRITE, ["networking.k8s.io"], ["ingresses", "networkpolicies"]),
      r(READ_WRITE, ["coordination.k8s.io"], ["leases"]),
    ],
  },
  // metrics-server's role, aggregated into view, edit and admin: whoever may read pods in a
  // namespace may read their usage (the metrics API is built in here)
  {
    name: "system:aggregated-metrics-reader",
    labels: {
      [AGGREGATE_TO("admin")]: "true",
      [AGGREGATE_TO("edit")]: "true",
      [AGGREGATE_TO("view")]: "true",
    },
    rules: [r(READ, ["metrics.k8s.io"], ["pods", "nodes"])],
  },
  {
    name: "system:aggregate-to-view",
    labels: { [AGGREGATE_TO("view")]: "true" },
    rules: [
      r(
        READ,
        [""],
        [
          "configmaps",
          "endpoints",
          "persistentvolumeclaims",
          "persistentvolumeclaims/status",
          "pods",
          "replicationcontrollers",
          "replicationcontrollers/scale",
          "serviceaccounts",
          "services",
          "services/status",
        ],
      ),
      r(
        READ,
        [""],
        [
          "bindings",
          "events",
          "limitranges",
          "namespaces/status",
          "pods/log",
          "pods/status",
          "replicationcontrollers/status",
          "resourcequotas",
          "resourcequotas/status",
        ],
      ),
      r(READ, [""], ["namespaces"]),
      r(READ, ["discovery.k8s.io"], ["endpointslices"]),
      r(
        READ,
        ["apps"],
        [
          "controllerrevisions",
          "daemonsets",
          "daemonsets/status",
          "deployments",
          "deployments/scale",
          "deployments/status",
          "replicasets",
          "replicasets/scale",
          "replicasets/status",
          "statefulsets",
          "statefulsets/scale",
          "statefulsets/status",
        ],
      ),
      r(READ, ["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
      r(READ, ["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
      r(
        READ,
        ["extensions"],
        [
          "daemonsets",
          "daemonsets/status",
          "deployments",
          "deployments/scale",
          "deployments/status",
          "ingresses",
          "ingresses/status",
          "networkpolicies",
          "replicasets",
          "replicasets/scale",
          "replicasets/status",
          "replicationcontrollers/scale",
        ],
      ),
      r(READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
      r(READ, ["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"]),
    ],
  },
  {
    name: "system:discovery",
    rules: [
      urls(
        ["get"],
        [
          "/api",
          "/api/*",
          "/apis",
          "/apis/*",
          "/healthz",
          "/livez",
          "/openapi",
          "/openapi/*",
          "/readyz",
          "/version",
          "/version/",
        ],
      ),
    ],
  },
  {
    name: "system:basic-user",
    rules: [
      r(["create"], ["authorization.k8s.io"], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
      r(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
    ],
  },
  {
    name: "system:public-info-viewer",
    rules: [urls(["get"], ["/healthz", "/livez", "/readyz", "/version", "/version/"])],
  },
  {
    // the service account issuer's discovery document and keys, for every service account
    // (so workloads can verify each other's tokens); with or without the trailing slash
    name: "system:service-account-issuer-discovery",
    rules: [
      urls(
        ["get"],
        [
          "/.well-known/openid-configuration",
          "/.well-known/openid-configuration/",
          "/openid/v1/jwks",
          "/openid/v1/jwks/",
        ],
      ),
    ],
  },
  {
    name: "system:monitoring",
    rules: [
      urls(
        ["get"],
        ["/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"],
      ),
    ],
  },
  {
    name: "system:auth-delegator",
    rules: [
      r(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
      r(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
    ],
  },
  {
    name: "system:node-bootstrapper",
    rules: [r(["create", "get", "list", "watch"], ["certificates.k8s.io"], ["certificatesigningrequests"])],
  },
  // what the csrapproving controller asks before it approves a node's client CSR: a new node's
  // (nodeclient) or a node renewing its own (selfnodeclient)
  {
    name: "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
    rules: [r(["create"], ["certificates.k8s.io"], ["certificatesigningrequests/nodeclient"])],
  },
  {
    name: "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
    rules: [r(["create"], ["certificates.k8s.io"], ["certificatesigningrequests/selfnodeclient"])],
  },
  { name: "system:node", rules: [] /* filled below from NODE_RULES */ },
  {
    name: "system:node-proxier",
    rules: [
      r(["list", "watch"], [""], ["endpoints", "services"]),
      r(READ, [""], ["nodes"]),
      r(EVENTS, ["", "events.k8s.io"], ["events"]),
      r(["list", "watch"], ["discovery.k8s.io"], ["endpointslices"]),
    ],
  },
  {
    // The edgelet's network part: kube-proxy's reads (system:node-proxier), a node-local
    // CoreDNS's (system:coredns: Services, EndpointSlices, Namespaces, Pods) and a policy
    // agent's (NetworkPolicies, Pods, Namespaces), plus the network settings the control plane
    // publishes. Read-only; bound to every node below. The Node authorizer alone would not give
    // a node these cluster-wide lists (it limits pods to the node's own).
    name: "edgeplane:node-network",
    rules: [
      // the pod network: every Node's podCIDR and published addresses
      r(["get", "list", "watch"], [""], ["nodes"]),
      r(["list", "watch"], [""], ["services", "endpoints", "pods", "namespaces"]),
      r(["list", "watch"], ["discovery.k8s.io"], ["endpointslices"]),
      r(["list", "watch"], ["networking.k8s.io"], ["networkpolicies"]),
      r(["get"], [""], ["configmaps"], ["edgeplane-network"]),
    ],
  },
  {
    name: "system:kube-scheduler",
    rules: [
      r(EVENTS, ["", "events.k8s.io"], ["events"]),
      r(["create"], ["coordination.k8s.io"], ["leases"]),
      r(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-scheduler"]),
      r(READ, [""], ["nodes"]),
      r(["delete", "get", "list", "watch"], [""], ["pods"]),
      r(["create"], [""], ["bindings", "pods/binding"]),
      r(["patch", "update"], [""], ["pods/status"]),
      r(READ, [""], ["replicationcontrollers", "services"]),
      r(READ, ["apps", "extensions"], ["replicasets"]),
      r(READ, ["apps"], ["statefulsets"]),
      r(READ, ["policy"], ["poddisruptionbudgets"]),
      r(READ, [""], ["persistentvolumeclaims", "persistentvolumes"]),
      r(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
      r(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
      r(READ, ["storage.k8s.io"], ["csinodes"]),
      r(READ, [""], ["namespaces"]),
      r(READ, ["storage.k8s.io"], ["csidrivers"]),
      r(READ, ["storage.k8s.io"], ["csistoragecapacities"]),
    ],
  },
  {
    name: "system:kube-controller-manager",
    rules: [
      r(EVENTS, ["", "events.k8s.io"], ["events"]),
      r(["create"], ["coordination.k8s.io"], ["leases"]),
      r(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-controller-manager"]),
      r(["create"], [""], ["secrets", "serviceaccounts"]),
      r(["delete"], [""], ["secrets"]),
      r(["get"], [""], ["configmaps", "namespaces", "secrets", "serviceaccounts"]),
      r(["update"], [""], ["secrets", "serviceaccounts"]),
      r(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
      r(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
      r(["list", "watch"], ["*"], ["*"]),
      r(["create"], [""], ["serviceaccounts/token"]),
    ],
  },
];

/**
 * What the system:node role holds, and what the Node authorizer allows nodes for resources
 * it does not subdivide (its static rules).
 */
export const NODE_RULES: PolicyRule[] = [
  r(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
  r(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews", "subjectaccessreviews"]),
  r(READ, [""], ["services"]),
  r(["create", "get", "list", "watch"], [""], ["nodes"]),
  r(["patch", "update"], [""], ["nodes/status"]),
  r(["patch", "update"], [""], ["nodes"]),
  r(EVENTS, [""], ["events"]),
  r(READ, [""], ["pods"]),
  r(["create", "delete"], [""], ["pods"]),
  r(["patch", "update"], [""], ["pods/status"]),
  r(["create"], [""], ["pods/eviction"]),
  r(READ, [""], ["configmaps", "secrets"]),
  r(["get"], [""], ["persistentvolumeclaims", "persistentvolumes"]),
  r(["get"], [""], ["endpoints"]),
  r(["create", "get", "list", "watch"], ["certificates.k8s.io"], ["certificatesigningrequests"]),
  r(["create", "delete", "get", "patch", "update"], ["coordination.k8s.io"], ["leases"]),
  r(["get"], ["storage.k8s.io"], ["volumeattachments"]),
  r(["create"], [""], ["serviceaccounts/token"]),
  r(["get", "patch", "update"], [""], ["persistentvolumeclaims/status"]),
  r(READ, ["storage.k8s.io"], ["csidrivers"]),
  r(["create", "delete", "get", "patch", "update"], ["storage.k8s.io"], ["csinodes"]),
  r(READ, ["node.k8s.io"], ["runtimeclasses"]),
];
ROLES.find((x) => x.name === "system:node")!.rules = NODE_RULES;

interface BindingSpec {
  name: string;
  role: string;
  groups?: string[];
  users?: string[];
  serviceAccounts?: [string, string][];
}

const BINDINGS: BindingSpec[] = [
  { name: "cluster-admin", role: "cluster-admin", groups: ["system:masters"] },
  { name: "system:monitoring", role: "system:monitoring", groups: ["system:monitoring"] },
  { name: "system:discovery", role: "system:discovery", groups: ["system:authenticated"] },
  { name: "system:basic-user", role: "system:basic-user", groups: ["system:authenticated"] },
  {
    name: "system:public-info-viewer",
    role: "system:public-info-viewer",
    groups: ["system:authenticated", "system:unauthenticated"],
  },
  {
    name: "system:service-account-issuer-discovery",
    role: "system:service-account-issuer-discovery",
    groups: ["system:serviceaccounts"],
  },
  { name: "system:node-proxier", role: "system:node-proxier", users: ["system:kube-proxy"] },
  {
    name: "system:kube-controller-manager",
    role: "system:kube-controller-manager",
    users: ["system:kube-controller-manager"],
  },
  { name: "system:kube-scheduler", role: "system:kube-scheduler", users: ["system:kube-scheduler"] },
  { name: "edgeplane:node-network", role: "edgeplane:node-network", groups: ["system:nodes"] },
  // kubeadm's TLS bootstrap bindings: bootstrap tokens may ask for a node client certificate,
  // which is approved at once; nodes may renew their own
  { name: "edgeplane:kubelet-bootstrap", role: "system:node-bootstrapper", groups: ["system:bootstrappers"] },
  {
    name: "edgeplane:node-autoapprove-bootstrap",
    role: "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
    groups: ["system:bootstrappers"],
  },
  {
    name: "edgeplane:node-autoapprove-certificate-rotation",
    role: "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
    groups: ["system:nodes"],
  },
  // Kept without subjects, as upstream does since the Node authorizer took over from it.
  { name: "system:node", role: "system:node" },
];

function meta(name: string, labels: Record<string, string> = {}) {
  return {
    name,
    labels: { ...BOOTSTRAP_LABEL, ...labels },
    annotations: { [AUTOUPDATE_ANNOTATION]: "true" },
  };
}

/** The bootstrap ClusterRoles as API objects (fresh copies on every call). */
export function bootstrapClusterRoles(): KubeObject[] {
  return ROLES.map((spec) => {
    const obj: KubeObject = {
      apiVersion: `${RBAC_GROUP}/v1`,
      kind: "ClusterRole",
      metadata: meta(spec.name, spec.labels),
    };
    if (spec.aggregateFrom)
      obj.aggregationRule = { clusterRoleSelectors: [{ matchLabels: { [spec.aggregateFrom]: "true" } }] };
    else obj.rules = structuredClone(spec.rules ?? []);
    return obj;
  });
}

/** The bootstrap ClusterRoleBindings as API objects (fresh copies on every call). */
export function bootstrapClusterRoleBindings(): KubeObject[] {
  return BINDINGS.map((b) => {
    const subjects = [
      ...(b.groups ?? []).map((name) => ({ apiGroup: RBAC_GROUP, kind: "Group", name })),
      ...(b.users ?? []).map((name) => ({ apiGroup: RBAC_GROUP, kind: "User", name })),
      ...(b.serviceAccounts ?? []).map(([namespace, name]) => ({ kind: "ServiceAccount", name, namespace })),
    ];
    const obj: KubeObject = {
      apiVersion: `${RBAC_GROUP}/v1`,
      kind: "ClusterRoleBinding",
      metadata: meta(b.name),
      roleRef: { apiGroup: RBAC_GROUP, kind: "ClusterRole", name: b.role },
    };
    if (subjects.length) obj.subjects = subjects;
    return obj;
  });
}
