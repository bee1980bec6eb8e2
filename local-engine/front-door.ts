// The local front door: one port that speaks HTTPS (for kubectl, which sends credentials
// only over TLS) and plain HTTP (for curl and scripts), told apart by the first byte of
// each connection. HTTP/1.1 is forwarded byte for byte to workerd (keeping a client's
// connection across workerd's idle close, see carry); HTTP/2 (chosen by ALPN over TLS, or
// with prior knowledge over plain HTTP) is served by front-door-h2.ts. On Cloudflare the edge
// does this job; locally this is the only thing between a client and workerd.
import net from "node:net";
import { Duplex } from "node:stream";
import tls from "node:tls";
import { PRIORITY_ASK_HEADER, PRIORITY_LEVEL_HEADER } from "../api/wire/priority";
import { type ClientIdentity, clientCertJudge, rewriteHead } from "./client-cert";
import { requestUnderCluster, takeClusterPreamble } from "./cluster-connections";
import {
  type AdmissionOptions,
  type AdmissionQueue,
  admissionQueue,
  CredentialLevels,
  classify,
  credentialOf,
  headEnd,
  type Leave,
  longRunning,
  requestHead,
} from "./fair-queue";
import { h2Door, RESEND_LIMIT } from "./front-door-h2";
import {
  connectionGuards,
  type Guard,
  type GuardOptions,
  type Guards,
  headerTimeout,
  headerTooLarge,
  MAX_HEAD_BYTES,
  statusAnswer,
} from "./guard";
import { carrySpdyUpgrade, spdyUpgradeOf } from "./spdy-upgrade";
import { type RelayWatch, type WatchRelay, watchedResource, watchRelay } from "./watch-relay";

export interface FrontDoorOptions {
  port: number;
  /** the address it listens on (127.0.0.1) */
  host?: string;
  /** workerd's TCP port on 127.0.0.1, used when there is no upstreamPath */
  upstreamPort: number;
  /** workerd's Unix socket */
  upstreamPath?: string;
  /** the serving certificate and key (PEM) of the TLS side */
  cert?: string;
  key?: string;
  /** workerd's idle close of a kept-alive connection, less a margin (IDLE_CLOSE_MS); for tests */
  idleCloseMs?: number;
  admission?: AdmissionOptions;
  /** the Worker's EDGEPLANE_RELAY_SECRET: watches are relayed (watch-relay.ts) when given */
  relaySecret?: string;
  /**
   * the Worker's EDGEPLANE_FRONT_SECRET: with it the front door asks the Worker to name the
   * priority level of each new credential (api/wire/priority.ts); without it every credential
   * waits as unverified
   */
  frontSecret?: string;
  /** the head deadline and the bounds on connections without a verified credential (guard.ts) */
  guards?: GuardOptions;
  /**
   * the client CA bundle (PEM): with it (and frontSecret) the TLS side asks for an optional
   * client certificate and reports it to the Worker (client-cert.ts)
   */
  clientCa?: string;
}

export interface FrontDoor {
  /** Stops listening and cuts every connection. */
  close(): Promise<void>;
  /**
   * Whether workerd can be reached. While it cannot (it is restarting), requests are answered
   * 503 at once, with `message`, instead of meeting a refused connection.
   */
  setAvailable(up: boolean, message?: string): void;
  /** what the front door holds: connections without a verified credential, the queue, credentials known */
  stats(): { untrusted: number; running: number; waiting: number; credentials: number };
}

/** Where carry connects to workerd: a Unix socket, or a TCP port. */
type Upstream = { path: string; port?: undefined } | { port: number; host: string };

/** Whether workerd can be reached, as the engine host last said (setAvailable). */
export interface Availability {
  up: boolean;
  message: string;
}

/** What carry shares with the rest of its front door. */
interface CarryOptions {
  upstream: Upstream;
  idleCloseMs: number;
  queue: AdmissionQueue;
  relay: WatchRelay | undefined;
  levels: CredentialLevels;
  /** the request header line that asks the Worker for a credential's level, when there is a secret */
  askLine: Buffer | undefined;
  guards: Guards;
  available: Availability;
}

