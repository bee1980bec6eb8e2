// Authorization through the real apiserver on workerd: RBAC (bindings, kubectl auth can-i,
// escalation prevention) and the Node authorizer with NodeRestriction. Its own server, with
// static tokens for plain users and two nodes.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDevServer } from "../../local-engine/devserver";
import { api, freshNamespace, hasKubectl, kubectl, type Target } from "../helpers/cluster";
import { removeStateDir, tempStateDir } from "../helpers/own-server";

const RBAC = "rbac.authorization.k8s.io";
const TOKENS = [
  "tok-alice,alice,u1,",
  "tok-bob,bob,u2,group-x",
  "tok-node-a,system:node:node-a,u3,system:nodes",
  "tok-node-b,system:node:node-b,u4,system:nodes",
];

describe("authorization", () => {
  let server: Target & { stop(): Promise<void>; stateDir: string };
  let stateDir: string;
  const as = (token: string, name: string): Target => {
    const kubeconfigPath = join(stateDir, `kubeconfig-${name}`);
    return { url: server.url, token, kubeconfigPath };
  };
  let alice: Target;
  let bob: Target;
  let nodeA: Target;
  let nodeB: Target;

  beforeAll(async () => {
    stateDir = tempStateDir("edgeplane-authz-");
    server = await startDevServer({ stateDir, quiet: true, tokens: TOKENS });
    const base = readFileSync(server.kubeconfigPath, "utf8");
    for (const [token, name] of [
      ["tok-alice", "alice"],
      ["tok-bob", "bob"],
      ["tok-node-a", "node-a"],
      ["tok-node-b", "node-b"],
    ])
      writeFileSync(
        join(stateDir, `kubeconfig-${name}`),
        base.replace(`token: ${server.token}`, `token: ${token}`),
        { mode: 0o600 },
      );
    alice = as("tok-alice", "alice");
    bob = as("tok-bob", "bob");
    nodeA = as("tok-node-a", "node-a");
    nodeB = as("tok-node-b", "node-b");
  });

  afterAll(async () => {
    await server?.stop();
    removeStateDir(stateDir);
  });

  /** RBAC decisions are cached per isolate for about a second: retry briefly. */
  async function eventually<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 4000): Promise<T> {
    const end = Date.now() + ms;
    for (;;) {
      const v = await fn();
      if (ok(v) || Date.now() > end) return v;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  const binding = (
    ns: string,
    name: string,
    roleKind: string,
    role: string,
    subject: Record<string, string>,
  ) => ({
    apiVersion: `${RBAC}/v1`,
    kind: "RoleBinding",
    metadata: { name, namespace: ns },
    roleRef: { apiGroup: RBAC, kind: roleKind, name: role },
    subjects: [subject],
  });
  const userSubject = (name: string) => ({ apiGroup: RBAC, kind: "User", name });

  it("stores the bootstrap policy: cluster-admin for system:masters, admin/edit/view aggregated", async () => {
    const crb = await api(server, "GET", `/apis/${RBAC}/v1/clusterrolebindings/cluster-admin`);
    expect(crb.status).toBe(200);
    expect(crb.json.subjects).toEqual([{ apiGroup: RBAC, kind: "Group", name: "system:masters" }]);
    expect(crb.json.metadata.labels["kubernetes.io/bootstrapping"]).toBe("rbac-defaults");
    const view = await api(server, "GET", `/apis/${RBAC}/v1/clusterroles/view`);
    expect(view.json.aggregationRule.clusterRoleSelectors[0].matchLabels).toEqual({
      [`${RBAC}/aggregate-to-view`]: "true",
    });
    const anon = await fetch(`${server.url}/readyz`);
    expect(anon.status).toBe(200);
  });

  it("lets a user bound to view in A read pods in A only, and never write", async () => {
    const a = await freshNamespace(server, "authz-a");
    const b = await freshNamespace(server, "authz-b");
    const rb = await api(
      server,
      "POST",
      `/apis/${RBAC}/v1/namespaces/${a}/rolebindings`,
      binding(a, "alice-view", "ClusterRole", "view", userSubject("alice")),
    );
    expect(rb.status).toBe(201);
    const inA = await eventually(
      () => api(alice, "GET", `/api/v1/namespaces/${a}/pods`),
      (r) => r.status === 200,
    );
    expect(inA.status).toBe(200);
    const inB = await api(alice, "GET", `/api/v1/namespaces/${b}/pods`);
    expect(inB.status).toBe(403);
    expect(inB.json).toMatchObject({
      kind: "Status",
      reason: "Forbidden",
      code: 403,
      message: `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "${b}"`,
    });
    const create = await api(alice, "POST", `/api/v1/namespaces/${a}/pods`, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p" },
      spec: { containers: [{ name: "c", image: "busybox" }] },
    });
    expect(create.status).toBe(403);
    expect(create.json.message).toBe(
      `pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace "${a}"`,
    );
    const secret = await api(alice, "GET", `/api/v1/namespaces/${a}/secrets`);
    expect(secret.status).toBe(403);
  });

  it.skipIf(!hasKubectl)("kubectl auth can-i answers what the server enforces", async () => {
    const a = await freshNamespace(server, "authz-k");
    await api(
      server,
      "POST",
      `/apis/${RBAC}/v1/namespaces/${a}/rolebindings`,
      binding(a, "alice-view", "ClusterRole", "view", userSubject("alice")),
    );
    const yes = await eventually(
      () => kubectl(alice, ["auth", "can-i", "get", "pods", "-n", a]),
      (r) => r.code === 0,
    );
    expect(yes.stdout.trim()).toBe("yes");
    const no = await kubectl(alice, ["auth", "can-i", "create", "pods", "-n", a]);
    expect(no.code).toBe(1);
    expect(no.stdout.trim()).toBe("no");
    const other = await kubectl(alice, ["auth", "can-i", "get", "pods", "-n", "default"]);
    expect(other.stdout.trim()).toBe("no");
    const list = await kubectl(alice, ["auth", "can-i", "--list", "-n", a]);
    expect(list.code).toBe(0);
    const podsLine = list.stdout.split("\n").find((l) => /^pods\s/.test(l));
    expect(podsLine).toMatch(/\[get list watch\]/);
    expect(list.stdout).toMatch(/selfsubjectaccessreviews\.authorization\.k8s\.io\s.*\[create\]/);
  });

  it("answers access reviews for the caller and, for admins, about others", async () => {
    const ssar = await api(alice, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectAccessReview",
      spec: { resourceAttributes: { verb: "delete", resource: "nodes" } },
    });
    expect(ssar.status).toBe(201);
    expect(ssar.json.status).toEqual({ allowed: false });
    const sar = await api(server, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      spec: {
        user: "root",
        groups: ["system:masters"],
        resourceAttributes: { verb: "delete", resource: "nodes" },
      },
    });
    expect(sar.json.status.allowed).toBe(true);
    const invalid = await api(server, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      spec: { resourceAttributes: { verb: "get", resource: "pods" } },
    });
    expect(invalid.status).toBe(422);
    const notAllowed = await api(alice, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      spec: { user: "bob", resourceAttributes: { verb: "get", resource: "pods" } },
    });
    expect(notAllowed.status).toBe(403);
  });

  it("does not let a user grant more than they hold", async () => {
    const ns = await freshNamespace(server, "authz-esc");
    await api(
      server,
      "POST",
      `/apis/${RBAC}/v1/namespaces/${ns}/rolebindings`,
      binding(ns, "bob-admin", "ClusterRole", "admin", userSubject("bob")),
    );
    const ok = await eventually(
      () =>
        api(
          bob,
          "POST",
          `/apis/${RBAC}/v1/namespaces/${ns}/rolebindings`,
          binding(ns, "carol-edit", "ClusterRole", "edit", userSubject("carol")),
        ),
      (r) => r.status === 201,
    );
    expect(ok.status).toBe(201);
    const tooMuch = await api(
      bob,
      "POST",
      `/apis/${RBAC}/v1/namespaces/${ns}/rolebindings`,
      binding(ns, "carol-admin", "ClusterRole", "cluster-admin", userSubject("carol")),
    );
    expect(tooMuch.status).toBe(403);
    expect(tooMuch.json.reason).toBe("Forbidden");
    expect(tooMuch.json.message).toMatch(
      /^rolebindings\.rbac\.authorization\.k8s\.io "carol-admin" is forbidden: user "bob" \(groups=\["group-x" "system:authenticated"\]\) is attempting to grant RBAC permissions not currently held:\n/,
    );
    const role = await api(bob, "POST", `/apis/${RBAC}/v1/namespaces/${ns}/roles`, {
      apiVersion: `${RBAC}/v1`,
      kind: "Role",
      metadata: { name: "nodes-admin" },
      rules: [{ apiGroups: [""], resources: ["nodes"], verbs: ["delete"] }],
    });
    expect(role.status).toBe(403);
    expect(role.json.message).toContain('{APIGroups:[""], Resources:["nodes"], Verbs:["delete"]}');
    const cr = await api(bob, "POST", `/apis/${RBAC}/v1/clusterrolebindings`, {
      apiVersion: `${RBAC}/v1`,
      kind: "ClusterRoleBinding",
      metadata: { name: "bob-everything" },
      roleRef: { apiGroup: RBAC, kind: "ClusterRole", name: "cluster-admin" },
      subjects: [userSubject("bob")],
    });
    expect(cr.status).toBe(403);
  });

  describe("nodes", () => {
    let ns: string;
    beforeAll(async () => {
      ns = await freshNamespace(server, "authz-node");
      for (const name of ["node-a", "node-b"])
        await api(server, "POST", "/api/v1/nodes", { apiVersion: "v1", kind: "Node", metadata: { name } });
      for (const name of ["secret-a", "secret-b"])
        await api(server, "POST", `/api/v1/namespaces/${ns}/secrets`, {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name },
          stringData: { k: "v" },
        });
      const pod = (name: string, node: string, secret: string) => ({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name },
        spec: {
          nodeName: node,
          containers: [{ name: "c", image: "busybox" }],
          volumes: [{ name: "s", secret: { secretName: secret } }],
        },
      });
      expect(
        (await api(server, "POST", `/api/v1/namespaces/${ns}/pods`, pod("pod-a", "node-a", "secret-a")))
          .status,
      ).toBe(201);
      expect(
        (await api(server, "POST", `/api/v1/namespaces/${ns}/pods`, pod("pod-b", "node-b", "secret-b")))
          .status,
      ).toBe(201);
      expect(
        (
          await api(server, "POST", `/api/v1/namespaces/${ns}/pods`, {
            ...pod("pending", "", "secret-b"),
            spec: { containers: [{ name: "c", image: "busybox" }] },
          })
        ).status,
      ).toBe(201);
    });

    it("reads only the secrets its own pods use", async () => {
      const own = await eventually(
        () => api(nodeA, "GET", `/api/v1/namespaces/${ns}/secrets/secret-a`),
        (r) => r.status === 200,
      );
      expect(own.status).toBe(200);
      const other = await api(nodeA, "GET", `/api/v1/namespaces/${ns}/secrets/secret-b`);
      expect(other.status).toBe(403);
      expect(other.json.message).toBe(
        `secrets "secret-b" is forbidden: User "system:node:node-a" cannot get resource "secrets" in API group "" in the namespace "${ns}": no relationship found between node 'node-a' and this object`,
      );
      expect((await api(nodeB, "GET", `/api/v1/namespaces/${ns}/secrets/secret-b`)).status).toBe(200);
    });

    it("reads pods and Nodes cluster-wide, as upstream's system:node rules allow, and writes neither", async () => {
      // its network parts need every pod's labels and IP (NetworkPolicy, DNS) and every
      // Node's podCIDR (routes): edgeplane:node-network, read-only
      expect((await api(nodeA, "GET", `/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a`)).status).toBe(200);
      expect((await api(nodeA, "GET", `/api/v1/pods`)).status).toBe(200);
      expect((await api(nodeA, "GET", `/api/v1/nodes/node-a`)).status).toBe(200);
      expect((await api(nodeA, "GET", `/api/v1/nodes/node-b`)).status).toBe(200);
      const patch = { metadata: { labels: { stolen: "yes" } } };
      const r = await api(nodeA, "PATCH", `/api/v1/nodes/node-b`, patch, {
        "content-type": "application/merge-patch+json",
      });
      expect(r.status).toBe(403);
    });

    it("updates only its own Node status and pods bound to it, and cannot bind pods", async () => {
      const patch = { status: { capacity: { pods: "110" } } };
      const mine = await api(nodeA, "PATCH", "/api/v1/nodes/node-a/status", patch, {
        "content-type": "application/merge-patch+json",
      });
      expect(mine.status).toBe(200);
      const theirs = await api(nodeA, "PATCH", "/api/v1/nodes/node-b/status", patch, {
        "content-type": "application/merge-patch+json",
      });
      expect(theirs.status).toBe(403);
      expect(theirs.json.message).toBe(
        'nodes "node-b" is forbidden: node "node-a" is not allowed to modify node "node-b"',
      );
      const podStatus = { status: { conditions: [{ type: "Ready", status: "False" }] } };
      const other = await api(nodeA, "PATCH", `/api/v1/namespaces/${ns}/pods/pod-b/status`, podStatus, {
        "content-type": "application/merge-patch+json",
      });
      expect(other.status).toBe(403);
      expect(other.json.message).toBe(
        'pods "pod-b" is forbidden: node "node-a" can only update pod status for pods with spec.nodeName set to itself',
      );
      const bind = await api(nodeA, "POST", `/api/v1/namespaces/${ns}/pods/pending/binding`, {
        apiVersion: "v1",
        kind: "Binding",
        metadata: { name: "pending" },
        target: { apiVersion: "v1", kind: "Node", name: "node-a" },
      });
      expect(bind.status).toBe(403);
      expect(bind.json.message).toBe(
        `pods "pending" is forbidden: User "system:node:node-a" cannot create resource "pods/binding" in API group "" in the namespace "${ns}"`,
      );
    });
  });
});
