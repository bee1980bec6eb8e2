// A fair queue in front of workerd. Locally one workerd thread runs the Worker and every
// Durable Object, and it does not serve its connections in turn when saturated: measured, a
// request could wait seconds while requests on other connections were served again and
// again. The front door therefore lets at most `limit` ordinary requests into workerd at a
// time and admits the others as answers complete: clients in turn (a client is its
// credential, or its connection when it sends none; as upstream's priority and fairness
// queues flows by user), each client's requests in arrival order, so that one client with
// many requests at once (an HTTP/2 connection carries up to 1,000) does not hold up the
// rest. Long-running requests
// (watches, upgrades to WebSocket or SPDY, log follows, proxies) are never held or counted,
// and a request that holds its place longer than `holdMs` gives it up, so a slow request
// (or one waiting on another through this door, as a webhook may) never stalls the rest.

/**
 * A request's first line, and its headers as one lowercased string (a line each): enough to
 * tell a watch, a long-running request and a client's credential apart without parsing more.
 */
export interface RequestHead {
  method: string;
  target: string;
  /** "1.0" or "1.1" (HTTP/2 requests are given as "1.1") */
  version: string;
  headers: string;
}

/** A request's first line and headers, when `chunk` starts one. */
export function requestHead(chunk: Buffer): RequestHead | undefined {
  const end = chunk.indexOf("\r\n\r\n");
  const head = chunk.toString("latin1", 0, end < 0 ? Math.min(chunk.length, 4096) : end);
  const line = /^([A-Z]+) (\S+) HTTP\/1\.([01])\r?(?:\n|$)/.exec(head);
  if (!line) return undefined;
  return {
    method: line[1],
    target: line[2],
    version: `1.${line[3]}`,
    headers: head.slice(line[0].length).toLowerCase(),
  };
}

const STREAMING = new Set(["exec", "attach", "portforward", "proxy"]);

/** Whether a request may run indefinitely: it must not hold a place in the queue. */
export function longRunning({ target, headers }: Pick<RequestHead, "target" | "headers">): boolean {
  if (/(^|\n)upgrade:/.test(headers)) return true;
  const [path, query = ""] = target.split("?", 2);
  if (/(^|&)(watch|follow)=(1|true)(&|$)/i.test(query)) return true;
  // /api/v1/... or /apis/<group>/<version>/...: the old /watch/ prefix, or a streaming
  // subresource (<resource>/<name>/<sub>, under namespaces/<ns>/ when namespaced)
  const segs = path.split("/").slice(1);
  let rest = segs[0] === "api" ? segs.slice(2) : segs[0] === "apis" ? segs.slice(3) : [];
  if (rest[0] === "watch") return true;
  if (rest[0] === "namespaces" && rest.length > 3) rest = rest.slice(2);
  return STREAMING.has(rest[2]);
}

/** The Authorization header of a request head (requestHead: lowercased), if any. */
export function credentialOf(head: RequestHead): string | undefined {
  return /(?:^|\n)authorization: *([^\r\n]*)/.exec(head.headers)?.[1];
}

/**
 * A client of the queue: a credential ("credential <Authorization>"), or the connection (a
 * socket or an HTTP/2 session) of a request that sends none; undefined is one client for all.
 */
export type Flow = string | object | undefined;

/** The client a request comes from, for the queue: its credential, else its connection. */
export function flowOf(authorization: string | undefined, connection: object | undefined): Flow {
  return authorization ? `credential ${authorization}` : connection;
}

/**
 * How many ordinary requests workerd holds at once. Fewer keeps each request's time inside
 * workerd short and even, and the queue here serves in turn; more keeps its one thread
 * busier. Measured with `npm run bench api-store` (pod creates from 50 clients, 2 cores):
 * at 32, p99 37-68 ms (50 or under in 15 of 26 runs) at ~1,790/s on average; at 24, p99
 * 36-52 ms (19 of 23) at ~1,710/s; at 20, 42-51 ms (7 of 8) at ~1,680/s. 24 is the default;
 * EDGEPLANE_ADMIT_LIMIT sets another (a number of at least 1).
 */
export const ADMIT_LIMIT = admitLimit(process.env.EDGEPLANE_ADMIT_LIMIT);

export function admitLimit(setting: string | undefined): number {
  const n = Number(setting);
  return setting !== undefined && setting !== "" && Number.isInteger(n) && n >= 1 ? n : 24;
}

export interface AdmissionOptions {
  /** ordinary requests let into workerd at once (ADMIT_LIMIT) */
  limit?: number;
  /** how long an admitted request may hold its place before it gives it up */
  holdMs?: number;
}

/** Gives a request's place back (or stops its wait); idempotent. */
export type Leave = () => void;

export interface AdmissionQueue {
  /**
   * Calls `admit(release)` once the request from client `flow` (flowOf; one client for
   * all when undefined) may go in; `release` (idempotent) gives its place back and is due
   * when its answer completes. Returns a cancel for a request whose client went away while
   * waiting.
   */
  enter(admit: (release: () => void) => void, flow?: Flow): Leave;
  stats(): { running: number; waiting: number };
}

export function admissionQueue({
  limit = ADMIT_LIMIT,
  holdMs = 2000,
}: AdmissionOptions = {}): AdmissionQueue {
  let running = 0;
  let waiting = 0;
  /** admit callbacks of each client's requests waiting, oldest first */
  const flows = new Map<Flow, (() => void)[]>();
  /** the clients with requests waiting, the next one to be admitted first */
  const turns: Flow[] = [];

  const next = () => {
    while (running < limit && turns.length) {
      const flow = turns.shift();
      const queue = flows.get(flow)!;
      const go = queue.shift()!;
      if (queue.length) turns.push(flow);
      else flows.delete(flow);
      waiting--;
      running++;
      go();
    }
  };

  return {
    enter(admit, flow) {
      let state: "waiting" | "running" | "done" = "waiting";
      let timer: NodeJS.Timeout | undefined;
      const release = () => {
        if (state !== "running") return;
        state = "done";
        clearTimeout(timer);
        running--;
        next();
      };
      const go = () => {
        state = "running";
        timer = setTimeout(release, holdMs);
        timer.unref?.();
        admit(release);
      };
      let queue = flows.get(flow);
      if (!queue) {
        flows.set(flow, (queue = []));
        turns.push(flow);
      }
      queue.push(go);
      waiting++;
      next();
      return () => {
        if (state !== "waiting") return release();
        state = "done";
        const q = flows.get(flow)!;
        q.splice(q.indexOf(go), 1);
        waiting--;
        if (q.length) return;
        flows.delete(flow);
        turns.splice(turns.indexOf(flow), 1);
      };
    },
    stats: () => ({ running, waiting }),
  };
}