/** Whether `chunk` may begin a request: a method's first letters (a body or a tunnel's bytes do not). */
const startsRequest = (chunk: Buffer) => chunk[0] >= 65 && chunk[0] <= 90;

/** The first response chunk's status is 401: the credential it answered no longer authenticates. */
const unauthorized = (chunk: Buffer) => chunk[9] === 52 && chunk[10] === 48 && chunk[11] === 49;

const LEVEL_LINE = new RegExp(`\r\n${PRIORITY_LEVEL_HEADER}: *([a-z-]+)`, "i");

/**
 * The client's byte stream again from its first chunk: TLS cannot wrap a socket that was
 * already read from, but it can wrap a JS stream that replays what was read.
 */
function replaying(client: net.Socket, first: Buffer): Duplex {
  const d = new Duplex({
    read() {
      client.resume();
    },
    write(chunk, enc, cb) {
      client.write(chunk, enc, cb);
    },
    final(cb) {
      client.end();
      cb();
    },
    destroy(err, cb) {
      client.destroy();
      cb(err);
    },
  });
  d.push(first);
  client.on("data", (c) => {
    if (!d.push(c)) client.pause();
  });
  client.on("end", () => d.push(null));
  client.on("close", () => d.destroy());
  return d;
}

const TLS_HANDSHAKE = 0x16;
/** how an HTTP/2 connection with prior knowledge begins (its preface, RFC 9113 3.4) */
const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n");

/** workerd closes a connection kept alive with no request 5 s after its last response */
const IDLE_CLOSE_MS = 4000;

/** A chunk that ends with a chunked body's last chunk ("0\r\n\r\n"). */
const endsChunked = (c: Buffer) =>
  c.length >= 5 &&
  c[c.length - 5] === 48 &&
  c[c.length - 4] === 13 &&
  c[c.length - 3] === 10 &&
  c[c.length - 2] === 13 &&
  c[c.length - 1] === 10;

/**
 * Whether workerd's last response on a connection is complete, from its framing: all of a
 * Content-Length body passed, or a chunked body's last chunk seen. Only the first chunk of a
 * response is parsed (its head); later chunks are counted, or their last bytes checked. When
 * unsure (a head split across reads, a body delimited by the close) it says incomplete. A
 * 101 Switching Protocols turns the connection into a tunnel, whose bytes are not framed.
 */
function responseFraming() {
  let complete = true;
  let upgraded = false;
  let remaining = -1; // Content-Length bytes still to come; -1 when not framed by length
  let chunked = false;
  let headOnly = false; // the answer to a HEAD request: no body, whatever its length says
  return {
    isComplete: () => complete,
    isTunnel: () => upgraded,
    /** the method of the request the next response answers, when known */
    request(method: string) {
      headOnly = method === "HEAD";
    },
    /** a chunk from workerd; `starts` when it is the first one after a request */
    see(chunk: Buffer, starts: boolean) {
      if (upgraded) return;
      if (!starts) {
        if (remaining >= 0) complete = (remaining -= chunk.length) <= 0;
        else if (chunked) complete = endsChunked(chunk);
        return;
      }
      upgraded = /^HTTP\/1\.[01] 101 /.test(chunk.toString("latin1", 0, 13));
      const end = chunk.indexOf("\r\n\r\n");
      const head = end < 0 ? "" : chunk.toString("latin1", 0, end).toLowerCase();
      chunked = head.includes("transfer-encoding: chunked");
      const length = /content-length: *(\d+)/.exec(head);
      remaining = !chunked && length ? Number(length[1]) - (chunk.length - end - 4) : -1;
      if (end < 0) complete = false;
      else if (headOnly || /^http\/1\.[01] (1\d\d|204|304)/.test(head)) complete = true;
      else if (remaining >= 0) complete = remaining <= 0;
      else complete = chunked && endsChunked(chunk);
    },
  };
}

