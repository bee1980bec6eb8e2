// Joining with a bootstrap token: the token is exchanged for the node's own credential
// (system:node:<name>), which the Node authorizer then confines to that node's objects.
import { describe, expect, it } from "vitest";
import { bootstrapTokenSecret, randomBootstrapToken } from "../../api/bootstrap-token";
import { api, shared, type Target } from "../helpers/cluster";

const t = shared();
const as = (token: string): Target => ({ ...t, token });

async function newBootstrapToken(ttlSeconds = 3600): Promise<string> {
  const { id, secret, token } = randomBootstrapToken();
  const r = await api(
    t,
    "POST",
    "/api/v1/namespaces/kube-system/secrets",
    bootstrapTokenSecret(id, secret, { ttlSeconds }),
  );
  expect(r.status, r.text).toBe(201);
  return token;
}

const node = (name: string) => ({
  apiVersion: "v1",
  kind: "Node",
  metadata: { name, labels: { "kubernetes.io/hostname": name } },
});

describe("node join with a bootstrap token", () => {
  it("exchanges the bootstrap token for a credential that reaches only its own node", async () => {
    const bootstrap = await newBootstrapToken();
    const name = `join-${Math.random().toString(36).slice(2, 7)}`;
    const ex = await api(as(bootstrap), "POST", "/edgeplane/node-credentials", { nodeName: name });
    expect(ex.status, ex.text).toBe(201);
    expect(ex.json.nodeName).toBe(name);
    const cred = as(ex.json.token);
    // the bootstrap token itself cannot act as a node
    expect((await api(as(bootstrap), "POST", "/api/v1/nodes", node(name))).status).toBe(403);
    // the node credential registers its own Node and Lease ...
    expect((await api(cred, "POST", "/api/v1/nodes", node(name))).status).toBe(201);
    const lease = {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name, namespace: "kube-node-lease" },
      spec: { holderIdentity: name, leaseDurationSeconds: 40 },
    };
    expect(
      (await api(cred, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", lease))
        .status,
    ).toBe(201);
    // ... and nothing of another node's, nor secrets its pods do not use
    expect((await api(cred, "POST", "/api/v1/nodes", node(`${name}-other`))).status).toBe(403);
    expect((await api(cred, "GET", "/api/v1/namespaces/kube-system/secrets")).status).toBe(403);
    const who = await api(cred, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "SelfSubjectReview",
    });
    expect(who.json.status.userInfo).toMatchObject({
      username: `system:node:${name}`,
      groups: expect.arrayContaining(["system:nodes"]),
    });
    await api(t, "DELETE", `/api/v1/nodes/${name}`);
  });

  it("refuses a wrong bootstrap token (401), a non-bootstrap user (403) and a bad node name (400)", async () => {
    expect(
      (await api(as("abcdef.0123456789abcdef"), "POST", "/edgeplane/node-credentials", { nodeName: "x" }))
        .status,
    ).toBe(401);
    const anonymous = await fetch(`${t.url}/edgeplane/node-credentials`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ nodeName: "x" }),
    });
    expect(anonymous.status).toBe(401);
    const bootstrap = await newBootstrapToken();
    const bad = await api(as(bootstrap), "POST", "/edgeplane/node-credentials", { nodeName: "Not_A_Name" });
    expect(bad.status).toBe(400);
    expect(bad.json.kind).toBe("Status");
  });
});
