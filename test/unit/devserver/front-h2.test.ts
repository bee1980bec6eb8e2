// HTTP/2 at the front door (local-engine/front-door-h2.ts): chosen by ALPN over TLS (as kubectl
// and client-go choose it) or spoken with prior knowledge over plain HTTP; many requests and
// watches on one connection, each sent to a stand-in for workerd as an HTTP/1.1 request; a
// relayed watch's events written to its stream as they are; HTTP/1.1 clients unchanged.

import { mkdtempSync, rmSync } from "node:fs";
import http2 from "node:http2";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import { afterEach, describe, expect, it } from "vitest";
import { ensurePki } from "../../../local-engine/pki";
import { event, fakeEngine, frontDoor, message, SECRET, until } from "../../helpers/relay-engine";

const stops: (() => unknown)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

const WATCH = "/api/v1/namespaces/n/configmaps?watch=1&resourceVersion=5";

function session(url: string, opts: http2.SecureClientSessionOptions = {}): http2.ClientHttp2Session {
  const s = http2.connect(url, opts);
  s.on("error", () => undefined);
  stops.push(() => s.destroy());
  return s;
}

/** One request on `s`: its status, headers and body once it ends. */
function ask(s: http2.ClientHttp2Session, path: string, method = "GET", body?: string) {
  return new Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: string }>(
    (resolve, reject) => {
      const req = s.request({ ":method": method, ":path": path, authorization: "Bearer t" });
      let text = "";
      let headers: http2.IncomingHttpHeaders = {};
      req.on("response", (h) => (headers = h));
      req.setEncoding("utf8");
      req.on("data", (c) => (text += c));
      req.on("end", () => resolve({ status: Number(headers[":status"]), headers, body: text }));
      req.on("error", reject);
      req.end(body);
    },
  );
}

/** A watch on `s`: what it received so far, whether it ended, and its stream. */
function watch(s: http2.ClientHttp2Session) {
  const req = s.request({ ":method": "GET", ":path": WATCH, authorization: "Bearer t" });
  const w = { req, got: "", ended: false, headers: undefined as http2.IncomingHttpHeaders | undefined };
  req.on("response", (h) => (w.headers = h));
  req.setEncoding("utf8");
  req.on("data", (c) => (w.got += c));
  req.on("end", () => (w.ended = true));
  req.on("error", () => undefined);
  return w;
}

