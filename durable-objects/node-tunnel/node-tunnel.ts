// NodeTunnel: one Durable Object per node (named "<cluster>/<node>"). It holds the node agent's
// outbound WebSocket and multiplexes the apiserver's streaming requests over it (frames.ts).
//
//   GET  https://node-tunnel/agent  (Upgrade: websocket)  the agent connects; a newer
//        connection replaces an older one.
//   GET  https://node-tunnel/open   header x-edgeplane-open: JSON OpenRequest. Logs answer a
//        streaming text/plain response; exec/attach/portforward must carry Upgrade: websocket
//        and are answered 101 with the client's own WebSocket bridged to the agent.
//        Failures answer a metav1.Status JSON.
//   POST https://node-tunnel/open   body: JSON HttpRequest (kind "http", too big for a header):
//        answered with the extension server's status, headers and streamed body.
//
// All WebSockets use the Hibernatable WebSocket API: the agent's is tagged "agent", a client's
// "s:<stream id>", so routing survives hibernation. Log streams live only while their response
// is being read (which keeps the object awake).
import { DurableObject } from "cloudflare:workers";
import { statusJSON } from "../../api/status-json";
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
  type HttpResponseHead,
  jsonFrame,
  noTunnelMessage,
  OPEN_HEADER,
  type OpenReply,
  type OpenRequest,
  PING,
  PONG,
  payloadJson,
  type WireStatus,
} from "../../api/wire/node-tunnel";
import { objectEnv } from "../clusters";
import type { Env } from "../env";

const AGENT_TAG = "agent";
const REPLY_TIMEOUT_MS = 30_000;

const streamTag = (id: number) => `s:${id}`;

function statusResponse(s: WireStatus): Response {
  return new Response(statusJSON(s), {
    status: s.code,
    headers: { "content-type": "application/json" },
  });
}

function toBytes(message: string | ArrayBuffer): Uint8Array {
  return typeof message === "string" ? new TextEncoder().encode(message) : new Uint8Array(message);
}

