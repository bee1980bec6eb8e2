// The front door's watch relay. A store shard writes the events of every HTTP watch the
// front door holds on it into one stream to the front door (durable-objects/store/relay.ts),
// each event once with the ids of the watches it is for, and the front door writes it to
// each client. One event to a thousand watchers is then one write inside workerd instead of
// a thousand (measured: most of workerd's CPU for such an event). The shard keeps every
// watch semantic (filters, replay, bookmarks, timeouts, errors); this copies bytes.
//
// A watch goes out with `x-edgeplane-relay: <secret> <id>` (the secret is shared with the
// Worker, made afresh at each start, so no client can ask for it). The shard answers either
// with an empty response marked `x-edgeplane-relayed: <relay no>` (its events come on that
// relay: this writes the head, as chunked, then each event as a chunk, then the last chunk;
// to an HTTP/2 stream (front-door-h2.ts), the head, then each event as it is, then the stream's end),
// or, having no relay yet, with an ordinary stream marked `x-edgeplane-relay-offer: <shard>`
// (forwarded without the mark; a relay to that shard is opened for the watches after it).
//
// A watch of a cluster other than the root (/clusters/<name>/..., docs/clusters.md) is
// relayed the same way, by that cluster's shards: its relay is opened under the cluster's
// path (so the Worker reaches the cluster's own shard), and relays and first watches are
// kept apart per cluster, so no cluster's watch is ever carried on another's relay.
import http from "node:http";
import type http2 from "node:http2";
import {
  DATA,
  END,
  RELAY_NO_HEADER as NO_HEADER,
  RELAY_OFFER_HEADER as OFFER_HEADER,
  RELAY_PATH,
  RELAYED_HEADER,
  RELAY_SHARD_HEADER as SHARD_HEADER,
  RELAY_WATCH_HEADER as WATCH_HEADER,
} from "../api/wire/watch-relay";
import type { RequestHead } from "./fair-queue";

/** Where workerd listens, as node:http request options ({socketPath} or {host, port}). */
export type RequestTarget = Pick<http.RequestOptions, "socketPath" | "host" | "port">;

/**
 * The client a relayed watch's events are written to: an HTTP/1.1 connection (net.Socket) or
 * an HTTP/2 stream (http2.ServerHttp2Stream).
 */
export interface WatchClient {
  readonly writableLength: number;
  write(chunk: Buffer | string): boolean;
  end(): unknown;
  destroy(): unknown;
}

/** A watch sent upstream with the relay's offer, until it is over (or its client left). */
export interface RelayWatch<D extends WatchClient = WatchClient> {
  /** the front door's id for it, sent to the shard */
  id: number;
  down: D;
  /** written to as an HTTP/2 stream (each event as it is) rather than as chunks */
  h2: boolean;
  /** called when a relayed watch is over */
  ended: () => void;
  /** "<group>/<resource>", after "/clusters/<name> " in another cluster (watchedResource) */
  resource: string;
  /** its answer's head went to the client: events are written as they come */
  headSent: boolean;
  /** events (null: the end) that came before its head went out */
  pending: (RelayEvent | null)[];
  /** the relay carrying it, once the shard said so */
  no: string | undefined;
  done: boolean;
}

/** One relayed event, made once for all its watches (each form on first use). */
interface RelayEvent {
  /** the event's bytes, as an HTTP/2 stream takes them */
  readonly bytes: Buffer;
  /** the same as an HTTP/1.1 chunk */
  readonly chunk: Buffer;
}

/** One relay: a stream from a shard carrying the events of its watches. */
interface Relay {
  /** the cluster's path ("" for the root, "/clusters/<name>") and the shard's key, as one */
  key: string;
  /** the cluster's path ("" for the root, "/clusters/<name>") */
  cluster: string;
  /** the shard's key */
  shard: string;
  /** the front door's number for it */
  no: string;
  open: boolean;
  /** when it failed to open (0: it did not) */
  failedAt: number;
  /** ids of watches given up on this relay (their clients left before their answers) */
  cancelled: Set<number>;
  /** watches waiting for its answer */
  onAnswer: (() => void)[];
  /** its answer came (200) */
  answered?: boolean;
}

