// A plain SPDY upgrade (exec, attach, port-forward from clients that do not speak WebSocket)
// answered by the front door and carried to the Worker over a WebSocket: see
// api/wire/spdy-upgrade.ts for the protocol. The request's credentials and the front door's
// own headers (a client certificate's identity) go along unchanged; what the Worker answers
// instead of a 101 (a 403, a 404, a node without its agent) reaches the client as it is.
import type net from "node:net";
import WebSocket from "ws";
import {
  PORT_FORWARD_STREAM_PROTOCOL,
  REMOTECOMMAND_STREAM_PROTOCOL,
  spdyUpgradeProtocol,
} from "../api/wire/spdy-upgrade";
import type { RequestHead } from "./fair-queue";

/** the headers of a SPDY upgrade that are not passed on (the WebSocket has its own) */
const HOP_HEADERS = new Set([
  "connection",
  "upgrade",
  "x-stream-protocol-version",
  "content-length",
  "transfer-encoding",
  "keep-alive",
  "sec-websocket-key",
  "sec-websocket-version",
  "sec-websocket-protocol",
  "sec-websocket-extensions",
]);

const STREAM_PATH = /\/pods\/[^/]+\/(exec|attach|portforward)$/;

/** bytes held for a slow WebSocket before the client is paused */
const HIGH_WATER = 1 << 20;

export interface SpdyUpgrade {
  /** the stream protocol the client gets (X-Stream-Protocol-Version of the 101) */
  streamProtocol: string;
  /** the WebSocket subprotocol that carries it to the Worker */
  wsProtocol: string;
}

/** The header lines of a head, as [name (lowercase), value] pairs in order. */
function headerLines(head: RequestHead): [string, string][] {
  return head.rawHeaders
    .split(/\r?\n/)
    .filter(Boolean)
    .map((line) => {
      const at = line.indexOf(":");
      return [line.slice(0, at).trim().toLowerCase(), line.slice(at + 1).trim()] as [string, string];
    })
    .filter(([name]) => name.length > 0);
}

/**
 * Whether `head` asks for a plain SPDY upgrade of exec, attach or port-forward that can be
 * carried: which stream protocol the client is answered with. A remotecommand client must
 * offer v4.channel.k8s.io (every kubectl since 1.5 does); anything else is left to the Worker,
 * which answers it.
 */
export function spdyUpgradeOf(head: RequestHead): SpdyUpgrade | undefined {
  if (!/(^|\n)upgrade: *spdy\/3\.1\s*(\r?\n|$)/.test(head.headers)) return undefined;
  const path = head.target.split("?", 1)[0];
  const sub = STREAM_PATH.exec(path)?.[1];
  if (!sub) return undefined;
  const offered = headerLines(head)
    .filter(([name]) => name === "x-stream-protocol-version")
    .flatMap(([, value]) => value.split(","))
    .map((v) => v.trim());
  const wanted = sub === "portforward" ? PORT_FORWARD_STREAM_PROTOCOL : REMOTECOMMAND_STREAM_PROTOCOL;
  if (!offered.includes(wanted)) return undefined;
  return { streamProtocol: wanted, wsProtocol: spdyUpgradeProtocol(wanted) };
}

/**
 * Serves one SPDY upgrade on the client connection `down`: opens the WebSocket to workerd
 * (`connect` makes its connection), answers the client 101 once the Worker has, then carries
 * bytes both ways until either side ends. `rest` is what the client sent after its head.
 */
export function carrySpdyUpgrade(
  down: net.Socket,
  head: RequestHead,
  upgrade: SpdyUpgrade,
  rest: Buffer,
  connect: () => net.Socket,
): void {
  const headers: Record<string, string> = {};
  for (const [name, value] of headerLines(head)) {
    if (HOP_HEADERS.has(name)) continue;
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const ws = new WebSocket(`ws://${headers.host ?? "localhost"}${head.target}`, [upgrade.wsProtocol], {
    headers,
    createConnection: () => connect(),
    perMessageDeflate: false,
    followRedirects: false,
  });
  const pending: Buffer[] = rest.length ? [rest] : [];
  let open = false;
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.terminate();
    down.end();
    setTimeout(() => down.destroy(), 1000).unref();
  };
  const toWorker = (chunk: Buffer) => {
    if (!open) return void pending.push(chunk);
    ws.send(chunk, { binary: true });
    if (ws.bufferedAmount > HIGH_WATER) {
      down.pause();
      const wait = () => (ws.bufferedAmount > HIGH_WATER ? setTimeout(wait, 5) : down.resume());
      setTimeout(wait, 5);
    }
  };
  down.on("data", toWorker);
  down.on("end", end);
  down.on("close", end);
  down.on("error", end);
  ws.on("unexpected-response", (_req, res) => {
    // the Worker's refusal (a Status) goes to the client as the answer to its upgrade
    const lines = [`HTTP/1.1 ${res.statusCode} ${res.statusMessage ?? ""}`];
    for (let i = 0; i < res.rawHeaders.length; i += 2) {
      const name = res.rawHeaders[i].toLowerCase();
      if (name === "connection" || name === "transfer-encoding" || name === "keep-alive") continue;
      lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
    }
    const body: Buffer[] = [];
    res.on("data", (b: Buffer) => body.push(b));
    res.on("end", () => {
      const payload = Buffer.concat(body);
      const kept = lines.filter((l) => !/^content-length:/i.test(l));
      down.write(
        `${kept.join("\r\n")}\r\nContent-Length: ${payload.length}\r\nConnection: close\r\n\r\n`,
        "latin1",
      );
      down.write(payload);
      end();
    });
    res.on("error", end);
  });
  ws.on("open", () => {
    open = true;
    down.write(
      "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n" +
        `X-Stream-Protocol-Version: ${upgrade.streamProtocol}\r\n\r\n`,
      "latin1",
    );
    for (const chunk of pending.splice(0)) toWorker(chunk);
  });
  ws.on("message", (data: Buffer) => {
    if (!down.write(data)) {
      ws.pause();
      down.once("drain", () => ws.resume());
    }
  });
  ws.on("close", end);
  ws.on("error", end);
}
