import { describe, expect, it } from "vitest";
import { bootstrapClusterRoleBindings, bootstrapClusterRoles } from "../../../api/rbac/bootstrap";
import { invalidateRbacCache, RBACAuthorizer, type RbacSource } from "../../../workers/authz/rbac";
import type { RbacObjects } from "../../../workers/authz/rbac-snapshot";
import type { Attributes } from "../../../workers/authz/types";
import { clusterRole, clusterRoleBinding, fakeEnv, G, role, roleBinding, U, user } from "./fake-env";

function attrs(
  u: Attributes["user"],
  verb: string,
  resource: string,
  namespace: string,
  extra: Partial<Attributes> = {},
): Attributes {
  return {
    user: u,
    verb,
    apiGroup: "",
    resource,
    subresource: "",
    namespace,
    name: "",
    path: "",
    isResourceRequest: true,
    ...extra,
  };
}

function policy(extra: Partial<RbacObjects> = {}): RbacObjects {
  return {
    roles: extra.roles ?? [],
    clusterRoles: [...bootstrapClusterRoles(), ...(extra.clusterRoles ?? [])],
    roleBindings: extra.roleBindings ?? [],
    clusterRoleBindings: [...bootstrapClusterRoleBindings(), ...(extra.clusterRoleBindings ?? [])],
  };
}

const env = fakeEnv({});
const alice = user("alice", "group-x");

describe("RBACAuthorizer", () => {
  const objs = policy({
    roleBindings: [roleBinding("a", "alice-view", { kind: "ClusterRole", name: "view" }, [U("alice")])],
    roles: [role("b", "cm-writer", [{ verbs: ["create"], apiGroups: [""], resources: ["configmaps"] }])],
  });
  objs.roleBindings.push(roleBinding("b", "group-cm", { kind: "Role", name: "cm-writer" }, [G("group-x")]));
  const authz = new RBACAuthorizer(async () => objs);

  it("allows through a RoleBinding only in its namespace, with upstream's reason", async () => {
    const ok = await authz.authorize(attrs(alice, "get", "pods", "a"), env);
    expect(ok).toEqual({
      decision: "allow",
      reason: 'RBAC: allowed by RoleBinding "alice-view/a" of ClusterRole "view" to User "alice"',
    });
    expect((await authz.authorize(attrs(alice, "get", "pods", "b"), env)).decision).toBe("noOpinion");
    expect((await authz.authorize(attrs(alice, "create", "pods", "a"), env)).decision).toBe("noOpinion");
    expect((await authz.authorize(attrs(alice, "list", "pods", ""), env)).decision).toBe("noOpinion");
    const viaGroup = await authz.authorize(attrs(alice, "create", "configmaps", "b"), env);
    expect(viaGroup.reason).toBe(
      'RBAC: allowed by RoleBinding "group-cm/b" of Role "cm-writer" to Group "group-x"',
    );
  });

  it("gives system:masters everything through the cluster-admin binding", async () => {
    const admin = user("root", "system:masters");
    const r = await authz.authorize(attrs(admin, "delete", "nodes", ""), env);
    expect(r.reason).toBe(
      'RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters"',
    );
  });

  it("allows anonymous health checks and authenticated discovery only", async () => {
    const anon = { name: "system:anonymous", uid: "", groups: ["system:unauthenticated"] };
    const path = (u: Attributes["user"], p: string) =>
      authz.authorize({ ...attrs(u, "get", "", ""), isResourceRequest: false, path: p }, env);
    expect((await path(anon, "/readyz")).decision).toBe("allow");
    expect((await path(anon, "/api")).decision).toBe("noOpinion");
    expect((await path(alice, "/api")).decision).toBe("allow");
  });

  it("reports bindings to missing roles in the reason", async () => {
    const a = new RBACAuthorizer(async () =>
      policy({ clusterRoleBindings: [clusterRoleBinding("dangling", "nope", [U("alice")])] }),
    );
    const r = await a.authorize(attrs(alice, "get", "pods", "x"), env);
    expect(r).toEqual({
      decision: "noOpinion",
      reason: 'RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found',
    });
  });

  it("matches service account subjects, namespace defaulted to the binding's", async () => {
    const sa = {
      name: "system:serviceaccount:a:builder",
      uid: "",
      groups: ["system:serviceaccounts", "system:authenticated"],
    };
    const a = new RBACAuthorizer(async () =>
      policy({
        roleBindings: [
          roleBinding("a", "sa-edit", { kind: "ClusterRole", name: "edit" }, [
            { kind: "ServiceAccount", name: "builder" },
          ]),
        ],
      }),
    );
    const r = await a.authorize(attrs(sa, "create", "deployments", "a", { apiGroup: "apps" }), env);
    expect(r.reason).toBe(
      'RBAC: allowed by RoleBinding "sa-edit/a" of ClusterRole "edit" to ServiceAccount "builder/a"',
    );
  });

  it("sees a change after invalidateRbacCache, and reloads only when stale", async () => {
    let current = policy();
    let loads = 0;
    const source: RbacSource = async () => {
      loads++;
      return current;
    };
    const a = new RBACAuthorizer(source, 60_000);
    expect((await a.authorize(attrs(alice, "get", "pods", "n"), env)).decision).toBe("noOpinion");
    current = policy({
      roleBindings: [roleBinding("n", "v", { kind: "ClusterRole", name: "view" }, [U("alice")])],
    });
    expect((await a.authorize(attrs(alice, "get", "pods", "n"), env)).decision).toBe("noOpinion");
    expect(loads).toBe(1);
    invalidateRbacCache();
    expect((await a.authorize(attrs(alice, "get", "pods", "n"), env)).decision).toBe("allow");
    expect(loads).toBe(2);
  });

  it("computes aggregated ClusterRoles at decision time", async () => {
    const a = new RBACAuthorizer(async () =>
      policy({
        clusterRoles: [
          clusterRole("widgets", [{ verbs: ["get"], apiGroups: ["example.com"], resources: ["widgets"] }], {
            "rbac.authorization.k8s.io/aggregate-to-view": "true",
          }),
        ],
        roleBindings: [roleBinding("n", "adm", { kind: "ClusterRole", name: "admin" }, [U("alice")])],
      }),
    );
    // view -> edit -> admin
    expect(
      (await a.authorize(attrs(alice, "get", "widgets", "n", { apiGroup: "example.com" }), env)).decision,
    ).toBe("allow");
  });

  it("reads its objects from the store shards", async () => {
    const e = fakeEnv({
      "rbac.authorization.k8s.io/rolebindings": [
        roleBinding("s", "v", { kind: "ClusterRole", name: "view" }, [U("alice")]),
      ],
    });
    const a = new RBACAuthorizer();
    // the bootstrap policy is supplied until it has been written to the store
    expect((await a.authorize(attrs(alice, "list", "pods", "s"), e)).decision).toBe("allow");
    expect((await a.authorize(attrs(alice, "list", "pods", "t"), e)).decision).toBe("noOpinion");
  });

  it("stays fast with 1,000 roles and bindings", async () => {
    const roles = [];
    const roleBindings = [];
    for (let i = 0; i < 500; i++) {
      roles.push(
        role(`ns${i % 50}`, `r${i}`, [
          { verbs: ["get", "list"], apiGroups: [""], resources: ["configmaps", `thing${i}`] },
        ]),
      );
      roleBindings.push(
        roleBinding(`ns${i % 50}`, `b${i}`, { kind: "Role", name: `r${i}` }, [
          U(`user${i}`),
          G(`team${i % 20}`),
        ]),
      );
    }
    roleBindings.push(roleBinding("ns7", "alice-edit", { kind: "ClusterRole", name: "edit" }, [U("alice")]));
    const a = new RBACAuthorizer(async () => policy({ roles, roleBindings }), 60_000);
    await a.authorize(attrs(alice, "create", "pods", "ns7"), env);
    const start = performance.now();
    let allowed = 0;
    for (let i = 0; i < 20_000; i++) {
      const u = i % 2 ? alice : user(`user${i % 500}`, `team${i % 20}`);
      const r = await a.authorize(
        attrs(u, i % 2 ? "create" : "get", i % 2 ? "pods" : "configmaps", `ns${i % 2 ? 7 : (i % 500) % 50}`),
        env,
      );
      if (r.decision === "allow") allowed++;
    }
    const perDecisionUs = ((performance.now() - start) * 1000) / 20_000;
    expect(allowed).toBe(20_000);
    expect(perDecisionUs).toBeLessThan(50);
  });
});

