import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../api/types";
import { NodeAuthorizer, nodeIdentity } from "../../../workers/authz/node";
import { NodeGraph, refsOf } from "../../../workers/authz/node-graph";
import { nodeRestriction } from "../../../workers/authz/node-restriction";
import type { Attributes } from "../../../workers/authz/types";
import { fakeEnv } from "./fake-env";

const nodeA = { name: "system:node:node-a", uid: "", groups: ["system:nodes", "system:authenticated"] };

function pod(name: string, nodeName: string, spec: Record<string, unknown> = {}, ns = "default"): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: ns, uid: `uid-${name}` },
    spec: { nodeName, containers: [], ...spec },
  };
}

const pods = [
  pod("web", "node-a", {
    serviceAccountName: "web-sa",
    imagePullSecrets: [{ name: "pull" }],
    containers: [
      {
        name: "c",
        env: [{ name: "X", valueFrom: { secretKeyRef: { name: "env-secret", key: "k" } } }],
        envFrom: [{ configMapRef: { name: "env-cm" } }],
      },
    ],
    volumes: [
      { name: "v1", secret: { secretName: "vol-secret" } },
      {
        name: "v2",
        projected: { sources: [{ configMap: { name: "proj-cm" } }, { secret: { name: "proj-secret" } }] },
      },
      { name: "data", persistentVolumeClaim: { claimName: "claim" } },
    ],
  }),
  pod("db", "node-b", { volumes: [{ name: "s", secret: { secretName: "db-secret" } }] }),
  pod("pending", "", { volumes: [{ name: "s", secret: { secretName: "pending-secret" } }] }),
];
const env = fakeEnv({ "/pods": pods });
const authz = new NodeAuthorizer(new NodeGraph());

function a(verb: string, resource: string, extra: Partial<Attributes> = {}): Attributes {
  return {
    user: nodeA,
    verb,
    apiGroup: "",
    resource,
    subresource: "",
    namespace: "default",
    name: "",
    path: "",
    isResourceRequest: true,
    ...extra,
  };
}

describe("node identity", () => {
  it("needs both the system:node: name and the system:nodes group", () => {
    expect(nodeIdentity(nodeA)).toEqual(["node-a", true]);
    expect(nodeIdentity({ name: "system:node:x", groups: [] })).toEqual(["", false]);
    expect(nodeIdentity({ name: "alice", groups: ["system:nodes"] })).toEqual(["", false]);
  });

  it("has no opinion on non-nodes and reports unnamed nodes", async () => {
    expect(
      await authz.authorize(
        { ...a("get", "secrets", { name: "pull" }), user: { name: "alice", uid: "", groups: [] } },
        env,
      ),
    ).toEqual({ decision: "noOpinion", reason: "" });
    const r = await authz.authorize(
      {
        ...a("get", "secrets", { name: "pull" }),
        user: { name: "system:node:", uid: "", groups: ["system:nodes"] },
      },
      env,
    );
    expect(r.reason).toBe('unknown node for user "system:node:"');
  });
});