/**
 * One client connection carried to workerd. workerd closes a kept-alive connection 5 s after
 * its last response unless it has read a new request by then: a request that arrives at that
 * moment, or that waits unread because workerd is busy (measured: up to 9 s under a load
 * that saturates its thread), is never read. So when workerd closes a connection idle that
 * long, the client's side stays open: its next request goes out on a new upstream
 * connection, and bytes it sent since workerd last answered (unread: workerd does not close
 * a connection in the middle of a request) are sent again on the new one. Without this a
 * kept-alive request could fail at random with a reset. Any other close (sooner after a
 * response, in the middle of one, or of an upgraded WebSocket tunnel) is passed on to the
 * client as it is. Bytes are forwarded as they come, pausing the reader while the writer is
 * full (leaner per chunk than stream.pipe: one watch event goes out to a thousand watchers).
 */
function carry(
  down: net.Socket,
  { upstream: target, idleCloseMs, queue, relay, levels, askLine, guards, available }: CarryOptions,
  guard: Guard,
  sockets: Set<net.Socket>,
  identity: ClientIdentity | undefined,
  clusterPath: string | undefined,
) {
  let upstream: net.Socket | undefined;
  /** whether the upstream connection carried a byte of a request (one never used can go quietly) */
  let used = false;
  /** a watch sent with the relay's offer (watch-relay.ts), until its answer comes */
  let offered: RelayWatch<net.Socket> | undefined;
  /** a watch the relay writes to the client; the client's next bytes wait for its end */
  let relayed: RelayWatch<net.Socket> | undefined;
  let afterWatch: Buffer[] | undefined;
  /** no request in progress: the client's next bytes start one */
  let between = true;
  /** the first bytes of a request whose head has not all come yet */
  let partial: Buffer | undefined;
  /** the request's place in the admission queue: give it back, or stop waiting for one */
  let leave: Leave | undefined;
  /** client chunks held while the request waits for its turn */
  let held: Buffer[] | undefined;
  /** the credential of the request in progress, when its answer may say something of it */
  let credential: string | undefined;
  /** ... and whether that answer names its level (the request asked) */
  let asked = false;
  /** client chunks forwarded since workerd's last byte: unanswered */
  let unanswered: Buffer[] = [];
  let unansweredBytes = 0;
  let resends = 0;
  let lastUpstreamAt = Date.now();
  let clientEnded = false;
  const framing = responseFraming();
  const resumeDown = () => down.resume();

  /** Answers from the front door itself and closes: a head it will not read, or no workerd. */
  const refuse = (answer: Buffer) => {
    partial = undefined;
    held = undefined;
    down.pause();
    down.end(answer);
    setTimeout(() => down.destroy(), 1000).unref();
  };
  guard.expired = () => refuse(headerTimeout(guards.headerTimeoutMs));

  /** What the first chunk of an answer says of the request's credential. */
  const learn = (chunk: Buffer) => {
    const cred = credential!;
    credential = undefined;
    if (unauthorized(chunk)) return levels.forget(cred);
    if (!asked) return;
    const end = chunk.indexOf("\r\n\r\n");
    const level = LEVEL_LINE.exec(chunk.toString("latin1", 0, end < 0 ? chunk.length : end))?.[1];
    if (level) {
      levels.learn(cred, level);
      guard.trust();
    }
  };

  const connect = () => {
    const up = net.connect(target);
    if (target.port) up.setNoDelay(true);
    sockets.add(up);
    used = false;
    lastUpstreamAt = Date.now();
    const resumeUp = () => up.resume();
    up.on("data", (chunk: Buffer) => {
      lastUpstreamAt = Date.now();
      const starts = unansweredBytes > 0;
      framing.see(chunk, starts);
      if (starts && credential !== undefined) learn(chunk);
      if (framing.isComplete() && !framing.isTunnel()) {
        between = true;
        // a relayed watch is in progress until the relay ends it (watchEnded)
        if (!(offered && starts)) guard.busy(false);
        leave?.();
        leave = undefined;
      }
      if (unansweredBytes) {
        unanswered = [];
        unansweredBytes = 0;
        resends = 0;
      }
      if (offered && starts) {
        const w = offered;
        offered = undefined;
        relayed = w; // the relay may end it at once (an ERROR event): watchEnded clears this
        const rest = relay!.answer(w, chunk);
        if (!rest) return;
        chunk = rest;
        relayed = undefined;
      }
      if (relayed) return; // the rest of an answer the relay took over (an empty body)
      if (!down.write(chunk)) {
        up.pause();
        down.once("drain", resumeUp);
      }
    });
    let gone = false;
    const lost = (err?: Error | boolean) => {
      if (gone) return;
      gone = true;
      sockets.delete(up);
      up.destroy();
      down.off("drain", resumeUp);
      if (upstream !== up) return;
      upstream = undefined;
      if (relayed) return; // the relay goes on writing; the client's next request connects again
      // a connection made ahead of a request, lost before it carried one: the next one connects again
      if (!used && !clientEnded) return;
      const idle = Date.now() - lastUpstreamAt >= idleCloseMs;
      // a close in the middle of a response (a watch cut off) reaches the client as it is
      if (framing.isTunnel() || clientEnded || !idle || !framing.isComplete())
        return err ? down.destroy() : down.end();
      down.resume(); // it may have been waiting for the lost connection to drain
      if (unansweredBytes === 0) return; // the client's next request connects again
      if (unansweredBytes > RESEND_LIMIT || ++resends > 2) return down.destroy();
      upstream = connect();
      used = true;
      for (const c of unanswered) upstream.write(c);
    };
    up.on("end", () => lost());
    up.on("close", (hadError) => lost(hadError));
    up.on("error", (e) => lost(e));
    return up;
  };

  const send = (chunk: Buffer) => {
    if (!framing.isTunnel()) {
      unansweredBytes += chunk.length;
      if (unansweredBytes <= RESEND_LIMIT) unanswered.push(chunk);
      else unanswered = [];
    }
    upstream ??= connect();
    used = true;
    if (!upstream.write(chunk)) {
      down.pause();
      upstream.once("drain", resumeDown);
      return false;
    }
    return true;
  };

  /** Sends the request held for its turn, and what the client sent after it meanwhile. */
  const release = () => {
    if (down.destroyed || !held) return;
    const chunks = held;
    held = undefined;
    let flowing = true;
    for (const c of chunks) flowing = send(c);
    if (clientEnded) upstream?.end();
    else if (flowing) down.resume();
  };

  const watchEnded = () => {
    relayed = undefined;
    guard.busy(false);
    const chunks = afterWatch;
    afterWatch = undefined;
    if (chunks) {
      for (const c of chunks) onData(c);
      if (!held) down.resume();
    }
  };

  /** A request line and header line inserted after the request line of `chunk`. */
  const withHeader = (chunk: Buffer, line: Buffer) => {
    const at = chunk.indexOf("\n") + 1;
    return Buffer.concat([chunk.subarray(0, at), line, chunk.subarray(at)]);
  };

  /** A request whose head is complete in `chunk` (it ends at `end`): queued, relayed or sent. */
  const begin = (chunk: Buffer, end: number) => {
    guard.headDone();
    // a pod's connection through its node's relay: its cluster's apiserver (cluster-connections.ts)
    ({ chunk, end } = requestUnderCluster(chunk, end, clusterPath));
    const head = requestHead(chunk, end);
    if (!head) return void send(chunk); // not a request: workerd answers it (400)
    // headers only the front door may send: a client's go, the client certificate's come in
    ({ chunk, end } = rewriteHead(chunk, end, head.headers, identity));
    if (!available.up)
      return refuse(statusAnswer(503, "ServiceUnavailable", available.message, { retryAfter: 1 }));
    between = false;
    guard.busy(true);
    framing.request(head.method);
    // a plain SPDY upgrade: answered here and carried to the Worker over a WebSocket
    const spdy = spdyUpgradeOf(head);
    if (spdy) {
      down.off("data", onData);
      const unused = upstream;
      upstream = undefined;
      unused?.destroy();
      const rewritten = requestHead(chunk, end) ?? head;
      return carrySpdyUpgrade(down, rewritten, spdy, chunk.subarray(end), () => {
        const up = net.connect(target);
        sockets.add(up);
        up.on("close", () => sockets.delete(up));
        return up;
      });
    }
    const authorization = credentialOf(head) ?? identity?.credential;
    // a known credential: the connection is no longer bounded as an anonymous one
    if (authorization !== undefined && levels.get(authorization)) guard.trust();
    const resource = relay && watchedResource(head);
    // a request head alone in its chunk (a client's next request waits, see onData)
    if (resource && end === chunk.length) {
      const { watch, header } = relay!.begin(down, watchEnded, resource);
      offered = watch;
      // it may wait for the first watch of its resource to open a relay
      held = [withHeader(chunk, Buffer.from(header, "latin1"))];
      down.pause();
      relay!.whenReady(watch, release);
      return;
    }
    if (longRunning(head)) return void send(chunk);
    const { level, flow, ask, cluster } = classify(head.target, authorization, guard.source, levels);
    if (ask) {
      credential = authorization;
      asked = askLine !== undefined;
      if (askLine) chunk = withHeader(chunk, askLine);
    } else if (authorization !== undefined) {
      credential = authorization;
      asked = false;
    }
    // wait for a turn; bytes that still arrive meanwhile wait with it
    held = [chunk];
    down.pause();
    leave = queue.enter(release, flow, level, cluster);
  };

  const onData = (chunk: Buffer) => {
    if (held) return void held.push(chunk);
    if (relayed) {
      // HTTP/1.1 lets a client send its next request before this answer ends
      (afterWatch ??= []).push(chunk);
      return void down.pause();
    }
    if (partial) {
      chunk = Buffer.concat([partial, chunk]);
      partial = undefined;
    } else if (!between || framing.isTunnel() || !startsRequest(chunk)) return void send(chunk);
    // a request begins: nothing of it goes on until its head is complete, within the deadline
    const end = headEnd(chunk);
    if (end < 0 ? chunk.length > MAX_HEAD_BYTES : end > MAX_HEAD_BYTES) return refuse(headerTooLarge());
    if (end >= 0) return begin(chunk, end);
    partial = chunk;
    guard.startHead();
  };
  down.on("data", onData);
  down.on("end", () => {
    clientEnded = true;
    if (held) return; // the request still waiting goes in first
    partial = undefined; // a head the client will never finish
    if (upstream) upstream.end();
    else down.end();
  });
  down.on("close", () => {
    guard.closed();
    leave?.();
    upstream?.destroy();
    for (const w of [offered, relayed]) if (w) relay!.left(w);
  });
  // connected ahead of the first request, unless workerd is down (its requests are answered here)
  if (available.up) upstream = connect();
}