export class NodeTunnel extends DurableObject<Env> {
  /** OPENs waiting for the agent's REPLY */
  private readonly pending = new Map<number, (reply: OpenReply) => void>();
  /** log and HTTP response streams being read */
  private readonly logs = new Map<number, WritableStreamDefaultWriter<Uint8Array>>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.env = objectEnv(ctx, env);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(PING, PONG));
  }

  override async fetch(req: Request): Promise<Response> {
    const url = new URL(req.url);
    if (url.pathname === "/agent") return this.acceptAgent(req);
    if (url.pathname === "/open") {
      let open: OpenRequest;
      try {
        const header = req.headers.get(OPEN_HEADER);
        open = JSON.parse(header ?? (req.method === "POST" ? await req.text() : ""));
      } catch {
        return statusResponse(failure(400, "BadRequest", "malformed tunnel open request"));
      }
      return this.open(open, req.headers.get("upgrade")?.toLowerCase() === "websocket");
    }
    return statusResponse(failure(404, "NotFound", "the server could not find the requested resource"));
  }

  /**
   * Its cluster was deleted (workers/clusters/teardown.ts): the agent is told to leave (it
   * exits), and the object forgets everything and is reset.
   */
  async destroy(): Promise<void> {
    this.dropAgent(CLUSTER_DELETED_REASON);
    for (const ws of this.ctx.getWebSockets()) {
      try {
        ws.close(CLOSE_CLUSTER_DELETED, CLUSTER_DELETED_REASON);
      } catch {
        // already closed
      }
    }
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.ctx.abort(CLUSTER_DELETED_REASON);
  }

  /** Whether an agent is connected (for diagnostics and tests). */
  connected(): boolean {
    return this.ctx.getWebSockets(AGENT_TAG).length > 0;
  }

  private acceptAgent(req: Request): Response {
    if (req.headers.get("upgrade")?.toLowerCase() !== "websocket")
      return statusResponse(failure(400, "BadRequest", "the node tunnel needs a WebSocket upgrade"));
    for (const old of this.ctx.getWebSockets(AGENT_TAG)) {
      this.dropAgent("node agent reconnected");
      try {
        old.close(1012, "replaced by a newer connection");
      } catch {
        // already closed
      }
    }
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1], [AGENT_TAG]);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  private agent(): WebSocket | undefined {
    return this.ctx.getWebSockets(AGENT_TAG)[0];
  }

  private newStreamId(): number {
    for (;;) {
      const id = crypto.getRandomValues(new Uint32Array(1))[0];
      if (id === 0 || this.pending.has(id) || this.logs.has(id)) continue;
      if (this.ctx.getWebSockets(streamTag(id)).length) continue;
      return id;
    }
  }

  private async open(open: OpenRequest, upgrade: boolean): Promise<Response> {
    const agent = this.agent();
    if (!agent) {
      const node =
        decodeURIComponent(this.ctx.id.name ?? "")
          .split("/")
          .pop() || "node";
      return statusResponse(failure(503, "ServiceUnavailable", noTunnelMessage(node)));
    }
    if (open.kind !== "logs" && open.kind !== "http" && !upgrade)
      return statusResponse(failure(400, "BadRequest", "Upgrade request required"));
    const id = this.newStreamId();
    const reply = await new Promise<OpenReply>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve({ ok: false, status: failure(504, "Timeout", "the node did not answer the stream request") });
      }, REPLY_TIMEOUT_MS);
      this.pending.set(id, (r) => {
        clearTimeout(timer);
        this.pending.delete(id);
        resolve(r);
      });
      try {
        agent.send(jsonFrame(FRAME_OPEN, id, open));
      } catch {
        this.pending.get(id)?.({ ok: false, status: failure(503, "ServiceUnavailable", "node tunnel lost") });
      }
    });
    if (!reply.ok) return statusResponse(reply.status);
    if (open.kind === "logs") return this.logResponse(id);
    if (open.kind === "http") return this.httpResponse(id, reply.response);
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1], [streamTag(id)]);
    pair[1].serializeAttachment({ stream: id });
    return new Response(null, {
      status: 101,
      webSocket: pair[0],
      headers: { "sec-websocket-protocol": open.protocol },
    });
  }

  /** An HTTP stream's response: the head from the agent's REPLY, the body from its DATA frames. */
  private httpResponse(id: number, head: HttpResponseHead | undefined): Response {
    const headers = new Headers();
    for (const [k, v] of head?.headers ?? []) {
      // the body is re-framed here: the extension server's framing does not carry over
      if (/^(transfer-encoding|connection|keep-alive|content-length)$/i.test(k)) continue;
      headers.append(k, v);
    }
    const status = head?.status ?? 502;
    if (status === 204 || status === 304) {
      this.sendAgent(encodeFrame(FRAME_CLOSE, id));
      return new Response(null, { status, headers });
    }
    return new Response(this.bodyStream(id), { status, headers });
  }

  private logResponse(id: number): Response {
    return new Response(this.bodyStream(id), {
      status: 200,
      headers: {
        "content-type": "text/plain",
        "transfer-encoding": "chunked",
        "cache-control": "no-cache, private",
        // a compressed stream would sit in the compressor's buffer: followed lines must go out now
        "content-encoding": "identity",
      },
    });
  }

  /** A body fed by the stream's DATA frames until its CLOSE; the reader leaving closes it. */
  private bodyStream(id: number): ReadableStream<Uint8Array> {
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>(undefined, undefined, {
      highWaterMark: 1 << 20,
      size: (chunk) => chunk.byteLength,
    });
    const writer = writable.getWriter();
    this.logs.set(id, writer);
    // the reader went away (client disconnected): stop the agent's side
    writer.closed.catch(() => {
      if (this.logs.delete(id)) this.sendAgent(encodeFrame(FRAME_CLOSE, id));
    });
    return readable;
  }

  private sendAgent(frame: Uint8Array): void {
    try {
      this.agent()?.send(frame);
    } catch {
      // the agent is gone; its close handler cleans up
    }
  }

  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void {
    const tags = this.ctx.getTags(ws);
    if (tags.includes(AGENT_TAG)) {
      this.fromAgent(message);
      return;
    }
    const id = (ws.deserializeAttachment() as { stream?: number } | null)?.stream;
    if (id) this.sendAgent(encodeFrame(FRAME_DATA, id, toBytes(message)));
  }

  private fromAgent(message: string | ArrayBuffer): void {
    if (typeof message === "string") return; // keepalive text
    const f = decodeFrame(message);
    if (!f) return;
    switch (f.type) {
      case FRAME_REPLY: {
        const resolve = this.pending.get(f.stream);
        const reply = payloadJson<OpenReply>(f) ?? {
          ok: false,
          status: failure(500, "InternalError", "malformed reply from node"),
        };
        if (resolve) resolve(reply);
        else this.sendAgent(encodeFrame(FRAME_CLOSE, f.stream));
        return;
      }
      case FRAME_DATA: {
        const log = this.logs.get(f.stream);
        if (log) {
          log.write(f.payload.slice()).catch(() => {});
          return;
        }
        const client = this.ctx.getWebSockets(streamTag(f.stream))[0];
        if (client) {
          try {
            client.send(f.payload);
          } catch {
            this.sendAgent(encodeFrame(FRAME_CLOSE, f.stream));
          }
        } else if (!this.pending.has(f.stream)) {
          this.sendAgent(encodeFrame(FRAME_CLOSE, f.stream));
        }
        return;
      }
      case FRAME_CLOSE: {
        const log = this.logs.get(f.stream);
        if (log) {
          this.logs.delete(f.stream);
          log.close().catch(() => {});
          return;
        }
        const err = payloadJson<{ error?: string }>(f)?.error;
        for (const client of this.ctx.getWebSockets(streamTag(f.stream))) closeQuietly(client, err);
        return;
      }
    }
  }

  override webSocketClose(ws: WebSocket, code: number, reason: string): void {
    this.socketGone(ws);
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // already closed
    }
  }

  override webSocketError(ws: WebSocket): void {
    this.socketGone(ws);
  }

  private socketGone(ws: WebSocket): void {
    if (this.ctx.getTags(ws).includes(AGENT_TAG)) {
      // only when it is the current agent: a replaced one was cleaned up already
      if (this.ctx.getWebSockets(AGENT_TAG).every((a) => a === ws)) this.dropAgent("node tunnel lost");
      return;
    }
    const id = (ws.deserializeAttachment() as { stream?: number } | null)?.stream;
    if (id) this.sendAgent(encodeFrame(FRAME_CLOSE, id));
  }

  /** The agent is gone: every stream through it ends. */
  private dropAgent(why: string): void {
    for (const resolve of [...this.pending.values()])
      resolve({ ok: false, status: failure(503, "ServiceUnavailable", why) });
    for (const [id, log] of this.logs) {
      this.logs.delete(id);
      log.close().catch(() => {});
    }
    for (const ws of this.ctx.getWebSockets()) {
      if (!this.ctx.getTags(ws).includes(AGENT_TAG)) closeQuietly(ws, why);
    }
  }
}

function closeQuietly(ws: WebSocket, error?: string): void {
  try {
    if (error) ws.close(1011, error.slice(0, 120));
    else ws.close(1000, "");
  } catch {
    // already closed
  }
}
