// A raw HTTP/1.1 server for connection-level tests: per request on a connection it answers,
// cuts the connection without answering (as a server's idle close meets a request), answers
// and closes, switches to a byte tunnel (101), or cuts after a delay. It can also close
// connections left idle, as workerd does after 5 s.
import net from "node:net";

export type RawReply = "answer" | "cut" | "answer-and-close" | "upgrade" | { cutAfterMs: number };

export interface RawServer {
  /** the TCP port, or 0 when it listens on a Unix socket */
  port: number;
  counts(): { connections: number; requests: number };
  close(): void;
}

const OK = 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{"ok":true}';
const CHUNKED = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";

export async function rawServer(
  reply: (nthOnConnection: number) => RawReply | boolean,
  opts: { idleCloseMs?: number; path?: string } = {},
): Promise<RawServer> {
  let connections = 0;
  let requests = 0;
  const open = new Set<net.Socket>();
  const server = net.createServer((sock) => {
    connections++;
    open.add(sock);
    sock.on("close", () => open.delete(sock));
    let n = 0;
    let buf = "";
    let tunnel = false;
    let idle: NodeJS.Timeout | undefined;
    const armIdle = () => {
      clearTimeout(idle);
      if (opts.idleCloseMs !== undefined) idle = setTimeout(() => sock.end(), opts.idleCloseMs);
    };
    armIdle();
    sock.on("data", (d) => {
      armIdle();
      if (tunnel) return;
      buf += d;
      while (buf.includes("\r\n\r\n")) {
        buf = buf.slice(buf.indexOf("\r\n\r\n") + 4);
        requests++;
        n++;
        const r = reply(n);
        if (r === false || r === "cut") return void sock.destroy();
        if (typeof r === "object" && "streamCutAfterMs" in r) {
          sock.write(`${CHUNKED}b\r\n{"ok":true}\r\n`);
          return void setTimeout(() => sock.end(), r.streamCutAfterMs);
        }
        if (typeof r === "object") return void setTimeout(() => sock.destroy(), r.cutAfterMs);
        if (r === "answer-chunked") {
          sock.write(`${CHUNKED}b\r\n{"ok":true}\r\n0\r\n\r\n`);
          continue;
        }
        if (r === "upgrade") {
          tunnel = true;
          sock.write("HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\n");
          return armIdle();
        }
        if (r === "answer-and-close")
          return void sock.end(OK.replace("\r\n\r\n", "\r\nconnection: close\r\n\r\n"));
        sock.write(OK);
      }
    });
    sock.on("error", () => {});
  });
  await new Promise<void>((r) =>
    opts.path ? server.listen(opts.path, r) : server.listen(0, "127.0.0.1", r),
  );
  const port = opts.path ? 0 : (server.address() as net.AddressInfo).port;
  return {
    port,
    counts: () => ({ connections, requests }),
    close: () => {
      for (const s of open) s.destroy();
      server.close();
    },
  };
}
