// The front door against clients that never finish (local-engine/guard.ts): a request waits
// for a place in the queue only once its head is complete; a head that does not arrive within
// the deadline is answered 408 (a connection that sends nothing is closed), one over the limit
// 431, both as a Status and before anything
// reaches workerd; connections without a verified credential are bounded per source address,
// the oldest idle one closed first; all of a source's anonymous connections are one client;
// node credentials go in however full the queue is; a credential answered 401 is forgotten.
import http2 from "node:http2";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_HEAD_BYTES } from "../../../local-engine/guard";
import {
  answerInOrder,
  frontDoor,
  get,
  heldUpstream,
  learn,
  oneByOne,
  type Stops,
  until,
} from "../../helpers/held-upstream";

const stops: Stops = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

/** A raw connection to the front door: what it received, and whether it closed. */
async function raw(port: number) {
  const socket = net.connect(port, "127.0.0.1");
  stops.push(() => socket.destroy());
  await new Promise((r) => socket.once("connect", r));
  const c = { socket, got: "", closed: false };
  socket.on("data", (d) => (c.got += d));
  socket.on("error", () => {});
  socket.on("close", () => (c.closed = true));
  return c;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The Status in an HTTP/1.1 answer, with its status line. */
function statusOf(answer: string) {
  const [head, body] = answer.split("\r\n\r\n", 2);
  return { line: head.split("\r\n")[0], head: head.toLowerCase(), status: JSON.parse(body) };
}

describe("request heads at the front door", () => {
  it("a head still arriving takes no place: the next client's request goes in", async () => {
    const up = await heldUpstream(stops);
    const { port } = await frontDoor(stops, up.port, { limit: 1, holdMs: 60_000 });
    const slow = await raw(port);
    slow.socket.write("GET /api/v1/pods?id=slow HTTP/1.1\r\nHost: x\r\n");
    await sleep(100);
    const next = get(port, "/api/v1/pods?id=next");
    await until(() => up.arrived.includes("next"), 2000);
    expect(up.arrived).toEqual(["next"]);
    up.answer("next");
    expect(await next).toBe("ok");
    // once its head is complete it is an ordinary request
    slow.socket.write("Accept: */*\r\n\r\n");
    await until(() => up.arrived.includes("slow"));
    up.answer("slow");
    await until(() => slow.got.includes("\r\n\r\nok"));
  });

  it("a head split at any byte is read whole, its request queued once", async () => {
    const up = await heldUpstream(stops);
    const { port } = await frontDoor(stops, up.port, { limit: 1, holdMs: 60_000 });
    const c = await raw(port);
    for (const ch of "GET /a?id=split HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n") {
      c.socket.write(ch);
      await sleep(2);
    }
    await until(() => up.arrived.includes("split"));
    up.answer("split");
    await until(() => c.got.includes("\r\n\r\nok"));
    expect(c.got.startsWith("HTTP/1.1 200 OK")).toBe(true);
  });

  it("a head that does not arrive within the deadline is answered 408 and the connection closed", async () => {
    const up = await heldUpstream(stops);
    const { port } = await frontDoor(stops, up.port, { limit: 1, holdMs: 60_000 }, { headerTimeoutMs: 300 });
    const trickle = await raw(port);
    trickle.socket.write("GET /api/v1/pods?id=t HTTP/1.1\r\n");
    const timer = setInterval(() => trickle.socket.write("X-Slow: 1\r\n"), 50);
    stops.push(() => clearInterval(timer));
    await until(() => trickle.closed, 2000);
    const { line, head, status } = statusOf(trickle.got);
    expect(line).toBe("HTTP/1.1 408 Request Timeout");
    expect(head).toContain("connection: close");
    expect(status).toMatchObject({ kind: "Status", status: "Failure", reason: "Timeout", code: 408 });
    // a connection that sends nothing at all is closed at the deadline too (it has not even
    // said whether it speaks TLS: there is nothing to answer it in)
    const silent = await raw(port);
    await until(() => silent.closed, 2000);
    expect(silent.got).toBe("");
    expect(up.arrived).toEqual([]);
  });

  it("a head over the limit is answered 431 as a Status; nothing reaches workerd", async () => {
    const up = await heldUpstream(stops);
    const { port } = await frontDoor(stops, up.port, { limit: 1, holdMs: 60_000 });
    // in one piece, and in pieces that never end the head
    for (const split of [false, true]) {
      const c = await raw(port);
      const line = `X-Big: ${"a".repeat(1000)}\r\n`;
      const head = `GET /api/v1/pods?id=big HTTP/1.1\r\nHost: x\r\n${line.repeat(Math.ceil(MAX_HEAD_BYTES / line.length))}\r\n`;
      if (split) for (let i = 0; i < head.length - 2; i += 4096) c.socket.write(head.slice(i, i + 4096));
      else c.socket.write(head);
      await until(() => c.closed, 3000);
      const { line: statusLine, status } = statusOf(c.got);
      expect(statusLine).toBe("HTTP/1.1 431 Request Header Fields Too Large");
      expect(status).toMatchObject({ kind: "Status", reason: "RequestHeaderFieldsTooLarge", code: 431 });
    }
    // a long head under the limit goes on (the stand-in for workerd, a Node server, reads 16 KiB)
    const ok = get(port, "/api/v1/pods?id=long", "x".repeat(12 * 1024));
    await until(() => up.arrived.includes("long"));
    up.answer("long");
    expect(await ok).toBe("ok");
    expect(up.arrived).toEqual(["long"]);
  });

  it("over HTTP/2 too: a header list over the limit is a 431 Status", async () => {
    const up = await heldUpstream(stops);
    const { port } = await frontDoor(stops, up.port, { limit: 1, holdMs: 60_000 });
    const s = http2.connect(`http://127.0.0.1:${port}`, { maxSendHeaderBlockLength: 4 * MAX_HEAD_BYTES });
    s.on("error", () => {});
    stops.push(() => s.destroy());
    const headers: http2.OutgoingHttpHeaders = { ":path": "/api/v1/pods?id=big" };
    for (let i = 0; i < 8; i++) headers[`x-big-${i}`] = "a".repeat(MAX_HEAD_BYTES / 8);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = s.request(headers);
      let status = 0;
      let body = "";
      req.on("response", (h) => (status = Number(h[":status"])));
      req.setEncoding("utf8");
      req.on("data", (d) => (body += d));
      req.on("end", () => resolve({ status, body }));
      req.on("error", reject);
    });
    expect(answer.status).toBe(431);
    expect(JSON.parse(answer.body)).toMatchObject({ reason: "RequestHeaderFieldsTooLarge", code: 431 });
    expect(up.arrived).toEqual([]);
  });
});

