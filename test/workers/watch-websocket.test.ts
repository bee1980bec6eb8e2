// Watches over WebSockets: the store shard holds the socket with the hibernation API and
// sends one JSON watch event per message, with the same replay and selector semantics as
// the chunked HTTP watch.
import { describe, expect, it } from "vitest";
import WebSocket from "ws";
import { api, freshNamespace, rootCAIn, shared } from "../helpers/cluster";

const t = shared();

function openSocket(
  path: string,
): Promise<{ events: any[]; ws: WebSocket; waitFor(n: number): Promise<any[]> }> {
  const ws = new WebSocket(t.url.replace(/^http/, "ws") + path, {
    headers: { authorization: `Bearer ${t.token}` },
  });
  const events: any[] = [];
  const waiters: (() => void)[] = [];
  ws.on("message", (data) => {
    events.push(JSON.parse(String(data)));
    for (const w of waiters.splice(0)) w();
  });
  const waitFor = async (n: number) => {
    const deadline = Date.now() + 5000;
    while (events.length < n && Date.now() < deadline) {
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 200);
      });
    }
    return events;
  };
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve({ events, ws, waitFor }));
    ws.once("unexpected-response", (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    ws.once("error", reject);
  });
}

const cm = (name: string, labels: Record<string, string> = {}) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, labels },
});

describe("watch over WebSocket", () => {
  it("replays from a resourceVersion, then streams live changes in order", async () => {
    const ns = await freshNamespace(t);
    // its kube-root-ca.crt made first: the watch below starts after it
    await rootCAIn(t, ns);
    const from = (await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps`)).json.metadata.resourceVersion;
    await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm("before"));
    const s = await openSocket(`/api/v1/namespaces/${ns}/configmaps?watch=true&resourceVersion=${from}`);
    try {
      await s.waitFor(1);
      await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm("live1"));
      await api(t, "DELETE", `/api/v1/namespaces/${ns}/configmaps/before`);
      await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm("live2"));
      const evs = await s.waitFor(4);
      expect(evs.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual([
        "ADDED before",
        "ADDED live1",
        "DELETED before",
        "ADDED live2",
      ]);
      const rvs = evs.map((e) => Number(e.object.metadata.resourceVersion));
      expect([...rvs].sort((a, b) => a - b)).toEqual(rvs);
    } finally {
      s.ws.close();
    }
  });

  it("filters by label selector, with DELETED when an object stops matching", async () => {
    const ns = await freshNamespace(t);
    const s = await openSocket(`/api/v1/namespaces/${ns}/configmaps?watch=true&labelSelector=tier%3Dweb`);
    try {
      await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm("a", { tier: "web" }));
      await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm("b", { tier: "db" }));
      await api(
        t,
        "PATCH",
        `/api/v1/namespaces/${ns}/configmaps/a`,
        JSON.stringify({ metadata: { labels: { tier: "db" } } }),
        {
          "content-type": "application/merge-patch+json",
        },
      );
      const evs = await s.waitFor(2);
      expect(evs.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(["ADDED a", "DELETED a"]);
    } finally {
      s.ws.close();
    }
  });

  it("refuses a socket without credentials", async () => {
    const ws = new WebSocket(`${t.url.replace(/^http/, "ws")}/api/v1/configmaps?watch=true`);
    const code = await new Promise<number>((resolve) => {
      ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      ws.once("open", () => resolve(101));
      ws.once("error", () => resolve(-1));
    });
    expect(code).toBe(401); // no credential: 401 beyond health and version
  });
});