/**
 * Serves the front door on `port`, forwarding to workerd on `upstreamPath` (a Unix socket)
 * or else `upstreamPort` on 127.0.0.1. idleCloseMs (IDLE_CLOSE_MS) is an option for tests.
 */
export function startFront({
  port,
  host = "127.0.0.1",
  upstreamPort,
  upstreamPath,
  cert,
  key,
  idleCloseMs = IDLE_CLOSE_MS,
  admission = {},
  relaySecret,
  frontSecret,
  guards: guardOptions,
  clientCa,
}: FrontDoorOptions): Promise<FrontDoor> {
  const queue = admissionQueue(admission);
  const levels = new CredentialLevels();
  const guards = connectionGuards(guardOptions);
  const available: Availability = { up: true, message: "" };
  const askLine = frontSecret
    ? Buffer.from(`${PRIORITY_ASK_HEADER}: ${frontSecret}\r\n`, "latin1")
    : undefined;
  const upstream: Upstream = upstreamPath
    ? { path: upstreamPath }
    : { port: upstreamPort, host: "127.0.0.1" };
  // the same, as node:http's request options (the relay's and HTTP/2's requests to workerd)
  const requestTarget = upstreamPath ? { socketPath: upstreamPath } : upstream;
  const relay = relaySecret ? watchRelay({ target: requestTarget, secret: relaySecret }) : undefined;
  const h2 = h2Door({ target: requestTarget, queue, relay, idleCloseMs, levels, frontSecret, available });
  const carried: CarryOptions = { upstream, idleCloseMs, queue, relay, levels, askLine, guards, available };
  const sockets = new Set<net.Socket>();
  const judge = clientCa && frontSecret ? clientCertJudge(clientCa, frontSecret) : undefined;
  const serve = (
    down: net.Socket,
    guard: Guard,
    clusterPath: string | undefined,
    alpn?: string | false | null,
    identity?: ClientIdentity,
  ) => {
    if (alpn === "h2") return h2.accept(down, guard, identity, clusterPath);
    down.setNoDelay?.(true);
    carry(down, carried, guard, sockets, identity, clusterPath);
  };
  // TLS over the replayed bytes; the socket says which protocol the client chose (ALPN) once
  // the handshake is done (within the head deadline, which runs from the connection's opening)
  // (the client CAs are named in the certificate request: a client picks its certificate by them)
  const secureContext =
    cert && key ? tls.createSecureContext({ cert, key, ...(judge ? { ca: clientCa } : {}) }) : undefined;
  const server = net.createServer((client) => {
    sockets.add(client);
    const guard = guards.accept(client.remoteAddress, () => client.destroy());
    client.on("close", () => {
      sockets.delete(client);
      guard.closed();
    });
    client.on("error", () => client.destroy());
    // a node's relay may say first which cluster the connection is for (cluster-connections.ts)
    client.once("data", (bytes: Buffer) => takeClusterPreamble(client, bytes, dispatch));
    const dispatch = (first: Buffer, clusterPath: string | undefined) => {
      client.pause();
      if (first[0] === TLS_HANDSHAKE) {
        if (!secureContext) return void client.destroy();
        const down = new tls.TLSSocket(replaying(client, first), {
          isServer: true,
          secureContext,
          ALPNProtocols: ["h2", "http/1.1"],
          // optional, and judged here rather than by the handshake (client-cert.ts)
          requestCert: judge !== undefined,
          rejectUnauthorized: false,
        });
        down.on("error", () => down.destroy());
        down.once("secure", () => {
          // as node:tls's own server marks a socket it hands on (an HTTP/2 session waits otherwise)
          (down as tls.TLSSocket & { secureConnecting: boolean }).secureConnecting = false;
          serve(down, guard, clusterPath, down.alpnProtocol, judge?.(down));
        });
        return void client.resume();
      }
      client.unshift(first);
      // "PRI " already tells it from every HTTP/1.x method
      const preface = first.subarray(0, H2_PREFACE.length);
      // an HTTP/2 session reads the socket itself (the unshifted bytes first)
      if (preface.length >= 4 && preface.equals(H2_PREFACE.subarray(0, preface.length)))
        return h2.accept(client, guard, undefined, clusterPath);
      serve(client, guard, clusterPath);
      client.resume();
    };
  });
  server.listen(port, host);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.once("listening", () =>
      resolve({
        close: () =>
          new Promise<void>((r) => {
            relay?.close();
            h2.close();
            for (const s of sockets) s.destroy();
            server.close(() => r());
          }),
        setAvailable(up, message = "the control plane is restarting") {
          available.up = up;
          available.message = message;
        },
        stats: () => ({ untrusted: guards.untrusted(), ...queue.stats(), credentials: levels.size }),
      }),
    );
  });
}
