// The store shards' side of the front door's watch relay, through real workerd at the engine
// port (where only the front door speaks): a watch sent with the relay secret and an id is
// carried on the shard's relay once the front door has opened one; without the secret
// nothing changes. Two cases go through the real front door and check that it does relay,
// over HTTP/1.1 and over HTTP/2.
// The front door's side alone is test/unit/devserver/relay.test.ts; every watch suite
// through the front door runs on relayed watches too.
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, freshNamespace, ROOT_CA_MAP, rootCAIn } from "../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer } from "../helpers/own-server";
import { openH2Watch, openWatch } from "../helpers/watch-stream";

const SECRET = "relay-test-secret-0123456789abcdef";
let s: OwnServer;
let engine: string;

beforeAll(async () => {
  // a short watch window, so that a shard's log is compacted within a test (every 256 commits)
  s = await startOwnServer({ vars: { EDGEPLANE_RELAY_SECRET: SECRET, EDGEPLANE_WATCH_WINDOW_EVENTS: "10" } });
  engine = `http://127.0.0.1:${s.internalPort}`;
}, 90_000);
afterAll(async () => {
  await s?.stop();
  removeStateDir(s?.stateDir);
});

/**
 * fetch to the engine port, sent again once when it met a kept-alive connection that workerd
 * had just closed as idle (the front door hides that race from clients; this port is its own).
 */
async function engineFetch(url: string, init: RequestInit = {}): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (e) {
    const code = (e as { cause?: { code?: string } }).cause?.code;
    if (code !== "UND_ERR_SOCKET" && code !== "ECONNRESET") throw e;
    return fetch(url, init);
  }
}

interface Message {
  kind: "DATA" | "END";
  ids: number[];
  events: any[];
}

