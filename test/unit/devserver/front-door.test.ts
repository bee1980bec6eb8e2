// The local front door between clients and workerd: a kept-alive client connection outlives
// an upstream connection closed as idle; a request that met such a close goes again on a new
// connection; every other close (soon after a response, of a WebSocket tunnel) reaches the
// client unchanged.
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startFront } from "../../../local-engine/front-door";
import { shared } from "../../helpers/cluster";
import { type RawReply, type RawServer, rawServer } from "../../helpers/raw-http";

const stops: (() => unknown)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

async function setUp(
  transport: "tcp" | "unix",
  reply: (n: number) => RawReply,
  opts: { upstreamIdleMs?: number; idleCloseMs?: number } = {},
): Promise<{ upstream: RawServer; client: Client }> {
  // as `npm start` runs it, workerd on a Unix socket; or on a TCP port (the wrangler engine)
  const dir = transport === "unix" ? mkdtempSync(join(tmpdir(), "front-")) : undefined;
  if (dir) stops.push(() => rmSync(dir, { recursive: true, force: true }));
  const path = dir && join(dir, "engine.sock");
  const upstream = await rawServer(reply, { idleCloseMs: opts.upstreamIdleMs, path });
  stops.push(() => upstream.close());
  const port = await new Promise<number>((r) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => r(p));
    });
  });
  const front = await startFront({
    port,
    upstreamPort: upstream.port,
    upstreamPath: path,
    idleCloseMs: opts.idleCloseMs,
  });
  stops.push(() => front.close());
  const client = await connect(port);
  stops.push(() => client.socket.destroy());
  return { upstream, client };
}

interface Client {
  socket: net.Socket;
  /** sends one GET and resolves with the status line, or with "closed" if the connection ends */
  get(): Promise<string>;
  closed: Promise<void>;
}

async function connect(port: number): Promise<Client> {
  const socket = net.connect(port, "127.0.0.1");
  await new Promise((r) => socket.once("connect", r));
  let buf = "";
  let waiting: ((s: string) => void) | undefined;
  const closed = new Promise<void>((r) => socket.once("close", () => r()));
  socket.on("data", (d) => {
    buf += d;
    const end = buf.indexOf("\r\n\r\n");
    if (end < 0 || !waiting) return;
    const head = buf.slice(0, end);
    const status = head.slice(0, head.indexOf("\r\n"));
    if (status.includes(" 101 ")) buf = "";
    else if (/transfer-encoding: chunked/i.test(head)) {
      const last = buf.indexOf("\r\n0\r\n\r\n", end + 2);
      if (last < 0) return; // the body is not over yet
      buf = buf.slice(last + 7);
    } else {
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
      if (buf.length < end + 4 + length) return;
      buf = buf.slice(end + 4 + length);
    }
    const w = waiting;
    waiting = undefined;
    w(status);
  });
  socket.on("error", () => {});
  void closed.then(() => waiting?.("closed"));
  return {
    socket,
    closed,
    get: () =>
      new Promise<string>((r) => {
        waiting = r;
        socket.write("GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n");
      }),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(["unix", "tcp"] as const)("front door to an upstream over %s", (transport) => {
  it("keeps the client's connection when the upstream closes it as idle", async () => {
    const { upstream, client } = await setUp(transport, () => "answer", {
      upstreamIdleMs: 100,
      idleCloseMs: 50,
    });
    expect(await client.get()).toBe("HTTP/1.1 200 OK");
    await sleep(300); // the upstream has closed its side by now
    expect(client.socket.readyState).toBe("open");
    expect(await client.get()).toBe("HTTP/1.1 200 OK");
    expect(upstream.counts()).toEqual({ connections: 2, requests: 2 });
  });

  // the second request on every connection is cut without an answer: at once as workerd's
  // idle close meets it, after a wait as a busy workerd's idle close does, or soon after an
  // answer, as a request that may have run (that one is not sent again)
  it.each([
    { when: "as it meets an idle close", cut: "cut" as const, idleCloseMs: 0, second: "HTTP/1.1 200 OK" },
    {
      when: "left unread past the idle timeout",
      cut: { cutAfterMs: 300 },
      idleCloseMs: 250,
      second: "HTTP/1.1 200 OK",
    },
    {
      when: "cut sooner than the idle timeout after an answer",
      cut: { cutAfterMs: 100 },
      idleCloseMs: 1000,
      second: "closed",
    },
  ])("a request $when: the client gets $second", async ({ cut, idleCloseMs, second }) => {
    const { upstream, client } = await setUp(transport, (n) => (n === 1 ? "answer" : cut), { idleCloseMs });
    expect(await client.get()).toBe("HTTP/1.1 200 OK");
    expect(await client.get()).toBe(second);
    const resent = second !== "closed";
    expect(upstream.counts()).toEqual({ connections: resent ? 2 : 1, requests: resent ? 3 : 2 });
  });

  it("keeps the client's connection after a chunked response and an idle close", async () => {
    const { upstream, client } = await setUp(transport, () => "answer-chunked", {
      upstreamIdleMs: 100,
      idleCloseMs: 50,
    });
    expect(await client.get()).toBe("HTTP/1.1 200 OK");
    await sleep(300);
    expect(client.socket.readyState).toBe("open");
    expect(await client.get()).toBe("HTTP/1.1 200 OK");
    expect(upstream.counts()).toEqual({ connections: 2, requests: 2 });
  });

  it("passes on a close in the middle of a streamed response, however long it was quiet", async () => {
    // a watch that workerd cuts off: the client must see the close to watch again
    const { upstream, client } = await setUp(transport, () => ({ streamCutAfterMs: 300 }), {
      idleCloseMs: 50,
    });
    expect(await client.get()).toBe("closed");
    expect(upstream.counts()).toEqual({ connections: 1, requests: 1 });
  });

  it("passes on a close right after a response", async () => {
    const { upstream, client } = await setUp(transport, () => "answer-and-close");
    expect(await client.get()).toBe("HTTP/1.1 200 OK");
    await client.closed;
    expect(upstream.counts()).toEqual({ connections: 1, requests: 1 });
  });

  it("passes on the close of an upgraded connection, whatever the timing", async () => {
    const { upstream, client } = await setUp(transport, () => "upgrade", {
      upstreamIdleMs: 100,
      idleCloseMs: 0,
    });
    expect(await client.get()).toBe("HTTP/1.1 101 Switching Protocols");
    client.socket.write("frame bytes the server never answers");
    await client.closed;
    expect(upstream.counts()).toEqual({ connections: 1, requests: 1 });
  });
});

describe("front door before workerd", () => {
  it("a kept-alive connection still answers after workerd's 5 s idle close", async () => {
    const port = Number(new URL(shared().url).port);
    const client = await connect(port);
    stops.push(() => client.socket.destroy());
    expect(await client.get()).toBe("HTTP/1.1 200 OK");
    await sleep(5600); // workerd has closed its side of the connection by now
    expect(client.socket.readyState).toBe("open");
    expect(await client.get()).toBe("HTTP/1.1 200 OK");
  });
});
