// The agents' HTTP client and a server that closes kept-alive connections as idle: a request
// that meets such a close on a reused socket goes again on a fresh one, once; a request on a
// fresh socket that is cut is not repeated.
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { HttpEndpoint } from "../../../agent/lib/http";

const servers: net.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** A raw HTTP/1.1 server: `answer(n)` decides, per request number on a connection, to reply or to cut. */
async function rawServer(answer: (nthOnConnection: number) => boolean) {
  let connections = 0;
  let requests = 0;
  const server = net.createServer((sock) => {
    connections++;
    let n = 0;
    let buf = "";
    sock.on("data", (d) => {
      buf += d;
      while (buf.includes("\r\n\r\n")) {
        buf = buf.slice(buf.indexOf("\r\n\r\n") + 4);
        requests++;
        n++;
        if (!answer(n)) {
          sock.destroy();
          return;
        }
        sock.write(
          'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{"ok":true}',
        );
      }
    });
    sock.on("error", () => {});
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as net.AddressInfo).port;
  return { port, counts: () => ({ connections, requests }) };
}

const endpoint = (port: number) =>
  new HttpEndpoint(
    `http://127.0.0.1:${port}`,
    { requests: { keepAlive: true, maxSockets: 1 }, watches: { keepAlive: true } },
    {},
    {},
  );

const put = (e: HttpEndpoint) =>
  e.send({ method: "PUT", path: "/lease", body: {}, contentType: "application/json", timeoutMs: 5000 });

describe("agent HTTP client", () => {
  it("sends again once when a reused connection is closed under the request", async () => {
    // the second request on every connection finds it closed, as an idle close would
    const s = await rawServer((n) => n === 1);
    const e = endpoint(s.port);
    expect((await put(e)).status).toBe(200);
    expect((await put(e)).status).toBe(200);
    expect(s.counts()).toEqual({ connections: 2, requests: 3 });
  });

  it("does not repeat a request cut on a fresh connection", async () => {
    const s = await rawServer(() => false);
    const e = endpoint(s.port);
    await expect(put(e)).rejects.toThrow();
    expect(s.counts()).toEqual({ connections: 1, requests: 1 });
  });
});
