// A ResourceDef list shaped like the served registry, independent of
// api/strategies so these tests do not wait on it.

import { type ResourceDef, STANDARD_VERBS } from "../../../api/resource";

const RW = ["get", "patch", "update"];

function def(d: Omit<ResourceDef, "verbs" | "strategy" | "listKind"> & Partial<ResourceDef>): ResourceDef {
  return { verbs: STANDARD_VERBS, strategy: {}, listKind: `${d.kind}List`, ...d };
}

export const FIXTURE: ResourceDef[] = [
  def({
    group: "",
    version: "v1",
    resource: "pods",
    kind: "Pod",
    singular: "pod",
    namespaced: true,
    shortNames: ["po"],
    categories: ["all"],
    subresources: {
      status: { kind: "Pod", verbs: RW },
      binding: { kind: "Binding", verbs: ["create"] },
      log: { kind: "Pod", verbs: ["get"] },
      exec: { kind: "PodExecOptions", verbs: ["create", "get"] },
      eviction: { kind: "Eviction", group: "policy", version: "v1", verbs: ["create"] },
    },
  }),
  def({
    group: "",
    version: "v1",
    resource: "namespaces",
    kind: "Namespace",
    singular: "namespace",
    namespaced: false,
    shortNames: ["ns"],
    verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
    subresources: { status: { kind: "Namespace", verbs: RW } },
  }),
  def({
    group: "",
    version: "v1",
    resource: "configmaps",
    kind: "ConfigMap",
    singular: "configmap",
    namespaced: true,
    shortNames: ["cm"],
  }),
  def({
    group: "",
    version: "v1",
    resource: "events",
    kind: "Event",
    singular: "event",
    namespaced: true,
    shortNames: ["ev"],
  }),
  def({
    group: "",
    version: "v1",
    resource: "serviceaccounts",
    kind: "ServiceAccount",
    singular: "serviceaccount",
    namespaced: true,
    shortNames: ["sa"],
    subresources: {
      token: { kind: "TokenRequest", group: "authentication.k8s.io", version: "v1", verbs: ["create"] },
    },
  }),
  def({
    group: "apps",
    version: "v1",
    resource: "deployments",
    kind: "Deployment",
    singular: "deployment",
    namespaced: true,
    shortNames: ["deploy"],
    categories: ["all"],
    subresources: {
      status: { kind: "Deployment", verbs: RW },
      scale: { kind: "Scale", group: "autoscaling", version: "v1", verbs: RW },
    },
  }),
  def({
    group: "events.k8s.io",
    version: "v1",
    resource: "events",
    kind: "Event",
    singular: "event",
    namespaced: true,
    shortNames: ["ev"],
  }),
  def({
    group: "coordination.k8s.io",
    version: "v1",
    resource: "leases",
    kind: "Lease",
    singular: "lease",
    namespaced: true,
  }),
  def({
    group: "rbac.authorization.k8s.io",
    version: "v1",
    resource: "clusterroles",
    kind: "ClusterRole",
    singular: "clusterrole",
    namespaced: false,
  }),
  def({
    group: "authorization.k8s.io",
    version: "v1",
    resource: "selfsubjectaccessreviews",
    kind: "SelfSubjectAccessReview",
    singular: "selfsubjectaccessreview",
    namespaced: false,
    verbs: ["create"],
  }),
];