describe("the node graph", () => {
  it("collects what pods bound to the node reference", () => {
    const refs = refsOf(pods, "node-a");
    expect([...refs.secrets].sort()).toEqual(["env-secret", "proj-secret", "pull", "vol-secret"]);
    expect([...refs.configmaps].sort()).toEqual(["env-cm", "proj-cm"]);
    expect([...refs.serviceaccounts]).toEqual(["web-sa"]);
    expect([...refs.persistentvolumeclaims]).toEqual(["claim"]);
    expect([...refs.pods]).toEqual(["web"]);
    expect(refsOf(pods, "").secrets.size).toBe(0);
  });

  it("lets a node read secrets and configmaps of its own pods only", async () => {
    for (const name of ["pull", "env-secret", "vol-secret", "proj-secret"])
      expect((await authz.authorize(a("get", "secrets", { name }), env)).decision).toBe("allow");
    expect((await authz.authorize(a("watch", "configmaps", { name: "env-cm" }), env)).decision).toBe("allow");
    for (const name of ["db-secret", "pending-secret", "unknown"])
      expect(await authz.authorize(a("get", "secrets", { name }), env)).toEqual({
        decision: "noOpinion",
        reason: "no relationship found between node 'node-a' and this object",
      });
    expect(
      (await authz.authorize(a("get", "secrets", { name: "pull", namespace: "other" }), env)).decision,
    ).toBe("noOpinion");
    expect((await authz.authorize(a("list", "secrets"), env)).reason).toBe("No Object name found");
    expect((await authz.authorize(a("update", "secrets", { name: "pull" }), env)).reason).toBe(
      "can only read resources of this type",
    );
    expect((await authz.authorize(a("get", "persistentvolumeclaims", { name: "claim" }), env)).decision).toBe(
      "allow",
    );
  });

  it("sees a pod bound after the last read on the next miss", async () => {
    const data = { "/pods": [pod("late", "node-z")] };
    const e = fakeEnv(data);
    const g = new NodeAuthorizer(new NodeGraph(undefined, 60_000, 0));
    const z = { ...nodeA, name: "system:node:node-z" };
    expect((await g.authorize({ ...a("get", "secrets", { name: "new" }), user: z }, e)).decision).toBe(
      "noOpinion",
    );
    data["/pods"].push(pod("late2", "node-z", { volumes: [{ name: "s", secret: { secretName: "new" } }] }));
    expect((await g.authorize({ ...a("get", "secrets", { name: "new" }), user: z }, e)).decision).toBe(
      "allow",
    );
  });

  it("issues tokens only for service accounts of its pods", async () => {
    expect(
      (await authz.authorize(a("create", "serviceaccounts", { name: "web-sa", subresource: "token" }), env))
        .decision,
    ).toBe("allow");
    expect(
      (await authz.authorize(a("create", "serviceaccounts", { name: "default", subresource: "token" }), env))
        .decision,
    ).toBe("noOpinion");
    expect((await authz.authorize(a("get", "serviceaccounts", { name: "web-sa" }), env)).reason).toBe(
      "can only create tokens for individual service accounts",
    );
  });
});

describe("nodes, pods and leases", () => {
  it("reads only its own Node, may write nodes and node status (admission narrows it)", async () => {
    const n = (verb: string, name: string, sub = "") =>
      authz.authorize(a(verb, "nodes", { namespace: "", name, subresource: sub }), env);
    expect((await n("get", "node-a")).decision).toBe("allow");
    expect((await n("get", "node-b")).reason).toBe(
      "node 'node-a' cannot read 'node-b', only its own Node object",
    );
    expect((await n("list", "")).reason).toBe(
      "node 'node-a' cannot read all nodes, only its own Node object",
    );
    expect((await n("patch", "node-b", "status")).decision).toBe("allow");
    expect((await n("delete", "node-a")).decision).toBe("noOpinion");
  });

  it("lists pods only with its own spec.nodeName selector, gets only its pods, never binds", async () => {
    expect(
      (
        await authz.authorize(
          a("list", "pods", { namespace: "", fieldSelector: "spec.nodeName=node-a" }),
          env,
        )
      ).decision,
    ).toBe("allow");
    expect(
      (
        await authz.authorize(
          a("watch", "pods", { namespace: "", fieldSelector: "spec.nodeName=node-b" }),
          env,
        )
      ).reason,
    ).toBe("can only list/watch pods with spec.nodeName field selector");
    expect((await authz.authorize(a("get", "pods", { name: "web" }), env)).decision).toBe("allow");
    expect((await authz.authorize(a("get", "pods", { name: "db" }), env)).decision).toBe("noOpinion");
    expect(await authz.authorize(a("create", "pods", { name: "db", subresource: "binding" }), env)).toEqual({
      decision: "noOpinion",
      reason: "",
    });
    expect(
      (await authz.authorize(a("patch", "pods", { name: "db", subresource: "status" }), env)).decision,
    ).toBe("allow");
  });

  it("uses only its own lease in kube-node-lease, and the static rules elsewhere", async () => {
    const l = (verb: string, name: string, namespace = "kube-node-lease") =>
      authz.authorize(a(verb, "leases", { apiGroup: "coordination.k8s.io", name, namespace }), env);
    expect((await l("update", "node-a")).decision).toBe("allow");
    expect((await l("create", "")).decision).toBe("allow");
    expect((await l("update", "node-b")).reason).toBe(
      "can only access node lease with the same name as the requesting node",
    );
    expect((await l("get", "node-a", "default")).reason).toBe(
      'can only access leases in the "kube-node-lease" system namespace',
    );
    expect((await l("list", "")).reason).toBe("can only get, create, update, patch, or delete a node lease");
    expect((await authz.authorize(a("create", "events"), env)).decision).toBe("allow");
    expect((await authz.authorize(a("list", "services", { namespace: "" }), env)).decision).toBe("allow");
    expect((await authz.authorize(a("create", "deployments", { apiGroup: "apps" }), env)).decision).toBe(
      "noOpinion",
    );
  });
});

