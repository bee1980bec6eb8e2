// HTTP/2 at the front door. client-go and kubectl speak HTTP/2 to an apiserver whenever TLS
// lets them choose it (ALPN "h2"), and then carry all of a process's requests and watches
// on one connection; kube-apiserver allows 1,000 streams on one. The front door offers "h2"
// on its TLS side and takes HTTP/2 with prior knowledge on its plain side, and sends each
// stream to workerd as an HTTP/1.1 request over kept-alive connections. Ordinary requests
// wait for their turn in the same fair queue as HTTP/1.1 ones (fair-queue.ts); watches go
// with the relay's offer, and a relayed watch's events are written to its stream by the
// relay (watch-relay.ts), so a thousand watches on one connection cost one socket write per event.
import http from "node:http";
import http2 from "node:http2";
import type net from "node:net";
import { FRONT_ONLY_HEADERS } from "../api/wire/client-cert";
import { PRIORITY_ASK_HEADER, PRIORITY_LEVEL_HEADER } from "../api/wire/priority";
import type { ClientIdentity } from "./client-cert";
import { underCluster } from "./cluster-connections";
import {
  type AdmissionQueue,
  type CredentialLevels,
  classify,
  longRunning,
  type RequestHead,
} from "./fair-queue";
import type { Availability } from "./front-door";
import { type Guard, MAX_HEAD_BYTES, statusOnStream } from "./guard";
import {
  HOP_BY_HOP,
  type RelayWatch,
  type RequestTarget,
  responseHeaders,
  type WatchRelay,
  watchedResource,
} from "./watch-relay";

/** the streams one client may have open at once, as kube-apiserver allows */
const MAX_STREAMS = 1000;
const UPLOAD_WINDOW = 1 << 20;
const SESSION_MEMORY_MB = 256;
/** Request bytes kept for a resend: a body over the apiserver's 3 MiB limit is not resent. */
export const RESEND_LIMIT = 4 << 20;
/**
 * request headers that belong to one connection, or that HTTP/1.1 spells differently, and
 * those only the front door may send (a client's are dropped; see client-cert.ts)
 */
const NOT_FORWARDED = new Set([...HOP_BY_HOP, "te", "host", ...FRONT_ONLY_HEADERS]);

/**
 * The headers to send on as HTTP/1.1, as a flat [name, value, ...] list (the client's raw
 * headers, so a header sent twice, as impersonate-group may be, stays two), with the
 * :authority as Host (or a Host header, which HTTP/2 allows in its place).
 */
function forwardedHeaders(headers: http2.IncomingHttpHeaders, raw: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2)
    if (raw[i][0] !== ":" && !NOT_FORWARDED.has(raw[i].toLowerCase())) out.push(raw[i], raw[i + 1]);
  out.push("host", headers[":authority"] ?? headers.host ?? "localhost");
  return out;
}

/** What an HTTP/2 request's headers say, in the shape fair-queue.ts's requestHead gives. */
function headOf(
  headers: http2.IncomingHttpHeaders,
  forwarded: string[],
  clusterPath: string | undefined,
): RequestHead {
  const lines: string[] = [];
  for (let i = 0; i < forwarded.length; i += 2) lines.push(`${forwarded[i]}: ${forwarded[i + 1]}`);
  return {
    method: headers[":method"]!, // nghttp2 resets a request stream without one
    target: underCluster(headers[":path"] ?? "/", clusterPath),
    version: "1.1",
    headers: lines.join("\n").toLowerCase(),
    rawHeaders: "",
  };
}

/** A metav1.Status answer from the front door itself, when workerd could not be reached. */
function unavailable(stream: http2.ServerHttp2Stream) {
  statusOnStream(stream, 503, "ServiceUnavailable", "the control plane did not answer");
}

/** The size of a request's head as HTTP/1.1 would spell it (each header "name: value\r\n"). */
function headSize(raw: string[]): number {
  let n = 0;
  for (let i = 0; i < raw.length; i++) n += raw[i].length + 2;
  return n;
}

export interface H2DoorOptions {
  target: RequestTarget;
  queue: AdmissionQueue;
  relay: WatchRelay | undefined;
  idleCloseMs: number;
  /** credentials the Worker named a level for, and the secret to ask it with */
  levels: CredentialLevels;
  frontSecret: string | undefined;
  available: Availability;
}

