import { describe, expect, it } from "vitest";
import type { StatusError } from "../../../api/errors";
import {
  attributesFromRequest,
  authorize,
  authorizeRequest,
  forbiddenError,
} from "../../../workers/authz/chain";
import { checkBindingEscalation, checkRoleEscalation } from "../../../workers/authz/escalation";
import {
  localSubjectAccessReview,
  selfSubjectAccessReview,
  selfSubjectRulesReview,
  subjectAccessReview,
} from "../../../workers/authz/reviews";
import { requestInfo } from "../../../workers/request-info";
import { clusterRole, fakeEnv, role, roleBinding, U, user } from "./fake-env";

const RBAC = "rbac.authorization.k8s.io";
const alice = user("alice", "group-x");
const bob = user("bob");
const modes = ["Node", "RBAC"];

function cluster() {
  return fakeEnv({
    [`${RBAC}/rolebindings`]: [
      roleBinding("a", "alice-view", { kind: "ClusterRole", name: "view" }, [U("alice")]),
      roleBinding("a", "bob-admin", { kind: "ClusterRole", name: "admin" }, [U("bob")]),
    ],
    [`${RBAC}/roles`]: [
      role("a", "pod-creator", [{ verbs: ["create"], apiGroups: [""], resources: ["pods"] }]),
    ],
    [`${RBAC}/clusterroles`]: [
      clusterRole("secret-reader", [{ verbs: ["get"], apiGroups: [""], resources: ["secrets"] }]),
    ],
  });
}

const attrsFor = (u: typeof alice, method: string, path: string) => {
  const url = new URL(`https://x${path}`);
  return attributesFromRequest(u, requestInfo(method, url), url);
};

async function error(p: Promise<unknown>): Promise<StatusError> {
  try {
    await p;
  } catch (e) {
    return e as StatusError;
  }
  throw new Error("expected an error");
}

describe("the chain", () => {
  it("allows system:masters first, then asks Node and RBAC", async () => {
    const env = cluster();
    const root = user("root", "system:masters");
    expect(await authorize(modes, attrsFor(root, "DELETE", "/api/v1/nodes/x"), env)).toEqual({
      decision: "allow",
      reason: "",
    });
    expect((await authorize(modes, attrsFor(alice, "GET", "/api/v1/namespaces/a/pods"), env)).decision).toBe(
      "allow",
    );
    expect((await authorize(modes, attrsFor(alice, "GET", "/api/v1/namespaces/b/pods"), env)).decision).toBe(
      "noOpinion",
    );
    expect(
      (await authorize(["AlwaysDeny", "RBAC"], attrsFor(alice, "GET", "/api/v1/namespaces/a/pods"), env))
        .decision,
    ).toBe("deny");
  });

  it("forbids with upstream's words, reasons appended", async () => {
    const env = cluster();
    let e = await error(authorizeRequest(attrsFor(alice, "POST", "/api/v1/namespaces/a/pods"), env));
    expect(e.code).toBe(403);
    expect(e.message).toBe(
      'pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace "a"',
    );
    e = await error(
      authorizeRequest(attrsFor(alice, "GET", "/apis/apps/v1/namespaces/b/deployments/web"), env),
    );
    expect(e.message).toBe(
      'deployments.apps "web" is forbidden: User "alice" cannot get resource "deployments" in API group "apps" in the namespace "b"',
    );
    expect(e.toStatus().details).toEqual({ name: "web", group: "apps", kind: "deployments" });
    e = await error(authorizeRequest(attrsFor(alice, "GET", "/api/v1/nodes"), env));
    expect(e.message).toBe(
      'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope',
    );
    e = await error(authorizeRequest(attrsFor(alice, "GET", "/metrics"), env));
    expect(e.message).toBe('forbidden: User "alice" cannot get path "/metrics"');
    const node = { name: "system:node:n1", uid: "", groups: ["system:nodes", "system:authenticated"] };
    e = await error(authorizeRequest(attrsFor(node, "GET", "/api/v1/namespaces/a/secrets/s"), env));
    expect(e.message).toBe(
      `secrets "s" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "a": no relationship found between node 'n1' and this object`,
    );
    expect(forbiddenError(attrsFor(alice, "GET", "/api/v1/pods"), "a\nb").message).toMatch(/: a\nb$/);
  });

  it("lets everybody read health and version before the policy is stored", async () => {
    const env = cluster();
    const anon = { name: "system:anonymous", uid: "", groups: ["system:unauthenticated"] };
    await authorizeRequest(attrsFor(anon, "GET", "/readyz"), env);
    expect((await error(authorizeRequest(attrsFor(anon, "GET", "/api"), env))).code).toBe(403);
  });

  it("reads a list/watch with a metadata.name field selector as a request for that object", () => {
    const a = attrsFor(
      alice,
      "GET",
      "/api/v1/namespaces/a/secrets?watch=1&fieldSelector=metadata.name%3Dtok",
    );
    expect(a).toMatchObject({ verb: "watch", name: "tok", fieldSelector: "metadata.name=tok" });
  });
});

