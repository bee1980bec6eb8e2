import { describe, expect, it } from "vitest";
import { type ClusterRoleLike, effectiveClusterRoleRules } from "../../../api/rbac/aggregation";
import { bootstrapClusterRoleBindings, bootstrapClusterRoles } from "../../../api/rbac/bootstrap";
import { covers, type PolicyRule, rulesAllow } from "../../../api/rbac/rules";
import { clusterrolebindings, clusterroles } from "../../../api/strategies/rbac";

const roles = bootstrapClusterRoles();
const bindings = bootstrapClusterRoleBindings();
const effective = effectiveClusterRoleRules(roles as ClusterRoleLike[]);
const rulesOf = (name: string): PolicyRule[] => effective.get(name)!;
const can = (role: string, verb: string, resource: string, group = "", subresource = "") =>
  rulesAllow(
    { verb, isResourceRequest: true, apiGroup: group, resource, subresource, name: "" },
    rulesOf(role),
  );

describe("bootstrap policy data", () => {
  it("labels and annotates every object as upstream and passes the API's own validation", () => {
    for (const o of [...roles, ...bindings]) {
      expect(o.metadata.labels?.["kubernetes.io/bootstrapping"]).toBe("rbac-defaults");
      expect(o.metadata.annotations?.["rbac.authorization.kubernetes.io/autoupdate"]).toBe("true");
    }
    for (const o of roles) expect(clusterroles.strategy.validate!(o)).toEqual([]);
    for (const o of bindings) {
      clusterrolebindings.strategy.defaults!(o);
      expect(clusterrolebindings.strategy.validate!(o)).toEqual([]);
    }
  });

  it("binds every binding to a role it defines, with upstream's subjects", () => {
    const names = new Set(roles.map((r) => r.metadata.name));
    for (const b of bindings) expect(names.has(b.roleRef.name)).toBe(true);
    const subjects = (n: string) =>
      bindings.find((b) => b.metadata.name === n)?.subjects?.map((s: any) => `${s.kind}:${s.name}`);
    expect(subjects("cluster-admin")).toEqual(["Group:system:masters"]);
    expect(subjects("system:public-info-viewer")).toEqual([
      "Group:system:authenticated",
      "Group:system:unauthenticated",
    ]);
    expect(subjects("system:discovery")).toEqual(["Group:system:authenticated"]);
    expect(subjects("system:basic-user")).toEqual(["Group:system:authenticated"]);
    expect(subjects("system:kube-scheduler")).toEqual(["User:system:kube-scheduler"]);
    expect(subjects("system:node")).toBeUndefined();
    for (const n of [
      "system:node-bootstrapper",
      "system:node",
      "system:node-proxier",
      "system:kube-controller-manager",
    ])
      expect(names.has(n)).toBe(true);
  });

  it("aggregates view into edit into admin, each a superset of the next", () => {
    expect(covers(rulesOf("admin"), rulesOf("edit")).covers).toBe(true);
    expect(covers(rulesOf("edit"), rulesOf("view")).covers).toBe(true);
    expect(covers(rulesOf("view"), rulesOf("edit")).covers).toBe(false);
    expect(can("view", "get", "pods")).toBe(true);
    expect(can("view", "get", "secrets")).toBe(false);
    expect(can("view", "create", "pods")).toBe(false);
    expect(can("edit", "create", "pods")).toBe(true);
    expect(can("edit", "get", "secrets")).toBe(true);
    expect(can("edit", "create", "rolebindings", "rbac.authorization.k8s.io")).toBe(false);
    expect(can("admin", "create", "rolebindings", "rbac.authorization.k8s.io")).toBe(true);
    expect(can("admin", "update", "deployments", "apps", "scale")).toBe(true);
    expect(can("cluster-admin", "anything", "whatever", "x.io", "sub")).toBe(true);
  });

  it("lets everyone read health and version, and authenticated users discovery", () => {
    const get = (role: string, path: string) =>
      rulesAllow({ verb: "get", isResourceRequest: false, path }, rulesOf(role));
    expect(get("system:public-info-viewer", "/readyz")).toBe(true);
    expect(get("system:public-info-viewer", "/version")).toBe(true);
    expect(get("system:public-info-viewer", "/api")).toBe(false);
    expect(get("system:discovery", "/apis/apps/v1")).toBe(true);
    expect(get("system:discovery", "/openapi/v3")).toBe(true);
  });

  it("lets every service account read the issuer's discovery document and keys", () => {
    const role = roles.find((r) => r.metadata.name === "system:service-account-issuer-discovery");
    expect(role?.rules).toEqual([
      {
        verbs: ["get"],
        nonResourceURLs: [
          "/.well-known/openid-configuration",
          "/.well-known/openid-configuration/",
          "/openid/v1/jwks",
          "/openid/v1/jwks/",
        ],
      },
    ]);
    const binding = bindings.find((b) => b.metadata.name === "system:service-account-issuer-discovery");
    expect(binding).toMatchObject({
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: "system:service-account-issuer-discovery",
      },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "system:serviceaccounts" }],
    });
    const get = (path: string) =>
      rulesAllow({ verb: "get", isResourceRequest: false, path }, rulesOf(role!.metadata.name!));
    expect(get("/openid/v1/jwks")).toBe(true);
    expect(get("/.well-known/openid-configuration")).toBe(true);
    expect(get("/api")).toBe(false);
  });
});
