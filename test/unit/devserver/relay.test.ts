// The front door's side of the watch relay (local-engine/watch-relay.ts), against a stand-in for
// workerd that speaks the relay's protocol (durable-objects/store/relay.ts; the shard's side
// runs in real workerd in test/workers/relay.test.ts). Clients are raw sockets, so what
// reaches them is checked byte for byte.
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import {
  event,
  type FakeEngine,
  message,
  SECRET,
  fakeEngine as startEngine,
  frontDoor as startFrontDoor,
  until,
} from "../../helpers/relay-engine";

const stops: (() => unknown)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});
const fakeEngine = () => startEngine(stops);
const frontDoor = (upstreamPort: number) => startFrontDoor(stops, upstreamPort);

/** A raw client: what it sent and everything it received, as text. */
async function client(port: number) {
  const socket = net.connect(port, "127.0.0.1");
  await new Promise((r) => socket.once("connect", r));
  stops.push(() => socket.destroy());
  const c = { socket, got: "", closed: false };
  socket.on("data", (d) => (c.got += d.toString("latin1")));
  socket.on("close", () => (c.closed = true));
  return c;
}

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n`;
const WATCH = "/api/v1/namespaces/n/configmaps?watch=1&resourceVersion=5";

/** A relay open, and one watch it carries: the client and its id. */
async function relayedWatch(engine: FakeEngine, port: number) {
  if (!engine.relay) {
    const first = await client(port);
    first.socket.write(get(WATCH));
    await until(() => engine.relay, "the relay to open");
  }
  const c = await client(port);
  const before = engine.relayed.length;
  c.socket.write(get(WATCH));
  const id = await until(() => engine.relayed[before], "the watch to be relayed");
  await until(() => c.got.includes("\r\n\r\n"), "the head");
  return { c, id };
}

describe("front door watch relay", () => {
  it("passes on an offered watch as it is, minus the offer, and opens the relay it offers", async () => {
    const engine = await fakeEngine();
    const port = await frontDoor(engine.port);
    const c = await client(port);
    c.socket.write(get(WATCH));
    await until(() => c.got.includes("streamed"), "the streamed event");
    expect(c.got).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(c.got.toLowerCase()).not.toContain("x-edgeplane");
    const relay = await until(() => engine.relay, "the relay to open");
    expect(relay.headers["x-edgeplane-relay"]).toBe(SECRET);
    expect(relay.headers["x-edgeplane-relay-shard"]).toBe("/configmaps");
    expect(engine.requests[0]!.relay).toMatch(new RegExp(`^${SECRET} \\d+$`));
  });

  it("writes a relayed watch as a chunked stream: replay, its own events in order, then its end; the connection goes on", async () => {
    const engine = await fakeEngine();
    const port = await frontDoor(engine.port);
    engine.replay = (id) => [message(1, [id], event("replayed"))];
    const { c, id } = await relayedWatch(engine, port);
    const relay = engine.relay!.res;
    relay.write(message(1, [id + 100, id], event("one")));
    relay.write(message(1, [id + 100], event("not-mine")));
    // one message split across writes, and one larger than a socket read
    const two = message(1, [id], event("two", 200_000));
    relay.write(two.subarray(0, 3));
    relay.write(two.subarray(3, 5000));
    relay.write(two.subarray(5000));
    relay.write(message(2, [id]));
    await until(() => c.got.endsWith("0\r\n\r\n"), "the last chunk");

    const [head, body] = [
      c.got.slice(0, c.got.indexOf("\r\n\r\n")),
      c.got.slice(c.got.indexOf("\r\n\r\n") + 4),
    ];
    expect(head).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(head.toLowerCase()).not.toContain("x-edgeplane");
    expect(head.toLowerCase()).not.toContain("content-length");
    expect(head).toContain("Transfer-Encoding: chunked");
    // de-chunk the body: each event a chunk of its own, in order
    const chunks: string[] = [];
    let rest = body;
    for (;;) {
      const size = Number.parseInt(rest.slice(0, rest.indexOf("\r\n")), 16);
      rest = rest.slice(rest.indexOf("\r\n") + 2);
      if (size === 0) break;
      chunks.push(rest.slice(0, size));
      expect(rest.slice(size, size + 2)).toBe("\r\n");
      rest = rest.slice(size + 2);
    }
    expect(rest).toBe("\r\n");
    expect(chunks.map((x) => JSON.parse(x).object.metadata.name)).toEqual(["replayed", "one", "two"]);

    c.got = "";
    c.socket.write(get("/api/v1/namespaces"));
    await until(() => c.got.includes("plain /api/v1/namespaces"), "the next answer on the same connection");
    expect(c.closed).toBe(false);
    // only watches carry the secret
    expect(engine.requests.find((r) => r.url === "/api/v1/namespaces")!.relay).toBeUndefined();
  });

  it("ends a watch whose end came before its answer (a refused resourceVersion: ERROR, then the end)", async () => {
    const engine = await fakeEngine();
    const port = await frontDoor(engine.port);
    engine.replay = (id) => [message(1, [id], '{"type":"ERROR","object":{"code":410}}\n'), message(2, [id])];
    const { c } = await relayedWatch(engine, port);
    await until(() => c.got.endsWith("0\r\n\r\n"), "the last chunk");
    expect(c.got).toContain('"code":410');
    c.got = "";
    c.socket.write(get("/healthz"));
    await until(() => c.got.includes("plain /healthz"), "the next answer");
  });

  it("holds a client's next request until its relayed watch ends", async () => {
    const engine = await fakeEngine();
    const port = await frontDoor(engine.port);
    const { c, id } = await relayedWatch(engine, port);
    c.socket.write(get("/next"));
    await new Promise((r) => setTimeout(r, 100));
    expect(engine.requests.some((r) => r.url === "/next")).toBe(false);
    engine.relay!.res.write(message(1, [id], event("last")));
    engine.relay!.res.write(message(2, [id]));
    await until(() => c.got.includes("plain /next"), "the held request's answer");
    expect(c.got.indexOf("0\r\n\r\n")).toBeLessThan(c.got.indexOf("plain /next"));
  });

  it("gives up the watch of a client that left, on the relay that carried it", async () => {
    const engine = await fakeEngine();
    const port = await frontDoor(engine.port);
    const { c, id } = await relayedWatch(engine, port);
    c.socket.destroy();
    const cancel = await until(() => engine.cancels[0], "the cancel");
    expect(cancel).toEqual({ no: engine.relay!.headers["x-edgeplane-relay-no"], ids: [id] });
    const post = engine.requests.find((r) => r.method === "POST")!;
    expect(post.relay).toBe(SECRET);
  });

  it("ends its watches cleanly when the relay closes, and opens a new one on the next offer", async () => {
    const engine = await fakeEngine();
    const port = await frontDoor(engine.port);
    const a = await relayedWatch(engine, port);
    const b = await relayedWatch(engine, port);
    const first = engine.relay!;
    engine.relay = undefined;
    first.res.end();
    for (const { c } of [a, b]) await until(() => c.got.endsWith("0\r\n\r\n"), "the last chunk");
    expect(a.c.closed || b.c.closed).toBe(false);
    await relayedWatch(engine, port); // offered again, then relayed on a new relay
    expect(engine.relay!.headers["x-edgeplane-relay-no"]).not.toBe(first.headers["x-edgeplane-relay-no"]);
  });

  it("holds the watches of a resource opened at once until the first one's relay is open", async () => {
    const engine = await fakeEngine();
    engine.offerDelayMs = 150;
    const port = await frontDoor(engine.port);
    const clients = await Promise.all(Array.from({ length: 5 }, () => client(port)));
    for (const c of clients) c.socket.write(get(WATCH));
    const other = await client(port);
    other.socket.write(get("/api/v1/pods"));
    await until(() => engine.requests.some((r) => r.url === "/api/v1/pods"), "another resource's request");
    await new Promise((r) => setTimeout(r, 100));
    // only the first configmaps watch is out while its answer is awaited
    expect(engine.requests.filter((r) => r.url === WATCH)).toHaveLength(1);
    await until(() => engine.relayed.length === 4, "the other four relayed");
    for (const c of clients) await until(() => c.got.includes("\r\n\r\n"), "each head");
    expect(clients.filter((c) => c.got.includes("streamed"))).toHaveLength(1);
  });

  it("adds the secret to nothing but a plain watch", async () => {
    const engine = await fakeEngine();
    const port = await frontDoor(engine.port);
    const paths = [
      "/api/v1/namespaces/n/configmaps",
      "/api/v1/namespaces/n/pods/p/log?follow=true",
      "/api/v1/namespaces/n/pods/p/proxy/x?watch=1",
      "/apis/apps/v1/namespaces/n/deployments/d/scale?watch=1",
      "/other?watch=1",
    ];
    for (const path of paths) {
      const c = await client(port);
      c.socket.write(get(path));
      await until(() => c.got.includes(`plain ${path}`), path);
    }
    expect(engine.requests.map((r) => [r.url, r.relay])).toEqual(paths.map((p) => [p, undefined]));
    // HTTP/1.0 has no chunked encoding: its watch is not offered to a relay
    const old = await client(port);
    old.socket.write(get(WATCH).replace("HTTP/1.1", "HTTP/1.0"));
    await until(() => engine.requests.length > paths.length, "the HTTP/1.0 watch");
    expect(engine.requests.at(-1)!.relay).toBeUndefined();
    const w = await client(port);
    w.socket.write(get("/apis/apps/v1/watch/namespaces/n/deployments"));
    await until(() => engine.requests.length > paths.length + 1, "the watch");
    expect(engine.requests.at(-1)!.relay).toMatch(new RegExp(`^${SECRET} \\d+$`));
  });
});
