// A stand-in for workerd that speaks the watch relay's protocol (durable-objects/store/relay.ts;
// the shard's side runs in real workerd in test/workers/relay.test.ts), and the front door in
// front of it, for the front door's unit tests. Each function registers its cleanup in `stops`.
import http from "node:http";
import net from "node:net";
import { startFront } from "../../local-engine/front-door";

export type Stops = (() => unknown)[];

export const SECRET = "front-door-relay-secret";

/** A relay message: kind 1 (data) or 2 (end), the watch ids, the bytes. */
export function message(kind: 1 | 2, ids: number[], data = ""): Buffer {
  const body = Buffer.from(data);
  const b = Buffer.alloc(9 + 4 * ids.length + body.length);
  b.writeUInt32LE(b.length - 4, 0);
  b[4] = kind;
  b.writeUInt32LE(ids.length, 5);
  for (const [i, id] of ids.entries()) b.writeUInt32LE(id, 9 + 4 * i);
  body.copy(b, 9 + 4 * ids.length);
  return b;
}

export const event = (name: string, pad = 0) =>
  `${JSON.stringify({ type: "ADDED", object: { metadata: { name }, pad: "x".repeat(pad) } })}\n`;

export async function until<T>(get: () => T | undefined, what: string): Promise<T> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const v = get();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A stand-in for workerd: relays watches once the front door opened its relay. */
export async function fakeEngine(stops: Stops) {
  const requests: { method: string; url: string; relay?: string; raw: string[] }[] = [];
  const cancels: { no: string; ids: number[] }[] = [];
  /** watch ids the engine took over, in order */
  const relayed: number[] = [];
  const engine = {
    requests,
    cancels,
    relayed,
    relay: undefined as undefined | { res: http.ServerResponse; headers: http.IncomingHttpHeaders },
    /** bytes to put on the relay for a watch before answering it (its replay) */
    replay: (_id: number): Buffer[] => [],
    offerDelayMs: 0,
    port: 0,
  };
  const server = http.createServer((req, res) => {
    const relayHeader = req.headers["x-edgeplane-relay"] as string | undefined;
    requests.push({ method: req.method!, url: req.url!, relay: relayHeader, raw: req.rawHeaders });
    if (req.url === "/__edgeplane/relay") {
      if (req.method === "GET") {
        res.writeHead(200, { "content-type": "application/octet-stream" });
        res.flushHeaders();
        engine.relay = { res, headers: req.headers };
        return;
      }
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        cancels.push(JSON.parse(body));
        res.writeHead(204).end();
      });
      return;
    }
    const [secret, id] = (relayHeader ?? "").split(" ");
    if (secret === SECRET && req.url!.includes("watch=1")) {
      if (!engine.relay) {
        // an ordinary watch stream, left open; its answer comes after `offerDelayMs`
        setTimeout(() => {
          res.writeHead(200, {
            "content-type": "application/json",
            "x-edgeplane-relay-offer": "/configmaps",
          });
          res.write(event("streamed"));
        }, engine.offerDelayMs);
        return;
      }
      for (const m of engine.replay(Number(id))) engine.relay.res.write(m);
      relayed.push(Number(id));
      const no = engine.relay.headers["x-edgeplane-relay-no"] as string;
      // after the replay, as the shard answers: the relay's bytes may come first
      setTimeout(() => {
        res.writeHead(200, {
          "content-type": "application/json",
          "x-edgeplane-relayed": no,
          "content-length": "0",
        });
        res.end();
      }, 20);
      return;
    }
    // anything else: what was asked (and sent, and for which host) as plain text
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const text = `plain ${req.url}${body ? ` ${body}` : ""}`;
      res.writeHead(200, {
        "content-type": "text/plain",
        "content-length": String(Buffer.byteLength(text)),
        "x-seen-host": req.headers.host ?? "",
      });
      res.end(text);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  engine.port = (server.address() as net.AddressInfo).port;
  stops.push(
    () =>
      new Promise<void>((r) => {
        engine.relay?.res.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return engine;
}

export async function frontDoor(
  stops: Stops,
  upstreamPort: number,
  tls: { cert?: string; key?: string } = {},
): Promise<number> {
  const port = await new Promise<number>((r) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => r(p));
    });
  });
  const front = await startFront({ port, upstreamPort, relaySecret: SECRET, ...tls });
  stops.push(() => front.close());
  return port;
}

export type FakeEngine = Awaited<ReturnType<typeof fakeEngine>>;
