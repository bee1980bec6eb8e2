// The front door learns each credential's priority level from the Worker (api/wire/priority.ts,
// workers/filters/priority-level.ts), through real workerd: the first request with a new
// credential asks, its answer names the level (system for a node's credential, workload for
// anyone else), and later requests with it are not asked again. Only the front door can ask:
// a client's own guess at the secret gets no level (test/unit/filters/priority-level.test.ts
// has the middleware's own cases).
import { describe, expect, it } from "vitest";
import { bootstrapTokenSecret, randomBootstrapToken } from "../../api/bootstrap-token";
import { PRIORITY_ASK_HEADER, PRIORITY_LEVEL_HEADER } from "../../api/wire/priority";
import { api, freshNamespace, shared, type Target } from "../helpers/cluster";

const t = shared();
const as = (token: string, on: Target = t): Target => ({ ...on, token });

async function nodeCredential(name: string): Promise<string> {
  const { id, secret, token } = randomBootstrapToken();
  const made = await api(
    t,
    "POST",
    "/api/v1/namespaces/kube-system/secrets",
    bootstrapTokenSecret(id, secret),
  );
  expect(made.status, made.text).toBe(201);
  const ex = await api(as(token), "POST", "/edgeplane/node-credentials", { nodeName: name });
  expect(ex.status, ex.text).toBe(201);
  return ex.json.token;
}

async function serviceAccountToken(ns: string): Promise<string> {
  const sa = await api(t, "POST", `/api/v1/namespaces/${ns}/serviceaccounts`, {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: "reader" },
  });
  expect(sa.status, sa.text).toBe(201);
  const r = await api(t, "POST", `/api/v1/namespaces/${ns}/serviceaccounts/reader/token`, {
    apiVersion: "authentication.k8s.io/v1",
    kind: "TokenRequest",
    spec: {},
  });
  expect(r.status, r.text).toBe(201);
  return r.json.status.token;
}

describe("priority levels learned by the front door", () => {
  it("a node's credential is named system once, an ordinary user's workload once", async () => {
    const name = `prio-${Math.random().toString(36).slice(2, 7)}`;
    const node = await nodeCredential(name);
    // (its Node is not registered: 404, but the caller is known)
    const first = await api(as(node), "GET", `/api/v1/nodes/${name}`);
    expect([first.status, first.headers.get(PRIORITY_LEVEL_HEADER)]).toEqual([404, "system"]);
    const second = await api(as(node), "GET", `/api/v1/nodes/${name}`);
    expect([second.status, second.headers.get(PRIORITY_LEVEL_HEADER)]).toEqual([404, null]);

    const ns = await freshNamespace(t, "prio");
    const user = await serviceAccountToken(ns);
    // denied (403) still says who it was: the credential is real
    const denied = await api(as(user), "GET", "/api/v1/nodes");
    expect([denied.status, denied.headers.get(PRIORITY_LEVEL_HEADER)]).toEqual([403, "workload"]);
    expect((await api(as(user), "GET", "/api/v1/nodes")).headers.get(PRIORITY_LEVEL_HEADER)).toBeNull();
  });

  it("a forged credential, a client's guess at the secret, and anonymous requests are named nothing", async () => {
    const forged = await api(as("forged-token-123"), "GET", "/api/v1/namespaces");
    expect([forged.status, forged.headers.get(PRIORITY_LEVEL_HEADER)]).toEqual([401, null]);
    const ns = await freshNamespace(t, "prio");
    const user = await serviceAccountToken(ns);
    const guess = await api(as(user), "GET", `/api/v1/namespaces/${ns}/configmaps`, undefined, {
      [PRIORITY_ASK_HEADER]: "guess",
    });
    expect(guess.headers.get(PRIORITY_LEVEL_HEADER)).toBeNull();
    // not learned by that answer: its next request asks (and is named)
    const next = await api(as(user), "GET", `/api/v1/namespaces/${ns}/configmaps`);
    expect(next.headers.get(PRIORITY_LEVEL_HEADER)).toBe("workload");
    const anonymous = await fetch(`${t.url}/version`);
    expect(anonymous.headers.get(PRIORITY_LEVEL_HEADER)).toBeNull();
  });
});
