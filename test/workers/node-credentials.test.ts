// Node credentials are short-lived, renewed by the node itself, revoked with their Node or by a
// new agent joining as the node, and a bootstrap token cannot take a live node's name (issue
// 33 finding 6). A server of its own: credentials last 6 s and verified tokens are remembered
// for 1 s, so expiry and revocation show within a test.
import { describe, expect, it } from "vitest";
import { bootstrapTokenSecret, randomBootstrapToken } from "../../api/bootstrap-token";
import { microTime } from "../../api/time";
import { api, type Target, until } from "../helpers/cluster";
import { ownServerForSuite } from "../helpers/own-server";

const LIFETIME = 6;
const t = ownServerForSuite({
  vars: { EDGEPLANE_NODE_CREDENTIAL_SECONDS: String(LIFETIME), EDGEPLANE_TOKEN_CACHE_TTL_SECONDS: "1" },
});
const as = (token: string): Target => ({ ...t, token });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
const PATH = "/edgeplane/node-credentials";

async function bootstrapToken(): Promise<string> {
  const { id, secret, token } = randomBootstrapToken();
  const r = await api(t, "POST", "/api/v1/namespaces/kube-system/secrets", bootstrapTokenSecret(id, secret));
  expect(r.status, r.text).toBe(201);
  return token;
}

const nodeName = (what: string) => `${what}-${Math.random().toString(36).slice(2, 7)}`;

async function exchange(name: string) {
  return api(as(await bootstrapToken()), "POST", PATH, { nodeName: name });
}

async function join(name: string): Promise<string> {
  const ex = await exchange(name);
  expect(ex.status, ex.text).toBe(201);
  return ex.json.token;
}

/** What a node does once it has its credential: registers its Node and its Lease. */
async function register(token: string, name: string, leaseSeconds = 40): Promise<void> {
  const node = { apiVersion: "v1", kind: "Node", metadata: { name } };
  const n = await api(as(token), "POST", "/api/v1/nodes", node);
  expect(n.status, n.text).toBe(201);
  const lease = {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: {
      name,
      namespace: "kube-node-lease",
      ownerReferences: [{ apiVersion: "v1", kind: "Node", name, uid: n.json.metadata.uid }],
    },
    spec: { holderIdentity: name, leaseDurationSeconds: leaseSeconds, renewTime: microTime() },
  };
  const l = await api(as(token), "POST", LEASES, lease);
  // (a Lease of a deleted Node may still wait for the garbage collector)
  expect([201, 409], l.text).toContain(l.status);
}

/** A node's own request: reading its Node (200 while the credential holds). */
const readOwnNode = (token: string, name: string) => api(as(token), "GET", `/api/v1/nodes/${name}`);

async function renewLease(token: string, name: string): Promise<number> {
  const got = await api(as(token), "GET", `${LEASES}/${name}`);
  if (got.status !== 200) return failed("GET lease", got);
  const next = { ...got.json, spec: { ...got.json.spec, renewTime: microTime() } };
  const put = await api(as(token), "PUT", `${LEASES}/${name}`, next);
  return put.status === 200 ? 200 : failed("PUT lease", put);
}

function failed(what: string, r: { status: number; text: string }): number {
  console.error(`${new Date().toISOString()} ${what}: ${r.status} ${r.text}\n${t.output().slice(-3000)}`);
  return r.status;
}