describe("the head deadline and HTTP/2", () => {
  it("runs until a session's first request: one that asked in time is not closed later", async () => {
    const up = await heldUpstream(stops);
    const { port } = await frontDoor(stops, up.port, { limit: 4, holdMs: 60_000 }, { headerTimeoutMs: 300 });
    const s = http2.connect(`http://127.0.0.1:${port}`);
    s.on("error", () => {});
    stops.push(() => s.destroy());
    const ask = (id: string) =>
      new Promise<number>((resolve, reject) => {
        const req = s.request({ ":path": `/x?id=${id}` });
        req.on("response", (h) => resolve(Number(h[":status"])));
        req.on("error", reject);
        req.resume();
      });
    const first = ask("h1");
    await until(() => up.arrived.includes("h1"));
    up.answer("h1");
    expect(await first).toBe(200);
    await sleep(600);
    expect(s.closed || s.destroyed).toBe(false);
    const second = ask("h2");
    await until(() => up.arrived.includes("h2"));
    up.answer("h2");
    expect(await second).toBe(200);
    // a session that never asks is closed at the deadline
    const idle = http2.connect(`http://127.0.0.1:${port}`);
    idle.on("error", () => {});
    stops.push(() => idle.destroy());
    await until(() => idle.closed || idle.destroyed, 2000);
  });
});