describe("access reviews", () => {
  it("answers SelfSubjectAccessReview for the caller", async () => {
    const env = cluster();
    const ask = (verb: string, namespace: string) =>
      selfSubjectAccessReview(
        {
          apiVersion: "authorization.k8s.io/v1",
          kind: "SelfSubjectAccessReview",
          spec: { resourceAttributes: { verb, resource: "pods", namespace } },
        },
        alice,
        env,
      );
    const yes = await ask("get", "a");
    expect(yes.status).toEqual({
      allowed: true,
      reason: 'RBAC: allowed by RoleBinding "alice-view/a" of ClusterRole "view" to User "alice"',
    });
    expect(yes.spec.resourceAttributes.verb).toBe("get");
    expect((await ask("create", "a")).status).toEqual({ allowed: false });
    const e = await error(selfSubjectAccessReview({ spec: {} }, alice, env));
    expect(e.code).toBe(422);
    expect(e.message).toBe(
      'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified',
    );
  });

  it("answers SubjectAccessReview and LocalSubjectAccessReview about others", async () => {
    const env = cluster();
    const sar = await subjectAccessReview(
      { spec: { user: "alice", resourceAttributes: { verb: "list", resource: "pods", namespace: "a" } } },
      bob,
      env,
    );
    expect(sar.status.allowed).toBe(true);
    // the groups are exactly those named: no system:authenticated implied
    const anon = await subjectAccessReview(
      { spec: { user: "carol", nonResourceAttributes: { verb: "get", path: "/api" } } },
      bob,
      env,
    );
    expect(anon.status).toEqual({ allowed: false });
    const e = await error(subjectAccessReview({ spec: { resourceAttributes: { verb: "get" } } }, bob, env));
    expect(e.message).toContain(
      'spec.user: Invalid value: "": at least one of user or group must be specified',
    );
    const local = await localSubjectAccessReview(
      { spec: { user: "alice", resourceAttributes: { verb: "get", resource: "pods", namespace: "a" } } },
      bob,
      env,
      "a",
    );
    expect(local.metadata.namespace).toBe("a");
    expect(local.status.allowed).toBe(true);
    const bad = await error(
      localSubjectAccessReview(
        { spec: { user: "alice", resourceAttributes: { verb: "get", namespace: "b" } } },
        bob,
        env,
        "a",
      ),
    );
    expect(bad.message).toContain(
      'spec.resourceAttributes.namespace: Invalid value: "b": must match metadata.namespace',
    );
  });

  it("lists the caller's rules for a namespace (kubectl auth can-i --list)", async () => {
    const env = cluster();
    const r = await selfSubjectRulesReview({ spec: { namespace: "a" } }, alice, env);
    const rules = r.status.resourceRules as { verbs: string[]; resources: string[] }[];
    expect(
      rules.some((x) => x.resources.includes("selfsubjectaccessreviews") && x.verbs.includes("create")),
    ).toBe(true);
    expect(rules.some((x) => x.resources.includes("pods") && x.verbs.includes("list"))).toBe(true);
    expect(rules.some((x) => x.resources.includes("pods") && x.verbs.includes("create"))).toBe(false);
    expect(r.status.nonResourceRules.some((x: any) => x.nonResourceURLs.includes("/api"))).toBe(true);
    expect(r.status.incomplete).toBe(false);
    const other = await selfSubjectRulesReview({ spec: { namespace: "b" } }, alice, env);
    expect(other.status.resourceRules.some((x: any) => x.resources.includes("pods"))).toBe(false);
    expect((await error(selfSubjectRulesReview({ spec: {} }, alice, env))).message).toBe(
      "no namespace on request",
    );
    const node = { name: "system:node:n1", uid: "", groups: ["system:nodes", "system:authenticated"] };
    const n = await selfSubjectRulesReview({ spec: { namespace: "a" } }, node, env);
    expect(n.status).toMatchObject({
      incomplete: true,
      evaluationError: "node authorizer does not support user rule resolution",
    });
  });
});