/** The credential of a request whose answer may say something of it, and whether it asked for its level. */
interface Credential {
  value: string;
  asked: boolean;
}

/** An HTTP/2 watch: a relay's watch written to an HTTP/2 stream. */
type H2Watch = RelayWatch<http2.ServerHttp2Stream>;

export interface H2Door {
  /**
   * Serves an HTTP/2 connection on `socket`, whose standing `guard` keeps (guard.ts), and whose
   * client certificate says `identity` (client-cert.ts).
   */
  accept(socket: net.Socket, guard: Guard, identity?: ClientIdentity, clusterPath?: string): void;
  close(): void;
}

/** What a session carries besides its streams: its connection's guard and its open streams. */
const GUARD = Symbol("guard");
type GuardedSession = http2.ServerHttp2Session & {
  /** clusterPath: a pod's connection through its node's relay (cluster-connections.ts) */
  [GUARD]?: { guard: Guard; open: number; identity?: ClientIdentity; clusterPath?: string };
};

/**
 * The HTTP/2 side of one front door: accept(socket) serves a connection (a TLS socket that
 * chose "h2", or a plain one that began with the HTTP/2 preface). `target` (where workerd
 * listens, as node:http request options), `queue`, `relay` and `idleCloseMs` are the front
 * door's (front-door.ts).
 */
