// What the front door holds against clients that never finish: a request's head must arrive
// within HEADER_TIMEOUT_MS (as Node's headersTimeout and Go's ReadHeaderTimeout bound it) or
// the connection is answered 408 and closed, and a head longer than MAX_HEAD_BYTES is answered
// 431 before anything else reads it. Connections that have not shown a verified credential
// (anonymous ones, or ones still sending their first head) are bounded per source address and
// in all: past the bound, the oldest of them that has no request in progress (and is over a
// second old) is closed, so a crowd of slow connections ages itself out while a client that
// sends its request at once is never the oldest. The front door's queue (fair-queue.ts) sees a request only once its head
// is complete, so a connection here costs a socket and a timer, never a place in the queue.
import type { ServerHttp2Stream } from "node:http2";

/** how long a request's head may take from its first byte (or a connection's, from its opening) */
export const HEADER_TIMEOUT_MS = 10_000;
/**
 * The longest head the front door reads. workerd answers a longer one (~128 KiB) with plain
 * text, not a Status; kube-apiserver (Go's net/http) allows 1 MiB. A Kubernetes client's head
 * is well under 16 KiB (Node's own limit); 64 KiB leaves room for long bearer tokens.
 */
export const MAX_HEAD_BYTES = 64 * 1024;
/** connections without a verified credential, per source address */
export const UNTRUSTED_PER_SOURCE = 64;
/**
 * A connection younger than this is never closed to make room: a burst of new connections
 * from one client (a benchmark opening a thousand watches) sends its heads within
 * milliseconds, while a crowd that never finishes grows old.
 */
export const EVICTABLE_AFTER_MS = 1000;
/** ... and in all */
export const UNTRUSTED_TOTAL = 1024;

export interface GuardOptions {
  headerTimeoutMs?: number;
  untrustedPerSource?: number;
  untrustedTotal?: number;
  evictableAfterMs?: number;
}

/** One client connection's standing with the guards. */
export interface Guard {
  readonly source: string;
  /** what the deadline does when it passes (closes the connection; the owner of each stage sets it) */
  expired: () => void;
  /**
   * Starts the head deadline, unless it runs already (a new connection's runs from its opening
   * until its first head is complete; later ones from a request's first bytes).
   */
  startHead(): void;
  /** The head is complete: the deadline stops. */
  headDone(): void;
  /** A request is in progress (it is not closed to make room), or over. */
  busy(on: boolean): void;
  /** A verified credential was used on it: no longer bounded. */
  trust(): void;
  /** The connection is gone. */
  closed(): void;
}

export interface Guards {
  /** A new connection from `source`; `evict` closes it when room is needed. */
  accept(source: string | undefined, evict: () => void): Guard;
  readonly headerTimeoutMs: number;
  /** connections without a verified credential, in all and from `source` */
  untrusted(source?: string): number;
}

export function connectionGuards({
  headerTimeoutMs = HEADER_TIMEOUT_MS,
  untrustedPerSource = UNTRUSTED_PER_SOURCE,
  untrustedTotal = UNTRUSTED_TOTAL,
  evictableAfterMs = EVICTABLE_AFTER_MS,
}: GuardOptions = {}): Guards {
  interface Entry extends Guard {
    inProgress: boolean;
    evict: () => void;
    since: number;
  }
  /** untrusted connections, oldest first: per source, and in all */
  const bySource = new Map<string, Set<Entry>>();
  const all = new Set<Entry>();

  const drop = (e: Entry) => {
    if (!all.delete(e)) return;
    const set = bySource.get(e.source)!;
    set.delete(e);
    if (set.size === 0) bySource.delete(e.source);
  };
  /**
   * Closes the oldest connection of `set` with no request in progress, if it is old enough
   * (the set is in the order they came: once one is too young, so are the rest).
   */
  const evictOldest = (set: Set<Entry>) => {
    const oldEnough = Date.now() - evictableAfterMs;
    for (const e of set) {
      if (e.since > oldEnough) return;
      if (!e.inProgress) {
        drop(e);
        e.evict();
        return;
      }
    }
  };

  return {
    headerTimeoutMs,
    untrusted: (source) => (source === undefined ? all.size : (bySource.get(source)?.size ?? 0)),
    accept(source = "unknown", evict) {
      let timer: NodeJS.Timeout | undefined;
      const entry: Entry = {
        source,
        inProgress: false,
        evict,
        since: Date.now(),
        expired: evict,
        startHead() {
          timer ??= setTimeout(() => {
            timer = undefined;
            entry.expired();
          }, headerTimeoutMs);
        },
        headDone() {
          clearTimeout(timer);
          timer = undefined;
        },
        busy(on) {
          entry.inProgress = on;
        },
        trust() {
          drop(entry);
        },
        closed() {
          clearTimeout(timer);
          drop(entry);
        },
      };
      let set = bySource.get(source);
      if (!set) bySource.set(source, (set = new Set()));
      set.add(entry);
      all.add(entry);
      if (set.size > untrustedPerSource) evictOldest(set);
      if (all.size > untrustedTotal) evictOldest(all);
      entry.startHead();
      return entry;
    },
  };
}

/** A metav1.Status body. */
export function statusBody(code: number, reason: string, message: string): string {
  return JSON.stringify({
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    code,
  });
}

const REASON_PHRASES: Record<number, string> = {
  408: "Request Timeout",
  431: "Request Header Fields Too Large",
  503: "Service Unavailable",
};

/**
 * A whole HTTP/1.1 answer with a Status, from the front door itself. `close`: the connection
 * ends after it (a head that timed out or was too long cannot be read past).
 */
export function statusAnswer(
  code: number,
  reason: string,
  message: string,
  { close = true, retryAfter }: { close?: boolean; retryAfter?: number } = {},
): Buffer {
  const body = statusBody(code, reason, message);
  return Buffer.from(
    `HTTP/1.1 ${code} ${REASON_PHRASES[code] ?? reason}\r\n` +
      "content-type: application/json\r\n" +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      (retryAfter === undefined ? "" : `retry-after: ${retryAfter}\r\n`) +
      (close ? "connection: close\r\n" : "") +
      `\r\n${body}`,
  );
}

/** The same answer on an HTTP/2 stream. */
export function statusOnStream(
  stream: ServerHttp2Stream,
  code: number,
  reason: string,
  message: string,
  retryAfter?: number,
) {
  if (stream.destroyed || stream.closed) return;
  if (stream.headersSent) return void stream.close(2); // NGHTTP2_INTERNAL_ERROR
  stream.respond({
    ":status": code,
    "content-type": "application/json",
    ...(retryAfter === undefined ? {} : { "retry-after": String(retryAfter) }),
  });
  stream.end(statusBody(code, reason, message));
}

export const headerTimeout = (ms: number) =>
  statusAnswer(408, "Timeout", `the request's headers did not arrive within ${ms / 1000}s`);
export const headerTooLarge = () =>
  statusAnswer(
    431,
    "RequestHeaderFieldsTooLarge",
    `Request Header Fields Too Large: the request's headers are over ${MAX_HEAD_BYTES} bytes`,
  );