describe("escalation checks", () => {
  const roleObj = (rules: unknown[]) => ({
    apiVersion: `${RBAC}/v1`,
    kind: "Role",
    metadata: { name: "r", namespace: "a" },
    rules,
  });

  it("lets a user write a role only with rules they hold", async () => {
    const env = cluster();
    await checkRoleEscalation(bob, roleObj([{ verbs: ["get"], apiGroups: [""], resources: ["pods"] }]), env);
    const e = await error(
      checkRoleEscalation(
        alice,
        roleObj([{ verbs: ["create", "get"], apiGroups: [""], resources: ["pods"] }]),
        env,
      ),
    );
    expect(e.code).toBe(403);
    expect(e.message).toBe(
      'roles.rbac.authorization.k8s.io "r" is forbidden: user "alice" (groups=["group-x" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["pods"], Verbs:["create"]}',
    );
    await checkRoleEscalation(
      user("root", "system:masters"),
      roleObj([{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }]),
      env,
    );
    const agg = {
      apiVersion: `${RBAC}/v1`,
      kind: "ClusterRole",
      metadata: { name: "c" },
      aggregationRule: { clusterRoleSelectors: [{ matchLabels: { x: "y" } }] },
    };
    expect((await error(checkRoleEscalation(bob, agg, env))).message).toBe(
      'clusterroles.rbac.authorization.k8s.io "c" is forbidden: must have cluster-admin privileges to use the aggregationRule',
    );
  });

  it("lets a user bind a role only with its rules held, or with bind on it", async () => {
    const env = cluster();
    const binding = (ref: { kind: string; name: string }, name = "b") => ({
      apiVersion: `${RBAC}/v1`,
      kind: "RoleBinding",
      metadata: { name, namespace: "a" },
      roleRef: { apiGroup: RBAC, ...ref },
      subjects: [U("carol")],
    });
    await checkBindingEscalation(bob, binding({ kind: "ClusterRole", name: "edit" }), env);
    await checkBindingEscalation(bob, binding({ kind: "Role", name: "pod-creator" }), env);
    const e = await error(checkBindingEscalation(alice, binding({ kind: "ClusterRole", name: "edit" }), env));
    expect(e.code).toBe(403);
    expect(e.message).toMatch(
      /^rolebindings\.rbac\.authorization\.k8s\.io "b" is forbidden: user "alice" \(groups=\["group-x" "system:authenticated"\]\) is attempting to grant RBAC permissions not currently held:\n/,
    );
    expect(e.message).toContain(
      '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "watch" "create" "delete" "deletecollection" "patch" "update"]}',
    );
    const admin = await error(
      checkBindingEscalation(bob, binding({ kind: "ClusterRole", name: "cluster-admin" }), env),
    );
    expect(admin.code).toBe(403);
    const missing = await error(checkBindingEscalation(bob, binding({ kind: "Role", name: "nope" }), env));
    expect(missing.code).toBe(404);
    expect(missing.message).toBe('role.rbac.authorization.k8s.io "nope" not found');
  });
});