describe("connections without a verified credential", () => {
  it("are bounded per source address: the oldest idle one is closed, a verified one is not", async () => {
    const up = await heldUpstream(stops);
    const { port, front } = await frontDoor(
      stops,
      up.port,
      { limit: 4, holdMs: 60_000 },
      { untrustedPerSource: 3, headerTimeoutMs: 60_000, evictableAfterMs: 0 },
    );
    await learn(up, port, ["v"]);
    // a verified client's kept-alive connection
    const verified = await raw(port);
    verified.socket.write("GET /a?id=v1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer v\r\n\r\n");
    await until(() => up.arrived.includes("v1"));
    up.answer("v1");
    await until(() => verified.got.includes("ok"));
    // a crowd that never finishes its heads
    const crowd = [];
    for (let i = 0; i < 5; i++) {
      const c = await raw(port);
      c.socket.write("GET /a HTTP/1.1\r\n");
      crowd.push(c);
      await sleep(30);
    }
    await until(() => crowd[0].closed && crowd[1].closed);
    expect(crowd.map((c) => c.closed)).toEqual([true, true, false, false, false]);
    expect(front.stats().untrusted).toBe(3);
    expect(verified.closed).toBe(false);
    // one with a request in progress is not closed to make room
    const busy = crowd[2];
    busy.socket.write("Host: x\r\n\r\n");
    const more = await raw(port);
    more.socket.write("GET");
    await until(() => crowd[3].closed);
    expect([busy.closed, crowd[4].closed, more.closed]).toEqual([false, false, false]);
  });

  it("a burst of new connections is not closed to make room: only ones over a second old are", async () => {
    const up = await heldUpstream(stops);
    const { port, front } = await frontDoor(
      stops,
      up.port,
      { limit: 20, holdMs: 60_000 },
      { untrustedPerSource: 3 },
    );
    const burst = await Promise.all(Array.from({ length: 8 }, () => raw(port)));
    await sleep(200);
    expect(burst.map((c) => c.closed)).toEqual(Array(8).fill(false));
    expect(front.stats().untrusted).toBe(8);
    // once they are old, the next new connection makes room
    await sleep(1000);
    await raw(port);
    await until(() => burst[0].closed);
    expect(burst.map((c) => c.closed)).toEqual([true, ...Array(7).fill(false)]);
  });

  it("a source's anonymous connections are one client: a verified client goes in between", async () => {
    const up = await heldUpstream(stops);
    const port = (await frontDoor(stops, up.port, { limit: 1, holdMs: 60_000 })).port;
    await learn(up, port, ["v"]);
    const anon = (id: string) => () => get(port, `/api/v1/pods?id=${id}`);
    const answers = await oneByOne([anon("a1"), anon("a2"), anon("a3"), () => get(port, "/x?id=v1", "v")]);
    await answerInOrder(up, ["a1", "v1", "a2", "a3"]);
    expect(await Promise.all(answers)).toEqual(["ok", "ok", "ok", "ok"]);
    expect(up.arrived.slice(1)).toEqual(["a1", "v1", "a2", "a3"]);
  });

  it("a node's credential goes in while the queue is full; a 401 makes a credential unverified again", async () => {
    const up = await heldUpstream(stops);
    const { port, front } = await frontDoor(stops, up.port, { limit: 1, holdMs: 60_000 });
    await learn(up, port, ["v", "node-1"]);
    expect(up.asked).toEqual(["warm-v", "warm-node-1"]);
    const held = get(port, "/x?id=held", "v");
    const waiting = get(port, "/x?id=waiting", "v");
    await until(() => up.arrived.includes("held"));
    const lease = get(
      port,
      "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n?id=lease",
      "node-1",
    );
    await until(() => up.arrived.includes("lease"), 1000);
    expect(up.arrived.includes("waiting")).toBe(false);
    up.answer("lease");
    expect(await lease).toBe("ok");
    await answerInOrder(up, ["held", "waiting"]);
    expect(await Promise.all([held, waiting])).toEqual(["ok", "ok"]);
    // known credentials are not asked about again; one answered 401 is
    expect(up.asked).toEqual(["warm-v", "warm-node-1"]);
    expect(front.stats().credentials).toBe(2);
    up.revoke("node-1");
    expect(await get(port, "/x?id=revoked", "node-1")).toBe("");
    expect(front.stats().credentials).toBe(1);
    const again = get(port, "/x?id=again", "v");
    await until(() => up.arrived.includes("again"));
    up.answer("again");
    expect(await again).toBe("ok");
    expect(up.asked).toEqual(["warm-v", "warm-node-1"]);
  });

  it("a credential the Worker does not name stays unverified (no secret: nothing is asked)", async () => {
    const up = await heldUpstream(stops);
    const { port, front } = await frontDoor(stops, up.port, { limit: 1, holdMs: 60_000 });
    const bad = get(port, "/x?id=bad", "bad");
    expect(await bad).toBe("");
    expect(front.stats().credentials).toBe(0);
  });
});
