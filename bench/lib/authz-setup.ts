// The RBAC population of the authz-chain benchmark: namespaces, many Roles and RoleBindings
// for other users and groups, and the one binding that lets the benchmark user create pods.
import { expectStatus, keepAliveAgent, request, type Target } from "./http";
import { closedLoop, type LoadResult } from "./stats";

/** Resources the filler Roles grant on: a lookup must look at (and skip) every one of them. */
const FILLER_RESOURCES = [
  "configmaps",
  "secrets",
  "services",
  "endpoints",
  "events",
  "persistentvolumeclaims",
];
const FILLER_VERBS = [["get", "list", "watch"], ["create", "update", "patch"], ["delete"]];

export interface RbacPopulation {
  /** namespaces the Roles and RoleBindings are spread over (the bench namespace is the first) */
  namespaces: string[];
  /** Roles, and as many RoleBindings */
  roles: number;
}

const rbacPath = (ns: string, kind: "roles" | "rolebindings") =>
  `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/${kind}`;

function fillerRole(ns: string, i: number): string {
  return JSON.stringify({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: `filler-${i}`, namespace: ns },
    rules: [
      {
        apiGroups: [""],
        resources: [FILLER_RESOURCES[i % FILLER_RESOURCES.length]],
        verbs: FILLER_VERBS[i % FILLER_VERBS.length],
      },
      { apiGroups: ["apps"], resources: ["deployments"], verbs: ["get"] },
    ],
  });
}

function fillerBinding(ns: string, i: number): string {
  return JSON.stringify({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: `filler-${i}`, namespace: ns },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: `filler-${i}` },
    subjects: [
      { apiGroup: "rbac.authorization.k8s.io", kind: "User", name: `other-user-${i}` },
      { apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: `other-group-${i % 97}` },
    ],
  });
}

/** Namespaces, then `roles` Roles and RoleBindings round-robin over them (20 clients). */
export async function populateRbac(admin: Target, p: RbacPopulation): Promise<LoadResult> {
  const agent = keepAliveAgent(20);
  try {
    await closedLoop(p.namespaces.length, 10, async (i) => {
      const body = JSON.stringify({
        apiVersion: "v1",
        kind: "Namespace",
        metadata: { name: p.namespaces[i] },
      });
      await expectStatus([201, 409], request(admin, agent, "POST", "/api/v1/namespaces", body), "namespace");
    });
    const nsOf = (i: number) => p.namespaces[i % p.namespaces.length] as string;
    const roles = await closedLoop(p.roles, 20, async (i) => {
      await expectStatus(
        201,
        request(admin, agent, "POST", rbacPath(nsOf(i), "roles"), fillerRole(nsOf(i), i)),
        "role",
      );
    });
    const bindings = await closedLoop(p.roles, 20, async (i) => {
      await expectStatus(
        201,
        request(admin, agent, "POST", rbacPath(nsOf(i), "rolebindings"), fillerBinding(nsOf(i), i)),
        "rolebinding",
      );
    });
    return {
      perSecond:
        (roles.done + bindings.done) /
        ((roles.done / roles.perSecond || 0) + (bindings.done / bindings.perSecond || 0)),
      latency: bindings.latency,
      errors: roles.errors + bindings.errors,
      firstError: roles.firstError ?? bindings.firstError,
      done: roles.done + bindings.done,
      longestStallMs: Math.max(roles.longestStallMs, bindings.longestStallMs),
    };
  } finally {
    agent.destroy();
  }
}

/** A Role allowing create/get/list on pods in `ns`, bound to `user`. */
export async function grantPodCreate(admin: Target, ns: string, user: string): Promise<void> {
  const agent = keepAliveAgent(1);
  const role = JSON.stringify({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: "bench-pod-creator", namespace: ns },
    rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["create", "get", "list"] }],
  });
  const binding = JSON.stringify({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: "bench-pod-creator", namespace: ns },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "bench-pod-creator" },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }],
  });
  try {
    await expectStatus([201, 409], request(admin, agent, "POST", rbacPath(ns, "roles"), role), "bench role");
    await expectStatus(
      [201, 409],
      request(admin, agent, "POST", rbacPath(ns, "rolebindings"), binding),
      "bench binding",
    );
  } finally {
    agent.destroy();
  }
}