describe("RBAC cache refresh", () => {
  it("serves the cached snapshot past the TTL while comparing revisions, and reloads on change", async () => {
    let version = "1";
    let current = policy();
    let loads = 0;
    let stamps = 0;
    const a = new RBACAuthorizer(
      async () => {
        loads++;
        return current;
      },
      20,
      async () => {
        stamps++;
        return version;
      },
    );
    const e = fakeEnv({});
    expect((await a.authorize(attrs(alice, "get", "pods", "n"), e)).decision).toBe("noOpinion");
    expect([loads, stamps]).toEqual([1, 1]);
    await new Promise((r) => setTimeout(r, 30));
    await a.authorize(attrs(alice, "get", "pods", "n"), e); // stale: refresh in the background
    await new Promise((r) => setTimeout(r, 5));
    expect([loads, stamps]).toEqual([1, 2]); // same revision: no reload
    current = policy({
      roleBindings: [roleBinding("n", "v", { kind: "ClusterRole", name: "view" }, [U("alice")])],
    });
    version = "2";
    await new Promise((r) => setTimeout(r, 30));
    await a.authorize(attrs(alice, "get", "pods", "n"), e);
    await new Promise((r) => setTimeout(r, 5));
    expect(loads).toBe(2);
    expect((await a.authorize(attrs(alice, "get", "pods", "n"), e)).decision).toBe("allow");
  });
});