/** A resource's first watch, and the watches after it waiting for it to settle. */
interface FirstWatch {
  watch: RelayWatch;
  waiting: (() => void)[];
  timer: NodeJS.Timeout;
}

/** The relay's offer for a watch: the watch, and the request header that offers it. */
export interface RelayOffer<D extends WatchClient> {
  watch: RelayWatch<D>;
  /** the header as an HTTP/1.1 line ("name: value\r\n") */
  header: string;
  name: string;
  value: string;
}

/** The relay side of one front door (watchRelay). */
export interface WatchRelay {
  /**
   * A watch about to go upstream from client `down` (an HTTP/1.1 connection, or with `h2`
   * an HTTP/2 stream): the header that offers it to the shard's relay, as a line and as a
   * name and value, and the watch. `ended` is called when a relayed stream is over.
   */
  begin<D extends WatchClient>(down: D, ended: () => void, resource: string, h2?: boolean): RelayOffer<D>;
  /** Calls `go` when watch `w` may go upstream: now, or once its resource's first watch settled. */
  whenReady(w: RelayWatch, go: () => void): void;
  /**
   * The first chunk of the answer to watch `w`. Returns undefined when the relay carries
   * the watch (its head is written here), else the chunk to forward, without the relay's marks.
   */
  answer(w: RelayWatch, chunk: Buffer): Buffer | undefined;
  /**
   * The answer to HTTP/2 watch `w`, as `res` has it: true when the relay carries the watch
   * (its head is then sent here, and `res` has no body). The relay's marks are taken out of
   * res.headers either way.
   */
  answerHeaders(w: RelayWatch<http2.ServerHttp2Stream>, res: http.IncomingMessage): boolean;
  /** Watch `w`'s client went away. */
  left(w: RelayWatch): void;
  close(): void;
}

/** a client whose unread bytes pass this is cut off, as a shard cuts off a slow watcher */
const MAX_BACKLOG = 64 << 20;
/** a relay that failed to open is not tried again sooner */
const RETRY_MS = 1000;
/** the longest the watches of a resource wait for its first watch's answer and relay */
const HOLD_MS = 1000;
const LAST_CHUNK = Buffer.from("0\r\n\r\n");
const CRLF = Buffer.from("\r\n");
/** headers that belong to one HTTP/1.1 connection, never sent over HTTP/2 */
export const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
]);

/** An HTTP/1.1 answer's headers (as node:http has them) as an HTTP/2 response's. */
export function responseHeaders(headers: http.IncomingHttpHeaders): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (!HOP_BY_HOP.has(name)) out[name] = value;
  return out;
}

/** "/clusters/<name>/..." of a cluster other than the root: what may be a cluster's name. */
const CLUSTER_PATH = /^\/clusters\/([a-z0-9]([-a-z0-9]*[a-z0-9])?)(?=\/)/;

/** The cluster path a watch's resource (watchedResource) names: "" for the root. */
export function clusterOf(resource: string): string {
  const space = resource.indexOf(" ");
  return space < 0 ? "" : resource.slice(0, space);
}

/**
 * The resource ("<group>/<resource>") that `head` (fair-queue.ts: requestHead) watches, when
 * it is an HTTP watch that a relay may carry; in another cluster, "/clusters/<name> " before it.
 */