export function h2Door({
  target,
  queue,
  relay,
  idleCloseMs,
  levels,
  frontSecret,
  available,
}: H2DoorOptions): H2Door {
  // free connections are dropped before workerd's own idle close could meet a request
  const agent = new http.Agent({ keepAlive: true, timeout: idleCloseMs, scheduling: "lifo" });
  const server = http2.createServer({
    settings: { maxConcurrentStreams: MAX_STREAMS, initialWindowSize: UPLOAD_WINDOW },
    // events queued for a connection's watches count here; past it, new streams are refused
    // (a watch's own backlog is bounded by the relay, 64 MiB); Node's default is 10 MB
    maxSessionMemory: SESSION_MEMORY_MB,
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s) => {
    // what a client may send before it waits for a window update, as Go's HTTP/2 server
    // (kube-apiserver's) allows (Node's default for a connection is 64 KiB)
    s.setLocalWindowSize(UPLOAD_WINDOW);
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
    s.on("error", () => s.destroy());
  });
  // (Node passes the raw headers fourth; @types/node 20 does not declare them)
  server.on(
    "stream",
    (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, _flags: number, raw: string[]) =>
      serve(stream, headers, raw),
  );

  function serve(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, raw: string[]) {
    stream.on("error", () => stream.destroy());
    const guarded = (stream.session as GuardedSession)[GUARD];
    if (guarded) {
      // a session's deadline runs until its first request; its guard keeps it while streams are open
      guarded.guard.headDone();
      if (guarded.open++ === 0) guarded.guard.busy(true);
      stream.on("close", () => {
        if (--guarded.open === 0) guarded.guard.busy(false);
      });
    }
    const method = headers[":method"];
    if (method === "CONNECT") {
      // no extended CONNECT (RFC 8441): exec and port-forward go over HTTP/1.1 upgrades
      stream.respond({ ":status": 405 });
      return void stream.end();
    }
    if (headSize(raw) > MAX_HEAD_BYTES)
      return statusOnStream(
        stream,
        431,
        "RequestHeaderFieldsTooLarge",
        `Request Header Fields Too Large: the request's headers are over ${MAX_HEAD_BYTES} bytes`,
      );
    if (!available.up) return statusOnStream(stream, 503, "ServiceUnavailable", available.message, 1);
    const forwarded = forwardedHeaders(headers, raw);
    const identity = guarded?.identity;
    if (identity) forwarded.push(...identity.headers);
    const head = headOf(headers, forwarded, guarded?.clusterPath);
    const authorization = headers.authorization ?? identity?.credential;
    // a known credential: the connection is no longer bounded as an anonymous one
    if (authorization !== undefined && levels.get(authorization)) guarded?.guard.trust();
    const resource = relay && watchedResource(head);
    if (resource) return watch(stream, head, forwarded, resource);
    if (longRunning(head)) return send(stream, head, forwarded, () => {});
    const source = guarded?.guard.source ?? "unknown";
    const { level, flow, ask, cluster } = classify(head.target, authorization, source, levels);
    let credential: Credential | undefined;
    if (authorization !== undefined) {
      credential = { value: authorization, asked: ask && frontSecret !== undefined };
      if (credential.asked) forwarded.push(PRIORITY_ASK_HEADER, frontSecret!);
    }
    const leave = queue.enter(
      (release) => send(stream, head, forwarded, release, undefined, credential),
      flow,
      level,
      cluster,
    );
    stream.on("close", leave);
  }

  /** What an answer says of its request's credential: a 401 forgets it, a named level is learned. */
  function learn(res: http.IncomingMessage, stream: http2.ServerHttp2Stream, credential: Credential) {
    if (res.statusCode === 401) return levels.forget(credential.value);
    const level = credential.asked ? res.headers[PRIORITY_LEVEL_HEADER] : undefined;
    if (typeof level !== "string") return;
    levels.learn(credential.value, level);
    (stream.session as GuardedSession | undefined)?.[GUARD]?.guard.trust();
  }

  /** A watch a relay may carry: offered to it, sent once its resource's first watch settled. */
  function watch(stream: http2.ServerHttp2Stream, head: RequestHead, forwarded: string[], resource: string) {
    const { watch: w, name, value } = relay!.begin(stream, () => {}, resource, true);
    stream.on("close", () => relay!.left(w));
    relay!.whenReady(w, () => {
      if (!stream.closed) send(stream, head, [...forwarded, name, value], () => {}, w);
    });
  }

  /**
   * Sends the request on `stream` to workerd and its answer back; `done` when it is over.
   * A request that meets a kept-alive connection just closed by workerd is sent again once.
   */
  function send(
    stream: http2.ServerHttp2Stream,
    head: RequestHead,
    headers: string[],
    done: () => void,
    w?: H2Watch,
    credential?: Credential,
  ) {
    const body: Buffer[] = [];
    let bodyBytes = 0;
    let ended = false;
    /** (node:http sets `res` once the answer came; @types/node does not declare it) */
    let req: http.ClientRequest & { res?: http.IncomingMessage | null };
    let retried = false;
    const finish = () => {
      done();
      done = () => {};
    };
    const go = () => {
      req = http.request({ ...target, agent, method: head.method, path: head.target, headers });
      req.on("response", (res) => {
        if (credential) learn(res, stream, credential);
        answer(stream, res, finish, w);
      });
      req.on("error", (err: NodeJS.ErrnoException) => {
        // once answered (a 413 before the whole body was read), the answer goes on as it is
        if (req.res) return;
        const resend = !retried && req.reusedSocket && err.code === "ECONNRESET" && bodyBytes <= RESEND_LIMIT;
        if (resend && !stream.closed) {
          retried = true;
          go();
          for (const c of body) req.write(c);
          if (ended) req.end();
          return;
        }
        finish();
        unavailable(stream);
      });
    };
    go();
    stream.on("data", (c: Buffer) => {
      bodyBytes += c.length;
      if (bodyBytes <= RESEND_LIMIT) body.push(c);
      else body.length = 0;
      if (!req.write(c)) {
        stream.pause();
        req.once("drain", () => stream.resume());
      }
    });
    stream.on("end", () => {
      ended = true;
      req.end();
    });
    stream.on("close", () => {
      finish();
      if (!req.writableFinished || !req.res?.complete) req.destroy();
    });
  }

  /** workerd's answer on `stream`; a watch's answer may say that the relay carries it. */
  function answer(
    stream: http2.ServerHttp2Stream,
    res: http.IncomingMessage,
    finish: () => void,
    w?: H2Watch,
  ) {
    if (stream.closed) return void res.destroy();
    if (w && relay!.answerHeaders(w, res)) {
      res.resume(); // an empty body: the events come on the relay
      return finish();
    }
    stream.respond({ ...responseHeaders(res.headers), ":status": res.statusCode });
    res.pipe(stream);
    res.on("end", finish);
    res.on("error", () => stream.destroy());
  }

  return {
    accept(socket, guard, identity, clusterPath) {
      guard.expired = () => socket.destroy();
      const setGuard = (s: GuardedSession) => {
        s[GUARD] = { guard, open: 0, identity, clusterPath };
      };
      server.once("session", setGuard);
      server.emit("connection", socket);
      // the session is made as the connection is taken; were it not, it has no guard
      server.off("session", setGuard);
    },
    close() {
      for (const s of sessions) s.destroy();
      agent.destroy();
    },
  };
}
