// The node tunnel's wire protocol, shared by the NodeTunnel Durable Object and the node agent.
//
// One WebSocket per node, dialled OUT by the agent (GET /edgeplane/tunnel/<node>, upgraded,
// with the node's bearer token). Many streams are multiplexed over it. Every message is a
// binary WebSocket message laid out as
//
//   byte 0      frame type
//   bytes 1..4  stream id, uint32 big-endian (chosen by the Durable Object; never 0)
//   bytes 5..   payload
//
// Frame types:
//   OPEN  (1)  DO -> agent. Payload: UTF-8 JSON OpenRequest (what to stream, for which container,
//              or which HTTP request to make to an address on the node's pod network).
//   REPLY (2)  agent -> DO, exactly once per OPEN, before any DATA. Payload: UTF-8 JSON
//              OpenReply: {ok:true} or {ok:false, status: metav1.Status}; for an HTTP stream
//              {ok:true, response: {status, headers}} once the response's head arrived. The DO
//              answers the apiserver request with that Status, or starts the stream.
//   DATA  (3)  both ways. Payload: bytes. For logs and HTTP: the response body (agent -> DO
//              only; an HTTP request's body travels in its OPEN). For exec/attach
//              and port-forward: exactly one message of the client's own WebSocket (v5/v4
//              channel frames, or the raw SPDY byte stream of SPDY/3.1+portforward.k8s.io); the DO
//              does not look inside, the agent speaks the client's subprotocol.
//   CLOSE (4)  both ways: the stream is over; the receiver forgets it. Payload: empty, or
//              UTF-8 JSON {error: string} for a failure after REPLY.
//
// Besides frames, the agent sends the text message "ping" every 20 s; the DO's WebSocket
// auto-response answers "pong" without waking a hibernated object.

/** The header carrying the OpenRequest JSON from the Worker to the NodeTunnel object. */
export const OPEN_HEADER = "x-edgeplane-open";

export const FRAME_OPEN = 1;
export const FRAME_REPLY = 2;
export const FRAME_DATA = 3;
export const FRAME_CLOSE = 4;

export type FrameType = typeof FRAME_OPEN | typeof FRAME_REPLY | typeof FRAME_DATA | typeof FRAME_CLOSE;

export const PING = "ping";
export const PONG = "pong";

export interface Frame {
  type: FrameType;
  stream: number;
  payload: Uint8Array;
}

/** What the apiserver asks a node for. */
export type OpenRequest = LogsRequest | ExecRequest | AttachRequest | PortForwardRequest | HttpRequest;

export interface ContainerRef {
  namespace: string;
  pod: string;
  container: string;
}

export interface LogsRequest extends ContainerRef {
  kind: "logs";
  follow?: boolean;
  previous?: boolean;
  timestamps?: boolean;
  tailLines?: number;
  sinceSeconds?: number;
  /** RFC 3339 time; sinceSeconds wins if both are set */
  sinceTime?: string;
  limitBytes?: number;
}

export interface ExecRequest extends ContainerRef {
  kind: "exec";
  command: string[];
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
  /** the client's WebSocket subprotocol: v5.channel.k8s.io or v4.channel.k8s.io */
  protocol: string;
}

export interface AttachRequest extends ContainerRef {
  kind: "attach";
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
  protocol: string;
}

export interface PortForwardRequest {
  kind: "portforward";
  namespace: string;
  pod: string;
  /** ports named in the request (?ports=), possibly empty: SPDY streams name their own */
  ports: number[];
  /** the client's WebSocket subprotocol: SPDY/3.1+portforward.k8s.io or v4.channel.k8s.io */
  protocol: string;
}

/**
 * One HTTP(S) request the agent makes to an address it reaches (a pod's IP and port): the
 * aggregator's proxy to an extension API server on the node, behind NAT or not.
 */
export interface HttpRequest {
  kind: "http";
  /** the endpoint: an IP (or host name) and port */
  host: string;
  port: number;
  method: string;
  /** path and query, as sent */
  path: string;
  /** request headers in order; a name may repeat */
  headers: [string, string][];
  /** the request body, base64 */
  body?: string;
  /** HTTPS (always, for the aggregator) and how the server's certificate is checked */
  tls?: {
    /** the name the certificate must be valid for (upstream: <service>.<namespace>.svc) */
    serverName: string;
    /** PEM bundle the certificate must chain to; absent: the node's system roots */
    ca?: string;
    insecureSkipTLSVerify?: boolean;
  };
  /** give up waiting for the response's head after this long */
  timeoutMs?: number;
}

/** The head of an HTTP stream's response, carried in its REPLY. */
export interface HttpResponseHead {
  status: number;
  headers: [string, string][];
}

/** What an HTTP request that cannot reach its endpoint is answered with (upstream's words, 503). */
export const reachFailure = (detail: string): WireStatus =>
  failure(503, "ServiceUnavailable", `error trying to reach service: ${detail}`);

/** A metav1.Status as JSON (kept loose so the agent needs no apiserver types). */
export interface WireStatus {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Failure" | "Success";
  message?: string;
  reason?: string;
  code: number;
  details?: Record<string, unknown>;
}

export type OpenReply = { ok: true; response?: HttpResponseHead } | { ok: false; status: WireStatus };

export function encodeFrame(type: FrameType, stream: number, payload?: Uint8Array | string): Uint8Array {
  const body =
    typeof payload === "string" ? new TextEncoder().encode(payload) : (payload ?? new Uint8Array());
  const out = new Uint8Array(5 + body.length);
  out[0] = type;
  new DataView(out.buffer).setUint32(1, stream >>> 0, false);
  out.set(body, 5);
  return out;
}

/** Parses one message; undefined for anything that is not a well-formed frame. */
export function decodeFrame(message: ArrayBuffer | Uint8Array): Frame | undefined {
  const bytes = message instanceof Uint8Array ? message : new Uint8Array(message);
  if (bytes.length < 5) return undefined;
  const type = bytes[0];
  if (type < FRAME_OPEN || type > FRAME_CLOSE) return undefined;
  const stream = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(1, false);
  if (stream === 0) return undefined;
  return { type: type as FrameType, stream, payload: bytes.subarray(5) };
}

export function jsonFrame(type: FrameType, stream: number, value: unknown): Uint8Array {
  return encodeFrame(type, stream, JSON.stringify(value));
}

export function payloadJson<T>(f: Frame): T | undefined {
  if (!f.payload.length) return undefined;
  try {
    return JSON.parse(new TextDecoder().decode(f.payload)) as T;
  } catch {
    return undefined;
  }
}

export function failure(code: number, reason: string, message: string): WireStatus {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code };
}

/** What a stream to a node without its agent's tunnel is refused with (503). */
export function noTunnelMessage(node: string): string {
  return `node "${node}" has no tunnel connected (is its agent running?)`;
}

/**
 * The WebSocket close code with which a node's tunnel tells its agent to leave: the cluster
 * it joined was deleted (docs/clusters.md). The agent stops and exits; it does not reconnect.
 */
export const CLOSE_CLUSTER_DELETED = 4404;
export const CLUSTER_DELETED_REASON = "the cluster this node joined was deleted";