export function watchedResource({ method, target, version, headers }: RequestHead): string | undefined {
  // HTTP/1.0 has no chunked answers: its watches stay streams of their own
  if (method !== "GET" || version !== "1.1" || /(^|\n)upgrade:/.test(headers)) return undefined;
  let [path, query = ""] = target.split("?", 2);
  // a cluster's watch only on a plain path: an encoded or dot segment is the Worker's to resolve
  if (path.startsWith("/clusters/") && /%|\/\.\.?(\/|$)/.test(path)) return undefined;
  const cluster = CLUSTER_PATH.exec(path)?.[0] ?? "";
  path = path.slice(cluster.length);
  const segs = path.split("/").slice(1);
  const group = segs[0] === "api" ? "" : segs[0] === "apis" ? segs[1] : undefined;
  if (group === undefined) return undefined;
  let rest = segs.slice(group ? 3 : 2);
  const prefixed = rest[0] === "watch"; // the old /watch/ prefix
  if (prefixed) rest = rest.slice(1);
  if (rest[0] === "namespaces" && rest.length > 2) rest = rest.slice(2);
  // a subresource (log, proxy, ...) is never a watch of a shard
  if (!rest[0] || rest.length > 2) return undefined;
  if (!prefixed && !/(^|&)watch=(1|true|True)(&|$)/.test(query)) return undefined;
  return cluster ? `${cluster} ${group}/${rest[0]}` : `${group}/${rest[0]}`;
}

/**
 * The relay side of one front door. `target` is where workerd listens, as node:http request
 * options ({socketPath} or {host, port}); `secret` is the Worker's EDGEPLANE_RELAY_SECRET.
 */