/** The relay's stream read as messages (durable-objects/store/relay.ts). */
async function openRelay(shard: string, no: string, secret = SECRET) {
  const ctrl = new AbortController();
  const res = await engineFetch(`${engine}/__edgeplane/relay`, {
    headers: { "x-edgeplane-relay": secret, "x-edgeplane-relay-shard": shard, "x-edgeplane-relay-no": no },
    signal: ctrl.signal,
  });
  const messages: Message[] = [];
  const ended =
    res.status === 200 &&
    (async () => {
      let buf = Buffer.alloc(0);
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          buf = Buffer.concat([buf, chunk]);
          while (buf.length >= 4 && buf.length >= 4 + buf.readUInt32LE(0)) {
            const len = buf.readUInt32LE(0);
            const n = buf.readUInt32LE(5);
            const ids = Array.from({ length: n }, (_, i) => buf.readUInt32LE(9 + 4 * i));
            const data = buf.subarray(9 + 4 * n, 4 + len).toString();
            const events = data
              ? data
                  .trim()
                  .split("\n")
                  .map((l) => JSON.parse(l))
              : [];
            messages.push({ kind: buf[4] === 1 ? "DATA" : "END", ids, events });
            buf = buf.subarray(4 + len);
          }
        }
      } catch {
        // aborted
      }
    })();
  const waitFor = async (pred: (m: Message[]) => boolean, what: string) => {
    const deadline = Date.now() + 10_000;
    while (!pred(messages)) {
      if (Date.now() > deadline)
        throw new Error(`relay: timed out waiting for ${what}: ${JSON.stringify(messages)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  return { res, messages, waitFor, ended, close: () => ctrl.abort() };
}

/** Resolves once the front door opened the relay of `path`'s shard (a watch with the secret is relayed). */
async function relayOpened(path: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const probe = await watch(`${path}?watch=1`, `${SECRET} 999999`);
    const relayed = probe.res.headers.get("x-edgeplane-relayed");
    await probe.res.body?.cancel();
    if (relayed) return;
    if (Date.now() > deadline) throw new Error(`the front door did not open the relay of ${path}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function watch(path: string, relayHeader?: string) {
  const headers: Record<string, string> = { authorization: `Bearer ${s.token}` };
  if (relayHeader) headers["x-edgeplane-relay"] = relayHeader;
  const ctrl = new AbortController();
  return engineFetch(`${engine}${path}`, { headers, signal: ctrl.signal }).then((res) => ({
    res,
    close: () => ctrl.abort(),
  }));
}

const cm = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { a: "1" } });
const names = (m: Message[], id: number) =>
  m
    .filter((x) => x.kind === "DATA" && x.ids.includes(id))
    .flatMap((x) => x.events.map((e) => `${e.type} ${e.object.metadata.name}`))
    // every namespace holds the root CA publisher's map: a watch from state replays it too
    .filter((n) => !n.endsWith(` ${ROOT_CA_MAP}`));

describe("watch relay through real workerd", () => {
  it("offers a relay, then carries watches on it: one message per event for all the watches it concerns", async () => {
    const t = { url: s.url, token: s.token, kubeconfigPath: s.kubeconfigPath };
    const ns = await freshNamespace(t, "relay");
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    await rootCAIn(t, ns); // made before the list below, not live during the watches
    await api(t, "POST", path, cm("before"));
    const rv = (await api(t, "GET", path)).json.metadata.resourceVersion;

    // no relay open on the configmaps shard yet: an ordinary stream, with the offer
    const first = await watch(`${path}?watch=1&resourceVersion=${rv}`, `${SECRET} 1`);
    expect(first.res.status).toBe(200);
    expect(first.res.headers.get("x-edgeplane-relay-offer")).toBe("/configmaps");
    expect(first.res.headers.get("x-edgeplane-relayed")).toBeNull();
    first.close();

    const relay = await openRelay("/configmaps", "r1");
    expect(relay.res.status).toBe(200);
    // two watches from the list, one from state (replays "before"), one on another namespace
    const a = await watch(`${path}?watch=1&resourceVersion=${rv}`, `${SECRET} 11`);
    const b = await watch(`${path}?watch=true&resourceVersion=${rv}`, `${SECRET} 12`);
    const c = await watch(`${path}?watch=1`, `${SECRET} 13`);
    const other = await watch(
      `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${rv}`,
      `${SECRET} 14`,
    );
    for (const w of [a, b, c, other]) {
      expect(w.res.status).toBe(200);
      expect(w.res.headers.get("x-edgeplane-relayed")).toBe("r1");
      expect(await w.res.text()).toBe(""); // the events are on the relay
    }
    await relay.waitFor((m) => names(m, 13).length === 1, "the replay to watch 13");
    expect(names(relay.messages, 13)).toEqual(["ADDED before"]);

    await api(t, "POST", path, cm("x"));
    await api(t, "DELETE", `${path}/x`);
    await relay.waitFor((m) => names(m, 11).length === 2 && names(m, 13).length === 3, "two events");
    // each event went out once, naming every watch of the namespace
    const live = relay.messages.filter((m) => m.ids.includes(11));
    expect(live.map((m) => [...m.ids].sort())).toEqual([
      [11, 12, 13],
      [11, 12, 13],
    ]);
    expect(names(relay.messages, 11)).toEqual(["ADDED x", "DELETED x"]);
    expect(names(relay.messages, 14)).toEqual([]);

    // the front door gives up watch 12 (its client left): it hears no more
    const cancel = await engineFetch(`${engine}/__edgeplane/relay`, {
      method: "POST",
      headers: { "x-edgeplane-relay": SECRET, "x-edgeplane-relay-shard": "/configmaps" },
      body: JSON.stringify({ no: "r1", ids: [12] }),
    });
    expect(cancel.status).toBe(204);
    await api(t, "POST", path, cm("y"));
    await relay.waitFor((m) => names(m, 11).length === 3, "the third event");
    expect(names(relay.messages, 11)).toEqual(["ADDED x", "DELETED x", "ADDED y"]);
    expect(names(relay.messages, 12)).toEqual(["ADDED x", "DELETED x"]);
    expect(relay.messages.filter((m) => m.kind === "END").flatMap((m) => m.ids)).toContain(12);

    // a new relay replaces this one: the old one's stream ends (the front door then ends its
    // watches) and its watches are gone from the shard
    const again = await openRelay("/configmaps", "r2");
    await relay.ended;
    const d = await watch(`${path}?watch=1&resourceVersion=${rv}`, `${SECRET} 15`);
    expect(d.res.headers.get("x-edgeplane-relayed")).toBe("r2");
    await api(t, "POST", path, cm("z"));
    await again.waitFor((m) => names(m, 15).includes("ADDED z"), "z on the new relay");
    expect(again.messages.flatMap((m) => m.ids).filter((id) => id !== 15)).toEqual([]);
    again.close();
  });

  it("ends a relayed watch on its timeout, and sends a 410 as one ERROR then its end", async () => {
    const t = { url: s.url, token: s.token, kubeconfigPath: s.kubeconfigPath };
    const ns = await freshNamespace(t, "relay-end");
    const relay = await openRelay("/secrets", "r3");
    const path = `/api/v1/namespaces/${ns}/secrets`;
    const timed = await watch(`${path}?watch=1&timeoutSeconds=1`, `${SECRET} 21`);
    expect(timed.res.headers.get("x-edgeplane-relayed")).toBe("r3");
    await relay.waitFor((m) => m.some((x) => x.kind === "END" && x.ids.includes(21)), "the timeout's end");

    const firstRV = (await api(t, "POST", path, { metadata: { name: "s-first" } })).json.metadata
      .resourceVersion;
    for (let i = 0; i < 260; i += 20)
      await Promise.all(
        Array.from({ length: 20 }, (_, j) => api(t, "POST", path, { metadata: { name: `s-${i + j}` } })),
      );
    const old = await watch(`${path}?watch=1&resourceVersion=${firstRV}`, `${SECRET} 22`);
    expect(old.res.status).toBe(200);
    await relay.waitFor((m) => m.some((x) => x.kind === "END" && x.ids.includes(22)), "the 410's end");
    const mine = relay.messages.filter((m) => m.ids.includes(22));
    expect(mine.map((m) => m.kind)).toEqual(["DATA", "END"]);
    expect(mine[0]!.events[0]).toMatchObject({ type: "ERROR", object: { code: 410, reason: "Expired" } });
    relay.close();
  });

  it("through the front door: the first watch opens the relay, the next is carried on it", async () => {
    const t = { url: s.url, token: s.token, kubeconfigPath: s.kubeconfigPath };
    const ns = await freshNamespace(t, "relay-front");
    const path = `/api/v1/namespaces/${ns}/limitranges`;
    const lr = (name: string) => ({ metadata: { name }, spec: { limits: [{ type: "Container" }] } });
    const first = await openWatch(t, `${path}?watch=1`);
    await relayOpened(path);
    const second = await openWatch(t, `${path}?watch=1`);
    await api(t, "POST", path, lr("one"));
    await first.waitFor(1);
    await second.waitFor(1);
    expect(second.events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(["ADDED one"]);
    // a relay opened here replaces the front door's: the watch it carried ends cleanly, the
    // other (a stream of its own) goes on
    const mine = await openRelay("/limitranges", "taken-over");
    await second.ended;
    await api(t, "POST", path, lr("two"));
    await first.waitFor(2);
    expect(first.events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual([
      "ADDED one",
      "ADDED two",
    ]);
    expect(second.events).toHaveLength(1);
    mine.close();
    first.close();
  });

  it("through the front door over HTTP/2: watches on one connection are carried on the relay", async () => {
    const t = { url: s.url, token: s.token, kubeconfigPath: s.kubeconfigPath };
    const ns = await freshNamespace(t, "relay-h2");
    const path = `/api/v1/namespaces/${ns}/resourcequotas`;
    const rq = (name: string) => ({ metadata: { name }, spec: { hard: { pods: "10" } } });
    const first = await openWatch(t, `${path}?watch=1`);
    await relayOpened(path);
    const session = http2.connect(s.url);
    session.on("error", () => undefined);
    const [a, b] = await Promise.all([
      openH2Watch(session, t, `${path}?watch=1`),
      openH2Watch(session, t, `${path}?watch=1`),
    ]);
    await api(t, "POST", path, rq("one"));
    for (const w of [first, a, b]) await w.waitFor(1);
    // a relay opened here replaces the front door's: both HTTP/2 watches were carried on it
    // and end, each as its own stream; the connection and the first watch go on
    const mine = await openRelay("/resourcequotas", "taken-over-h2");
    await Promise.race([
      Promise.all([a.ended, b.ended]),
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error("the HTTP/2 watches were not relayed")), 10_000),
      ),
    ]);
    await api(t, "POST", path, rq("two"));
    await first.waitFor(2);
    for (const w of [a, b])
      expect(w.events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(["ADDED one"]);
    // and the connection serves the next request as ever
    const list = session.request({ ":path": path, authorization: `Bearer ${s.token}` });
    list.setEncoding("utf8");
    let text = "";
    list.on("data", (c) => (text += c));
    await new Promise((r) => list.on("end", r));
    expect(JSON.parse(text).items.map((o: { metadata: { name: string } }) => o.metadata.name)).toEqual([
      "one",
      "two",
    ]);
    mine.close();
    first.close();
    session.close();
  });

  it("does nothing for a request without the secret: no relay, no offer, and no way to open one", async () => {
    const t = { url: s.url, token: s.token, kubeconfigPath: s.kubeconfigPath };
    const ns = await freshNamespace(t, "relay-no");
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const w = await watch(`${path}?watch=1`, "not-the-secret 31");
    expect(w.res.status).toBe(200);
    expect(w.res.headers.get("x-edgeplane-relay-offer")).toBeNull();
    expect(w.res.headers.get("x-edgeplane-relayed")).toBeNull();
    w.close();
    // a second header beside the right one is not the front door's either
    const two = await engineFetch(`${engine}${path}?watch=1`, {
      headers: [
        ["authorization", `Bearer ${s.token}`],
        ["x-edgeplane-relay", `${SECRET} 32`],
        ["x-edgeplane-relay", "guess 33"],
      ],
    });
    expect(two.headers.get("x-edgeplane-relayed")).toBeNull();
    await two.body?.cancel();
    // opening a relay without the secret is an ordinary request: no credential is 401
    const anon = await openRelay("/configmaps", "r9", "guess");
    expect(anon.res.status).toBe(401);
    const withToken = await fetch(`${s.url}/__edgeplane/relay`, {
      headers: { authorization: `Bearer ${s.token}`, "x-edgeplane-relay": "guess" },
    });
    expect(withToken.status).toBe(404);
    // the front door's own requests, malformed: refused with the status that says why
    const front = { "x-edgeplane-relay": SECRET, "x-edgeplane-relay-shard": "/configmaps" };
    const junk = await engineFetch(`${engine}/__edgeplane/relay`, {
      method: "POST",
      headers: front,
      body: "{not json",
    });
    expect(junk.status).toBe(400);
    const noIds = await engineFetch(`${engine}/__edgeplane/relay`, {
      method: "POST",
      headers: front,
      body: '{"no":"r1"}',
    });
    expect(noIds.status).toBe(400);
    const unknown = await openRelay("/no-such-resource", "r8");
    expect(unknown.res.status).toBe(404);
  });
});
