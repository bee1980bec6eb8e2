// The node agent's tunnel: one outbound WebSocket to the apiserver (GET
// /edgeplane/tunnel/<node>, bearer token), over which the node's NodeTunnel Durable Object
// opens streams for kubectl logs/exec/attach/port-forward and the aggregator's HTTP requests.
// The frame protocol is documented in api/wire/node-tunnel.ts. Reconnects with backoff;
// streams of a lost connection end.
import WebSocket from "ws";
import {
  CLOSE_CLUSTER_DELETED,
  CLUSTER_DELETED_REASON,
  decodeFrame,
  encodeFrame,
  FRAME_CLOSE,
  FRAME_DATA,
  FRAME_OPEN,
  FRAME_REPLY,
  failure,
  jsonFrame,
  type OpenReply,
  type OpenRequest,
  PING,
  payloadJson,
} from "../../api/wire/node-tunnel";
import type { CriClient } from "../cri/client";
import { clusterGone } from "../lib/cluster-gone";
import {
  OpenError,
  openAttach,
  openExec,
  openLogs,
  openPortForward,
  type StreamHandler,
  type StreamIO,
  type TunnelLookup,
} from "./handlers";
import { openHttp } from "./http-stream";

export type { TunnelLookup } from "./handlers";

export interface TunnelOptions {
  /** the apiserver's base URL, http(s)://host:port */
  server: string;
  /** the node's bearer token, or a function giving the current one (rotation); none with a certificate */
  token?: string | (() => string | undefined);
  /** a client certificate and its key (PEM), or a function giving the current ones (rotation) */
  clientCertificate?: () => { cert?: string; key?: string };
  nodeName: string;
  lookup: TunnelLookup;
  cri: CriClient;
  /** TLS: CA bundle (PEM) and whether to skip verification */
  ca?: string;
  insecure?: boolean;
  log?: (msg: string) => void;
}

export interface Tunnel {
  /** resolves when the tunnel is connected (the first time, or again after a loss) */
  connected(): Promise<void>;
  readonly isConnected: boolean;
  stop(): Promise<void>;
}

export const TUNNEL_PATH = "/edgeplane/tunnel/";
const PING_MS = 20_000;
const MAX_BACKOFF_MS = 10_000;

interface StreamState {
  handler?: StreamHandler;
  replied: boolean;
  queue: Uint8Array[];
  abort: AbortController;
  closed: boolean;
}

export function tunnelUrl(server: string, nodeName: string): string {
  const u = new URL(server);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  u.pathname = `${u.pathname.replace(/\/$/, "")}${TUNNEL_PATH}${encodeURIComponent(nodeName)}`;
  return u.toString();
}

