// The agents' HTTP client and a server that closes kept-alive connections as idle: a request
// that meets such a close on a reused socket goes again on a fresh one, once; a request on a
// fresh socket that is cut is not repeated.
import { afterEach, describe, expect, it } from "vitest";
import { HttpEndpoint } from "../../../agent/lib/http";
import { type RawServer, rawServer as raw } from "../../helpers/raw-http";

const servers: RawServer[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

async function rawServer(answer: (nthOnConnection: number) => boolean) {
  const s = await raw(answer);
  servers.push(s);
  return s;
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