describe("NodeRestriction", () => {
  const ctx = {
    env: fakeEnv({
      "/pods": pods,
      "/nodes": [{ apiVersion: "v1", kind: "Node", metadata: { name: "node-a", uid: "n-a" } }],
    }),
  };
  const msg = async (p: Promise<void>) =>
    p.then(
      () => "ok",
      (e: Error & { code?: number }) => `${e.code} ${e.message}`,
    );

  it("confines a node to its own Node object and allowed labels", async () => {
    const node = (name: string, labels: Record<string, string> = {}, taints?: unknown[]) => ({
      apiVersion: "v1",
      kind: "Node",
      metadata: { name, labels },
      spec: taints ? { taints } : {},
    });
    expect(
      await msg(nodeRestriction(nodeA, "UPDATE", "nodes", "status", node("node-b"), node("node-b"), ctx)),
    ).toBe('403 nodes "node-b" is forbidden: node "node-a" is not allowed to modify node "node-b"');
    expect(
      await msg(
        nodeRestriction(
          nodeA,
          "CREATE",
          "nodes",
          "",
          node("node-a", { "kubernetes.io/hostname": "a", "example.com/x": "y" }),
          undefined,
          ctx,
        ),
      ),
    ).toBe("ok");
    expect(
      await msg(
        nodeRestriction(
          nodeA,
          "CREATE",
          "nodes",
          "",
          node("node-a", { "node-restriction.kubernetes.io/pool": "p", "foo.k8s.io/x": "1" }),
          undefined,
          ctx,
        ),
      ),
    ).toBe(
      '403 nodes "node-a" is forbidden: node "node-a" is not allowed to set the following labels: foo.k8s.io/x, node-restriction.kubernetes.io/pool',
    );
    expect(
      await msg(
        nodeRestriction(
          nodeA,
          "UPDATE",
          "nodes",
          "",
          node("node-a", { "node-role.kubernetes.io/master": "" }),
          node("node-a"),
          ctx,
        ),
      ),
    ).toBe(
      '403 nodes "node-a" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/master',
    );
    expect(
      await msg(
        nodeRestriction(
          nodeA,
          "UPDATE",
          "nodes",
          "",
          node("node-a", {}, [{ key: "k", effect: "NoSchedule" }]),
          node("node-a"),
          ctx,
        ),
      ),
    ).toBe('403 nodes "node-a" is forbidden: node "node-a" is not allowed to modify taints');
  });

  it("lets a node update the status of and delete only pods bound to it", async () => {
    const web = pods[0];
    const db = pods[1];
    expect(
      await msg(
        nodeRestriction(
          nodeA,
          "UPDATE",
          "pods",
          "status",
          { ...web, status: { phase: "Running" } },
          web,
          ctx,
        ),
      ),
    ).toBe("ok");
    expect(await msg(nodeRestriction(nodeA, "UPDATE", "pods", "status", db, db, ctx))).toBe(
      '403 pods "db" is forbidden: node "node-a" can only update pod status for pods with spec.nodeName set to itself',
    );
    const relabel = { ...web, metadata: { ...web.metadata, labels: { a: "b" } } };
    expect(await msg(nodeRestriction(nodeA, "UPDATE", "pods", "status", relabel, web, ctx))).toBe(
      '403 pods "web" is forbidden: node "node-a" cannot update labels through pod status',
    );
    expect(
      await msg(
        nodeRestriction(nodeA, "DELETE", "pods", "", undefined, db, {
          ...ctx,
          name: "db",
          namespace: "default",
        }),
      ),
    ).toBe('403 pods "db" is forbidden: node "node-a" can only delete pods with spec.nodeName set to itself');
    expect(
      await msg(
        nodeRestriction(nodeA, "DELETE", "pods", "", undefined, undefined, {
          ...ctx,
          name: "web",
          namespace: "default",
        }),
      ),
    ).toBe("ok");
  });

  it("allows only proper mirror pods and pod-bound token requests", async () => {
    const mirror = (owner: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "static-web-node-a",
        namespace: "default",
        annotations: { "kubernetes.io/config.mirror": "h" },
        ownerReferences: [owner],
      },
      spec: { nodeName: "node-a", containers: [], ...extra },
    });
    const owner = { apiVersion: "v1", kind: "Node", name: "node-a", uid: "n-a", controller: true };
    expect(await msg(nodeRestriction(nodeA, "CREATE", "pods", "", mirror(owner), undefined, ctx))).toBe("ok");
    expect(await msg(nodeRestriction(nodeA, "CREATE", "pods", "", pods[0], undefined, ctx))).toBe(
      '403 pods "web" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "node-a" can only create mirror pods',
    );
    expect(
      await msg(
        nodeRestriction(nodeA, "CREATE", "pods", "", mirror({ ...owner, uid: "other" }), undefined, ctx),
      ),
    ).toBe('403 pods "static-web-node-a" is forbidden: node node-a UID mismatch: expected other got n-a');
    expect(
      await msg(
        nodeRestriction(
          nodeA,
          "CREATE",
          "pods",
          "",
          mirror(owner, { volumes: [{ name: "s", secret: { secretName: "x" } }] }),
          undefined,
          ctx,
        ),
      ),
    ).toBe(
      '403 pods "static-web-node-a" is forbidden: node "node-a" can not create pods that reference secrets',
    );
    const tr = (name: string, uid: string) => ({
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      metadata: { name: "web-sa" },
      spec: { boundObjectRef: { apiVersion: "v1", kind: "Pod", name, uid } },
    });
    expect(
      await msg(
        nodeRestriction(nodeA, "CREATE", "serviceaccounts", "token", tr("web", "uid-web"), undefined, {
          ...ctx,
          namespace: "default",
        }),
      ),
    ).toBe("ok");
    expect(
      await msg(
        nodeRestriction(nodeA, "CREATE", "serviceaccounts", "token", tr("db", "uid-db"), undefined, {
          ...ctx,
          namespace: "default",
        }),
      ),
    ).toBe(
      '403 serviceaccounts "web-sa" is forbidden: node requested token bound to a pod scheduled on a different node',
    );
  });

  it("ignores users that are not nodes", async () => {
    expect(
      await msg(
        nodeRestriction({ name: "alice", uid: "", groups: [] }, "UPDATE", "nodes", "", pods[1], pods[1], ctx),
      ),
    ).toBe("ok");
  });
});