export function watchRelay({ target, secret }: { target: RequestTarget; secret: string }): WatchRelay {
  let lastId = 0;
  let lastNo = 0;
  /** watches sent upstream with an id and not yet over, by id */
  const watches = new Map<number, RelayWatch>();
  /** relays by shard key, and by number */
  const relays = new Map<string, Relay>();
  const byNo = new Map<string, Relay>();
  /** ids to give up, by relay number, sent together */
  let cancels: Map<string, number[]> | undefined;
  /**
   * Resources whose first watch is out: the watches after it wait for its answer and, when
   * that offers a relay, for the relay (so that a crowd of watches opened at once, as at a
   * start, is carried on it rather than each given a stream of its own).
   */
  const firsts = new Map<string, FirstWatch>();
  /** resources whose first watch was answered (while their relays stay open) */
  const known = new Set<string>();
  /** requests to workerd in flight (relays stay in flight while open) */
  const requests = new Set<http.ClientRequest>();

  const request = (cluster: string, method: string, headers: http.OutgoingHttpHeaders) => {
    const req = http.request({
      ...target,
      method,
      path: cluster + RELAY_PATH,
      agent: false,
      headers: { [WATCH_HEADER]: secret, ...headers },
    });
    requests.add(req);
    req.on("close", () => requests.delete(req));
    return req;
  };

  function cancel(no: string, id: number) {
    if (!cancels) {
      cancels = new Map();
      setImmediate(() => {
        const all = cancels!;
        cancels = undefined;
        for (const [no, ids] of all) {
          const r = byNo.get(no);
          if (!r?.open) continue; // a closed relay's watches are over on the shard too
          const req = request(r.cluster, "POST", {
            [SHARD_HEADER]: r.shard,
            "content-type": "application/json",
          });
          req.on("response", (res) => res.resume());
          req.on("error", () => {});
          req.end(JSON.stringify({ no, ids }));
        }
      });
    }
    let ids = cancels.get(no);
    if (!ids) cancels.set(no, (ids = []));
    ids.push(id);
  }

  /** Writes an event to watch `w`'s client: as a chunk over HTTP/1.1, as it is over HTTP/2. */
  function write(w: RelayWatch, event: RelayEvent) {
    if (w.done) return;
    if (w.down.writableLength > MAX_BACKLOG) return void w.down.destroy();
    w.down.write(w.h2 ? event.bytes : event.chunk);
  }

  function end(w: RelayWatch) {
    if (w.done) return;
    if (!w.headSent) return void w.pending.push(null);
    if (w.h2) w.down.end();
    else w.down.write(LAST_CHUNK);
    w.done = true;
    watches.delete(w.id);
    w.ended();
  }

  /** One message of relay `r` (see durable-objects/store/relay.ts). */
  function message(r: Relay, buf: Buffer, start: number, stop: number) {
    const kind = buf[start];
    const n = buf.readUInt32LE(start + 1);
    const dataAt = start + 5 + 4 * n;
    // made once for all the watches it is for: the bytes, and those as an HTTP/1.1 chunk
    let bytes: Buffer | undefined;
    let chunk: Buffer | undefined;
    const event: RelayEvent = {
      get bytes() {
        bytes ??= Buffer.from(buf.subarray(dataAt, stop));
        return bytes;
      },
      get chunk() {
        chunk ??= Buffer.concat([
          Buffer.from(`${(stop - dataAt).toString(16)}\r\n`),
          buf.subarray(dataAt, stop),
          CRLF,
        ]);
        return chunk;
      },
    };
    for (let i = 0; i < n; i++) {
      const id = buf.readUInt32LE(start + 5 + 4 * i);
      const w = watches.get(id);
      if (!w) {
        // its client left before its answer came: the shard still has it
        if (kind === DATA && !r.cancelled.has(id)) {
          r.cancelled.add(id);
          cancel(r.no, id);
        }
        continue;
      }
      if (kind === END) end(w);
      else if (w.headSent) write(w, event);
      else w.pending.push(event);
    }
  }

  function open(cluster: string, shard: string): Relay {
    const key = `${cluster} ${shard}`;
    const no = String(++lastNo);
    const r: Relay = { key, cluster, shard, no, open: true, failedAt: 0, cancelled: new Set(), onAnswer: [] };
    /** the relay's answer came (or its request failed): the watches waiting on it go on */
    const wakeWaiting = () => {
      for (const f of r.onAnswer.splice(0)) f();
    };
    relays.set(key, r);
    byNo.set(no, r);
    let parts: Buffer[] = [];
    let have = 0;
    let need = 4;
    const receive = (chunk: Buffer) => {
      parts.push(chunk);
      have += chunk.length;
      if (have < need) return;
      const buf = parts.length === 1 ? parts[0] : Buffer.concat(parts, have);
      parts = [];
      have = 0;
      let at = 0;
      need = 4;
      while (buf.length - at >= 4) {
        const len = buf.readUInt32LE(at);
        if (buf.length - at - 4 < len) {
          need = len + 4;
          break;
        }
        message(r, buf, at + 4, at + 4 + len);
        at += 4 + len;
      }
      if (at < buf.length) {
        parts.push(buf.subarray(at));
        have = buf.length - at;
      }
    };
    const lost = (failed: boolean) => {
      wakeWaiting();
      if (!r.open) return;
      r.open = false;
      byNo.delete(no);
      known.clear(); // the next watches find out again
      if (failed) r.failedAt = Date.now();
      else if (relays.get(key) === r) relays.delete(key);
      // the shard ends this relay's watches; their clients see a clean end and watch again
      for (const w of [...watches.values()]) if (w.no === no) end(w);
    };
    const req = request(cluster, "GET", { [SHARD_HEADER]: shard, [NO_HEADER]: no });
    req.on("response", (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return lost(true);
      }
      r.answered = true;
      wakeWaiting();
      res.on("data", receive);
      for (const e of ["end", "close", "error"]) res.on(e, () => lost(false));
    });
    req.on("error", () => lost(!r.answered));
    req.end();
    return r;
  }

  /**
   * Settles watch `w` with its answer's marks: whether the shard relays it (on relay
   * `relayedOn`), else whether it offered a relay (to open for the watches after it).
   */
  function answered(w: RelayWatch, relayedOn: string | undefined, offer: string | undefined): boolean {
    if (relayedOn === undefined) {
      watches.delete(w.id);
      w.done = true;
      if (offer) {
        const r = offered(clusterOf(w.resource), offer);
        if (r.open && !r.answered) r.onAnswer.push(() => settle(w.resource, w));
        else settle(w.resource, w);
      } else settle(w.resource, w);
      return false;
    }
    w.no = relayedOn;
    settle(w.resource, w);
    return true;
  }

  /** Watch `w`'s head was sent: what came for it meanwhile goes out. */
  function flush(w: RelayWatch) {
    w.headSent = true;
    for (const event of w.pending.splice(0)) {
      if (event === null) end(w);
      else write(w, event);
    }
    // (w.no is set: flushed once the shard said which relay carries it)
    if (!byNo.get(w.no!)?.open) end(w); // its relay closed before this answer came
  }

  /** Opens a relay to `cluster`'s shard `shard` unless one is open (or failed to open a moment ago). */
  function offered(cluster: string, shard: string): Relay {
    const r = relays.get(`${cluster} ${shard}`);
    if (r && (r.open || Date.now() - r.failedAt < RETRY_MS)) return r;
    return open(cluster, shard);
  }

  /** The first watch of `resource` was answered (and its relay, if offered, is open or failed). */
  function settle(resource: string, w: RelayWatch) {
    const first = firsts.get(resource);
    if (first?.watch !== w) return;
    firsts.delete(resource);
    clearTimeout(first.timer);
    known.add(resource);
    for (const go of first.waiting) go();
  }

  return {
    begin(down, ended, resource, h2 = false) {
      lastId = (lastId % 0xffffffff) + 1;
      const w: RelayWatch<typeof down> = {
        id: lastId,
        down,
        h2,
        ended,
        resource,
        headSent: false,
        pending: [],
        no: undefined,
        done: false,
      };
      watches.set(w.id, w);
      if (!known.has(resource) && !firsts.has(resource)) {
        const timer = setTimeout(() => settle(resource, w), HOLD_MS);
        timer.unref?.();
        firsts.set(resource, { watch: w, waiting: [], timer });
      }
      const value = `${secret} ${w.id}`;
      return { watch: w, header: `${WATCH_HEADER}: ${value}\r\n`, name: WATCH_HEADER, value };
    },

    whenReady(w, go) {
      const first = firsts.get(w.resource);
      if (!first || first.watch === w) return go();
      first.waiting.push(go);
    },

    answer(w, chunk) {
      const headEnd = chunk.indexOf("\r\n\r\n");
      const head = chunk.toString("latin1", 0, Math.max(headEnd, 0)).split("\r\n");
      let relayedOn: string | undefined;
      let offer: string | undefined;
      const kept = head.filter((line) => {
        const colon = line.indexOf(":");
        const name = line.slice(0, colon).toLowerCase();
        if (name === RELAYED_HEADER) relayedOn = line.slice(colon + 1).trim();
        else if (name === OFFER_HEADER) offer = line.slice(colon + 1).trim();
        else return true;
        return false;
      });
      if (!answered(w, relayedOn, offer)) {
        if (offer === undefined) return chunk;
        return Buffer.concat([Buffer.from(kept.join("\r\n"), "latin1"), chunk.subarray(headEnd)]);
      }
      const client = kept.filter((line) => !/^(content-length|transfer-encoding):/i.test(line));
      client.push("Transfer-Encoding: chunked", "", "");
      w.down.write(client.join("\r\n"));
      flush(w);
      return undefined;
    },

    answerHeaders(w, res) {
      // node:http joins a repeated header other than set-cookie into one string
      const relayedOn = res.headers[RELAYED_HEADER] as string | undefined;
      const offer = res.headers[OFFER_HEADER] as string | undefined;
      delete res.headers[RELAYED_HEADER];
      delete res.headers[OFFER_HEADER];
      if (!answered(w, relayedOn?.trim(), offer?.trim())) return false;
      delete res.headers["content-length"];
      w.down.respond({ ...responseHeaders(res.headers), ":status": res.statusCode });
      flush(w);
      return true;
    },

    left(w) {
      settle(w.resource, w);
      if (w.done) return;
      w.done = true;
      watches.delete(w.id);
      if (w.no !== undefined) cancel(w.no, w.id);
    },

    close() {
      for (const w of [...watches.values()]) w.done = true;
      watches.clear();
      for (const req of requests) req.destroy();
    },
  };
}