describe("node credentials", () => {
  it("expire after their short lifetime (401) unless the node renews them with themselves", async () => {
    const name = nodeName("renew");
    let token = await join(name);
    await register(token, name);
    const first = token;
    // three lifetimes, renewing at ~80% each time: the node's lease renewals never fail
    for (let i = 0; i < 3; i++) {
      const r = await api(as(token), "POST", PATH, { nodeName: name });
      expect(r.status, r.text).toBe(201);
      expect(r.json.nodeName).toBe(name);
      const left = Date.parse(r.json.expirationTimestamp) - Date.now();
      expect(left).toBeGreaterThan((LIFETIME - 2) * 1000);
      expect(left).toBeLessThanOrEqual(LIFETIME * 1000 + 1000);
      token = r.json.token;
      expect(await renewLease(token, name)).toBe(200);
      await sleep(left * 0.8);
      expect(await renewLease(token, name)).toBe(200);
    }
    // the first credential is long expired: 401 as a Status, for node APIs and for renewal
    const expired = await readOwnNode(first, name);
    expect(expired.status, expired.text).toBe(401);
    expect(expired.json).toMatchObject({ kind: "Status", reason: "Unauthorized" });
    expect((await api(as(first), "POST", PATH, { nodeName: name })).status).toBe(401);
    // a node renews only its own credential, and renewal is not a way to another node's
    const other = await api(as(token), "POST", PATH, { nodeName: `${name}-other` });
    expect(other.status, other.text).toBe(403);
    expect(other.json).toMatchObject({ kind: "Status", reason: "Forbidden" });
    await api(t, "DELETE", `/api/v1/nodes/${name}`);
  }, 60_000);

  it("a deleted Node's credential is 401, and its name can be joined again", async () => {
    const name = nodeName("deleted");
    const token = await join(name);
    await register(token, name);
    const record = await api(t, "GET", `/api/v1/namespaces/kube-system/secrets/node-credential.${name}`);
    expect(record.status, record.text).toBe(200);
    expect(record.json).toMatchObject({
      type: "edgeplane.io/node-credential",
      metadata: { annotations: { "edgeplane.io/node": name, "edgeplane.io/node-uid": expect.any(String) } },
    });
    // while the agent is alive, a second exchange is refused
    expect((await exchange(name)).status).toBe(409);
    expect((await api(t, "DELETE", `/api/v1/nodes/${name}`)).status).toBe(200);
    const started = Date.now();
    const denied = await until(
      "the deleted Node's credential refused",
      async () => {
        const r = await api(as(token), "GET", `/api/v1/namespaces/kube-system/configmaps`);
        return r.status === 401 ? r : undefined;
      },
      10_000,
      100,
    );
    expect(denied.json).toMatchObject({ kind: "Status", code: 401, reason: "Unauthorized" });
    // revocation bites within the token cache's life (1 s here, 10 s by default)
    expect(Date.now() - started).toBeLessThan(3_000);
    expect((await api(as(token), "POST", PATH, { nodeName: name })).status).toBe(401);
    // the node re-creating itself with the revoked credential is refused too
    const back = await api(as(token), "POST", "/api/v1/nodes", {
      apiVersion: "v1",
      kind: "Node",
      metadata: { name },
    });
    expect(back.status).toBe(401);
    // the name is free: a new agent joins, and the old credential stays revoked
    const again = await join(name);
    await register(again, name);
    expect((await readOwnNode(again, name)).status).toBe(200);
    expect((await readOwnNode(token, name)).status).toBe(401);
    await api(t, "DELETE", `/api/v1/nodes/${name}`);
  }, 30_000);

  it("a node whose Node was just deleted cannot re-create it, even while its credential is still remembered", async () => {
    const name = nodeName("recreate");
    const token = await join(name);
    await register(token, name);
    // remembered by the token cache (1 s here) from this request on
    expect((await readOwnNode(token, name)).status).toBe(200);
    expect((await api(t, "DELETE", `/api/v1/nodes/${name}`)).status).toBe(200);
    const back = await api(as(token), "POST", "/api/v1/nodes", {
      apiVersion: "v1",
      kind: "Node",
      metadata: { name },
    });
    expect(back.status, back.text).toBe(401);
    expect(back.json).toMatchObject({ kind: "Status", reason: "Unauthorized" });
    expect(back.json.message).toContain("its Node was deleted");
    expect((await api(t, "GET", `/api/v1/nodes/${name}`)).status).toBe(404);
  }, 30_000);

  it("refuses a bootstrap exchange for a node whose agent is alive (409), allows it once the Lease expired, and revokes the old agent", async () => {
    const name = nodeName("takeover");
    const old = await join(name);
    // a short lease, so that the agent is gone soon after it stops renewing
    await register(old, name, 3);
    const refused = await exchange(name);
    expect(refused.status, refused.text).toBe(409);
    expect(refused.json).toMatchObject({
      kind: "Status",
      code: 409,
      reason: "Conflict",
      details: { name, kind: "nodes" },
    });
    expect(refused.json.message).toContain("held by a live agent");
    // a cluster admin cannot take the name either
    expect((await api(t, "POST", PATH, { nodeName: name })).status).toBe(409);
    // the refusal changed nothing: the live agent's credential still works
    expect((await readOwnNode(old, name)).status).toBe(200);
    expect(await renewLease(old, name)).toBe(200);
    // the agent dies (no more renewals): once its Lease expired, a new agent joins as the node
    const replacement = await until(
      "the name joinable again",
      async () => {
        const r = await exchange(name);
        if (r.status === 201) return r.json.token as string;
        expect(r.status, r.text).toBe(409);
        await sleep(500);
        return undefined;
      },
      15_000,
      100,
    );
    // the new agent's credential works on the Node that stayed; the old agent's no longer does
    expect((await readOwnNode(replacement, name)).status).toBe(200);
    await until(
      "the replaced agent's credential refused",
      async () => (await readOwnNode(old, name)).status === 401,
      5_000,
    );
    expect((await api(as(old), "POST", PATH, { nodeName: name })).status).toBe(401);
    expect(await renewLease(replacement, name)).toBe(200);
    await api(t, "DELETE", `/api/v1/nodes/${name}`);
  }, 40_000);

  it("a joining node is not refused before it registers, and the second exchange replaces the first", async () => {
    // no Node and no Lease yet: nothing is alive, the latest exchange holds the name
    const name = nodeName("joining");
    const first = await join(name);
    // no renewal before the node registered (403): such a credential ends with its lifetime
    const early = await api(as(first), "POST", PATH, { nodeName: name });
    expect(early.status, early.text).toBe(403);
    expect(early.json).toMatchObject({ kind: "Status", reason: "Forbidden" });
    const second = await join(name);
    await until(
      "the first joiner refused",
      async () => (await readOwnNode(first, name)).status === 401,
      5_000,
    );
    const n = await api(as(second), "POST", "/api/v1/nodes", {
      apiVersion: "v1",
      kind: "Node",
      metadata: { name },
    });
    expect(n.status, n.text).toBe(201);
    await api(t, "DELETE", `/api/v1/nodes/${name}`);
  }, 20_000);
});