export function startTunnel(opts: TunnelOptions): Tunnel {
  const log = opts.log ?? ((m: string) => console.error(`tunnel: ${m}`));
  const token = () => (typeof opts.token === "function" ? opts.token() : opts.token);
  let stopped = false;
  let ws: WebSocket | undefined;
  let isConnected = false;
  let waiters: (() => void)[] = [];
  let retryTimer: NodeJS.Timeout | undefined;
  let delay = 250;
  const streams = new Map<number, StreamState>();

  const sendRaw = (sock: WebSocket, frame: Uint8Array) => {
    if (sock.readyState === WebSocket.OPEN) sock.send(frame);
  };

  const endAll = () => {
    for (const [id, s] of streams) {
      streams.delete(id);
      s.closed = true;
      s.abort.abort();
      s.handler?.end();
    }
  };

  const open = async (sock: WebSocket, id: number, req: OpenRequest | undefined) => {
    const state: StreamState = { replied: false, queue: [], abort: new AbortController(), closed: false };
    streams.set(id, state);
    const io: StreamIO = {
      signal: state.abort.signal,
      send(data) {
        if (state.closed) return;
        const f = encodeFrame(FRAME_DATA, id, data);
        if (state.replied) sendRaw(sock, f);
        else state.queue.push(f);
      },
      close(error) {
        if (state.closed) return;
        state.closed = true;
        const finish = () => {
          streams.delete(id);
          sendRaw(sock, error ? jsonFrame(FRAME_CLOSE, id, { error }) : encodeFrame(FRAME_CLOSE, id));
        };
        if (state.replied) finish();
        else state.queue.push(new Uint8Array()); // marker: finish after the reply
      },
    };
    let reply: OpenReply = { ok: true };
    let start: (() => void) | undefined;
    try {
      if (!req) throw new OpenError(failure(400, "BadRequest", "malformed stream request"));
      switch (req.kind) {
        case "logs":
          start = await openLogs(req, opts.lookup, opts.cri, io);
          break;
        case "exec":
          state.handler = await openExec(req, opts.lookup, opts.cri, io);
          break;
        case "attach":
          state.handler = await openAttach(req, opts.lookup, opts.cri, io);
          break;
        case "portforward":
          state.handler = await openPortForward(req, opts.lookup, opts.cri, io);
          break;
        case "http": {
          const r = await openHttp(req, io);
          start = r.start;
          reply = { ok: true, response: r.response };
          break;
        }
        default:
          throw new OpenError(
            failure(400, "BadRequest", `unknown stream kind ${(req as { kind: string }).kind}`),
          );
      }
    } catch (e) {
      const status =
        e instanceof OpenError ? e.status : failure(500, "InternalError", String((e as Error)?.message ?? e));
      reply = { ok: false, status };
    }
    sendRaw(sock, jsonFrame(FRAME_REPLY, id, reply));
    if (!reply.ok) {
      streams.delete(id);
      state.abort.abort();
      return;
    }
    state.replied = true;
    for (const f of state.queue) {
      if (f.length) sendRaw(sock, f);
      else {
        streams.delete(id);
        sendRaw(sock, encodeFrame(FRAME_CLOSE, id));
      }
    }
    state.queue = [];
    start?.();
  };

  const onMessage = (sock: WebSocket, data: Buffer, isBinary: boolean) => {
    if (!isBinary) return; // "pong"
    const f = decodeFrame(data);
    if (!f) return;
    switch (f.type) {
      case FRAME_OPEN:
        void open(sock, f.stream, payloadJson<OpenRequest>(f));
        return;
      case FRAME_DATA:
        streams.get(f.stream)?.handler?.data(Buffer.from(f.payload));
        return;
      case FRAME_CLOSE: {
        const s = streams.get(f.stream);
        if (!s) return;
        streams.delete(f.stream);
        s.closed = true;
        s.abort.abort();
        s.handler?.end();
        return;
      }
    }
  };

  const connect = () => {
    if (stopped) return;
    const sock = new WebSocket(tunnelUrl(opts.server, opts.nodeName), {
      headers: token() ? { authorization: `Bearer ${token()}` } : {},
      ca: opts.ca,
      ...opts.clientCertificate?.(),
      rejectUnauthorized: !opts.insecure,
      perMessageDeflate: false,
    });
    ws = sock;
    let pinger: NodeJS.Timeout | undefined;
    sock.on("open", () => {
      isConnected = true;
      delay = 250;
      log(`connected to ${opts.server} as node ${opts.nodeName}`);
      for (const w of waiters) w();
      waiters = [];
      pinger = setInterval(() => sock.readyState === WebSocket.OPEN && sock.send(PING), PING_MS);
    });
    sock.on("message", (data: Buffer, isBinary) => onMessage(sock, data, isBinary));
    sock.on("unexpected-response", (_req, res) => {
      log(`tunnel refused: HTTP ${res.statusCode}`);
      sock.terminate();
    });
    sock.on("error", (e) => log(`tunnel error: ${e.message}`));
    sock.on("close", (code: number) => {
      clearInterval(pinger);
      // the cluster was deleted: the agent leaves (agent/lib/cluster-gone.ts), no reconnecting
      if (code === CLOSE_CLUSTER_DELETED) {
        stopped = true;
        clusterGone(CLUSTER_DELETED_REASON);
      }
      if (ws === sock) {
        isConnected = false;
        endAll();
        if (!stopped) {
          retryTimer = setTimeout(connect, delay);
          delay = Math.min(delay * 2, MAX_BACKOFF_MS);
        }
      }
    });
  };
  connect();

  return {
    connected: () => (isConnected ? Promise.resolve() : new Promise((r) => waiters.push(r))),
    get isConnected() {
      return isConnected;
    },
    async stop() {
      stopped = true;
      clearTimeout(retryTimer);
      endAll();
      const sock = ws;
      ws = undefined;
      if (sock && sock.readyState !== WebSocket.CLOSED) {
        await new Promise<void>((r) => {
          sock.once("close", () => r());
          sock.close();
          setTimeout(() => {
            sock.terminate();
            r();
          }, 1000).unref();
        });
      }
    },
  };
}
