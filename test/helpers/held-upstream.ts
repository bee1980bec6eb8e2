// A stand-in for workerd behind a real front door (local-engine/front-door.ts), for the front
// door's queue and guards: it answers a request only when the test says so, and names a
// credential's priority level as the Worker does (api/wire/priority.ts).
import http from "node:http";
import net from "node:net";
import { expect } from "vitest";
import { startFront } from "../../local-engine/front-door";
import type { GuardOptions } from "../../local-engine/guard";

/** Cleanups, run by the test file after each test. */
export type Stops = (() => unknown)[];

/** The secret the front door asks the stand-in Worker with (the engine's EDGEPLANE_FRONT_SECRET). */
export const FRONT_SECRET = "front-secret";

/**
 * An upstream that answers a request only when the test says so, recording arrivals. As the
 * Worker does, it names the level of a credential when the front door asks with its secret:
 * "system" for tokens that begin "node", 401 for "bad" (or a revoked one), else "workload".
 */
export async function heldUpstream(stops: Stops) {
  const arrived: string[] = [];
  const asked: string[] = [];
  const revoked = new Set<string>();
  const pending = new Map<string, http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const id = new URL(req.url!, "http://x").searchParams.get("id")!;
    arrived.push(id);
    const token = req.headers.authorization?.replace(/^Bearer /, "");
    if (token === "bad" || revoked.has(token ?? ""))
      return void res.writeHead(401, { "content-length": "0" }).end();
    if (req.headers["x-edgeplane-priority"] === FRONT_SECRET && token) {
      asked.push(id);
      res.setHeader("x-edgeplane-priority-level", token.startsWith("node") ? "system" : "workload");
    }
    pending.set(id, res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  stops.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    arrived,
    asked,
    inFlight: () => pending.size,
    /** from now on `token` is answered 401 */
    revoke: (token: string) => revoked.add(token),
    answer(id: string) {
      // a length even for HEAD (as workerd sends it): the answer to HEAD has no body all the same
      pending.get(id)!.setHeader("content-length", "2").end("ok");
      pending.delete(id);
    },
  };
}

export type Admission = { limit: number; holdMs: number; systemSeats?: number; catchAllSeats?: number };
export type HeldUpstream = Awaited<ReturnType<typeof heldUpstream>>;

export async function frontDoor(
  stops: Stops,
  upstreamPort: number,
  admission: Admission,
  guards?: GuardOptions,
) {
  const port = await new Promise<number>((r) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => r(p));
    });
  });
  const front = await startFront({ port, upstreamPort, admission, frontSecret: FRONT_SECRET, guards });
  stops.push(() => front.close());
  return { port, front };
}

/** Sends one request with each token and answers it: the front door has learned their levels. */
export async function learn(up: HeldUpstream, port: number, tokens: string[]) {
  for (const token of tokens) {
    const answer = get(port, `/warm?id=warm-${token}`, token);
    await until(() => up.arrived.includes(`warm-${token}`));
    up.answer(`warm-${token}`);
    expect(await answer).toBe("ok");
  }
}

/** One request on its own connection (with `token`, as that client); resolves with the body. */
export function get(port: number, path: string, token?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const headers = token ? { authorization: `Bearer ${token}` } : {};
    const req = http.get({ port, host: "127.0.0.1", path, agent: false, headers }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve(body));
    });
    req.on("error", reject);
  });
}

export const until = async (cond: () => boolean, ms = 3000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 10));
  }
};

/** Starts each request 50 ms after the one before (a known arrival order); their answers. */
export async function oneByOne(sends: (() => Promise<string>)[]): Promise<Promise<string>[]> {
  const answers: Promise<string>[] = [];
  for (const send of sends) {
    answers.push(send());
    await new Promise((r) => setTimeout(r, 50));
  }
  return answers;
}

/** Answers each request once it reached the upstream, in this order. */
export async function answerInOrder(up: HeldUpstream, ids: string[]) {
  for (const id of ids) {
    await until(() => up.arrived.includes(id));
    up.answer(id);
  }
}