describe("front door over HTTP/2", () => {
  it("serves many requests at once on one plain connection with prior knowledge", async () => {
    const engine = await fakeEngine(stops);
    const port = await frontDoor(stops, engine.port);
    const s = session(`http://127.0.0.1:${port}`);
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        i % 2
          ? ask(s, `/api/v1/namespaces/n/configmaps/c${i}`)
          : ask(s, `/api/v1/x${i}`, "POST", `body ${i}`),
      ),
    );
    for (const [i, a] of answers.entries()) {
      expect(a.status).toBe(200);
      expect(a.body).toBe(
        i % 2 ? `plain /api/v1/namespaces/n/configmaps/c${i}` : `plain /api/v1/x${i} body ${i}`,
      );
      // the :authority goes on as the Host header; the engine's framing stays behind
      expect(a.headers["x-seen-host"]).toBe(`127.0.0.1:${port}`);
      expect(a.headers["transfer-encoding"]).toBeUndefined();
      expect(a.headers.connection).toBeUndefined();
    }
    const posts = engine.requests.filter((r) => r.method === "POST" && r.url.startsWith("/api/v1/x"));
    expect(posts).toHaveLength(25);

    // a header sent twice arrives twice, as it would over HTTP/1.1
    const req = s.request({
      ":path": "/api/v1/twice",
      authorization: "Bearer t",
      "impersonate-group": ["a", "b"],
    });
    req.resume();
    await new Promise((r) => req.on("end", r));
    const raw = engine.requests.find((r) => r.url === "/api/v1/twice")!.raw;
    const groups = raw.filter((_, i) => i % 2 === 1 && raw[i - 1]!.toLowerCase() === "impersonate-group");
    expect(groups).toEqual(["a", "b"]);
  });

  it("offers h2 over TLS by ALPN, and still serves HTTP/1.1 clients there", async () => {
    const dir = mkdtempSync(join(tmpdir(), "front-h2-"));
    stops.push(() => rmSync(dir, { recursive: true, force: true }));
    // PEM texts of a CA and of a server certificate it signed for 127.0.0.1
    const pki = ensurePki(dir) as { caCert: string; cert: string; key: string };
    const engine = await fakeEngine(stops);
    const port = await frontDoor(stops, engine.port, { cert: pki.cert, key: pki.key });
    const ca = pki.caCert;
    const s = session(`https://127.0.0.1:${port}`, { ca });
    const a = await ask(s, "/version");
    expect(s.alpnProtocol).toBe("h2");
    expect(a).toMatchObject({ status: 200, body: "plain /version" });

    const h1 = await new Promise<{ status?: number; body: string; alpn: string | false }>(
      (resolve, reject) => {
        const opts = {
          host: "127.0.0.1",
          port,
          path: "/healthz",
          ca,
          ALPNProtocols: ["http/1.1"],
          agent: false,
        };
        const req = https.get(opts, (res) => {
          const alpn = (res.socket as TLSSocket).alpnProtocol;
          let body = "";
          res.on("data", (c) => (body += c));
          res.on("end", () => resolve({ status: res.statusCode, body, alpn }));
        });
        req.on("error", reject);
      },
    );
    expect(h1).toEqual({ status: 200, body: "plain /healthz", alpn: "http/1.1" });
  });

  it("carries watches of one connection on the relay: each stream gets its own events as they are, then its end", async () => {
    const engine = await fakeEngine(stops);
    const port = await frontDoor(stops, engine.port);
    const s = session(`http://127.0.0.1:${port}`);
    // the first watch is a stream of its own, minus the relay's offer; it opens the relay
    const first = watch(s);
    await until(() => first.got.includes("streamed") || undefined, "the streamed event");
    expect(Object.keys(first.headers ?? {}).filter((h) => h.startsWith("x-edgeplane"))).toEqual([]);
    expect(engine.requests[0]!.relay).toMatch(new RegExp(`^${SECRET} \\d+$`));
    const relay = await until(() => engine.relay, "the relay to open");

    engine.replay = (id) => [message(1, [id], event(`replayed-${id}`))];
    const [a, b, c] = [watch(s), watch(s), watch(s)];
    await until(() => (engine.relayed.length === 3 ? true : undefined), "three watches relayed");
    await until(() => (a.headers && b.headers && c.headers ? true : undefined), "their heads");
    const [ia, ib, ic] = engine.relayed as [number, number, number];
    for (const w of [a, b, c]) {
      expect(w.headers?.[":status"]).toBe(200);
      expect(Object.keys(w.headers ?? {}).filter((h) => h.startsWith("x-edgeplane"))).toEqual([]);
      expect(w.headers?.["content-length"]).toBeUndefined();
    }
    relay.res.write(message(1, [ia, ib], event("both")));
    relay.res.write(message(1, [ic], event("third", 100_000)));
    relay.res.write(message(2, [ia]));
    await until(
      () => (a.ended && b.got.includes("both") && c.got.includes("third") ? true : undefined),
      "delivery",
    );
    // the bytes as the shard sent them: no HTTP/1.1 chunk framing on an HTTP/2 stream
    expect(a.got).toBe(event(`replayed-${ia}`) + event("both"));
    expect(b.got).toBe(event(`replayed-${ib}`) + event("both"));
    expect(c.got).toBe(event(`replayed-${ic}`) + event("third", 100_000));
    expect(b.ended || c.ended).toBe(false);

    // a stream the client cancels is given up on the shard; the others go on
    c.req.close();
    const cancel = await until(() => engine.cancels[0], "the cancel");
    expect(cancel.ids).toEqual([ic]);
    relay.res.write(message(1, [ib], event("later")));
    await until(() => (b.got.endsWith(event("later")) ? true : undefined), "b's next event");
    // and the connection still serves ordinary requests meanwhile
    expect(await ask(s, "/healthz")).toMatchObject({ status: 200, body: "plain /healthz" });
  });
});
