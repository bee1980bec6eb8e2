// Watches under /clusters/<name>/ through the front door's watch relay (local-engine/
// watch-relay.ts; docs/clusters.md), against a stand-in for workerd whose shards are kept per
// cluster as the Worker keeps them: a cluster's relay is opened under its own path, its
// watches are carried on it, and no watch of one cluster (or of the root) goes on another's.
import http from "node:http";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { event, frontDoor, message, SECRET, type Stops, until } from "../../helpers/relay-engine";

const stops: Stops = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

/** workerd's stand-in: one relay per cluster path ("" for the root), each its shard's. */
async function clusterEngine() {
  const relays = new Map<string, { res: http.ServerResponse; no: string; shard: string }>();
  const opened: string[] = [];
  /** watches relayed: "<cluster path> <id>" */
  const relayed: string[] = [];
  const server = http.createServer((req, res) => {
    const url = req.url ?? "";
    const cluster = /^\/clusters\/[^/]+/.exec(url)?.[0] ?? "";
    const path = url.slice(cluster.length);
    if (path === "/__edgeplane/relay" && req.method === "GET") {
      opened.push(`${cluster || "root"} ${req.headers["x-edgeplane-relay-shard"]}`);
      res.writeHead(200, { "content-type": "application/octet-stream" });
      res.flushHeaders();
      relays.set(cluster, { res, no: String(req.headers["x-edgeplane-relay-no"]), shard: "" });
      return;
    }
    const [secret, id] = String(req.headers["x-edgeplane-relay"] ?? "").split(" ");
    if (secret !== SECRET || !path.includes("watch=1")) {
      res.writeHead(200, { "content-type": "text/plain", "content-length": "2" }).end("no");
      return;
    }
    const relay = relays.get(cluster);
    if (!relay) {
      res.writeHead(200, { "content-type": "application/json", "x-edgeplane-relay-offer": "/configmaps" });
      res.write(event(`streamed-${cluster || "root"}`));
      return;
    }
    relayed.push(`${cluster || "root"} ${id}`);
    relay.res.write(message(1, [Number(id)], event(`relayed-${cluster || "root"}`)));
    res.writeHead(200, {
      "content-type": "application/json",
      "x-edgeplane-relayed": relay.no,
      "content-length": "0",
    });
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  stops.push(
    () =>
      new Promise<void>((r) => {
        for (const x of relays.values()) x.res.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { port: (server.address() as net.AddressInfo).port, opened, relayed };
}

async function watch(port: number, path: string) {
  const socket = net.connect(port, "127.0.0.1");
  await new Promise((r) => socket.once("connect", r));
  stops.push(() => socket.destroy());
  const c = { got: "" };
  socket.on("data", (d) => (c.got += d.toString("latin1")));
  socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n`);
  return c;
}

const WATCH = "/api/v1/namespaces/n/configmaps?watch=1";

describe("the watch relay and clusters", () => {
  it("opens each cluster's relay under its own path and carries its watches on it only", async () => {
    const engine = await clusterEngine();
    const port = await frontDoor(stops, engine.port);
    // a's first watch is a stream of its own, offering a's relay: opened under /clusters/a
    const a1 = await watch(port, `/clusters/a${WATCH}`);
    await until(() => a1.got.includes("streamed-/clusters/a"), "a's first watch");
    await until(() => engine.opened.length === 1 || undefined, "a's relay");
    expect(engine.opened).toEqual(["/clusters/a /configmaps"]);
    // a's next watch goes on a's relay
    const a2 = await watch(port, `/clusters/a${WATCH}`);
    await until(() => a2.got.includes("relayed-/clusters/a"), "a's relayed watch");
    // b's first watch is not put on a's relay (b's shard has none): b's own is opened
    const b1 = await watch(port, `/clusters/b${WATCH}`);
    await until(() => b1.got.includes("streamed-/clusters/b"), "b's first watch");
    await until(() => engine.opened.length === 2 || undefined, "b's relay");
    expect(engine.opened[1]).toBe("/clusters/b /configmaps");
    const b2 = await watch(port, `/clusters/b${WATCH}`);
    await until(() => b2.got.includes("relayed-/clusters/b"), "b's relayed watch");
    // the root's watches have the root's relay
    const r1 = await watch(port, WATCH);
    await until(() => r1.got.includes("streamed-root"), "the root's first watch");
    await until(() => engine.opened.length === 3 || undefined, "the root's relay");
    expect(engine.opened[2]).toBe("root /configmaps");
    const r2 = await watch(port, WATCH);
    await until(() => r2.got.includes("relayed-root"), "the root's relayed watch");
    expect(engine.relayed.map((r) => r.split(" ")[0])).toEqual(["/clusters/a", "/clusters/b", "root"]);
    expect(a2.got).not.toContain("relayed-/clusters/b");
    expect(b2.got).not.toContain("relayed-/clusters/a");
    // a path with dot segments is the Worker's to resolve: sent without the relay's offer
    const dots = await watch(port, `/clusters/a/../b${WATCH}`);
    await until(() => dots.got.includes("\r\n\r\nno") || undefined, "the dotted watch's answer");
  });
});
