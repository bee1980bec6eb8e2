// A fair queue in front of workerd. Locally one workerd thread runs the Worker and every
// Durable Object, and it does not serve its connections in turn when saturated: measured, a
// request could wait seconds while requests on other connections were served again and
// again. The front door therefore lets at most `limit` ordinary requests into workerd at a
// time and admits the others as answers complete, by priority level (Level), and within a
// level clusters in turn (the root, and each one under /clusters/<name>/), within a cluster
// clients in turn (a client is its verified credential, else its source address; as
// upstream's priority and fairness queues flows by user), each client's requests in arrival
// order, so that one client with many requests at once (an HTTP/2 connection carries up to
// 1,000) does not hold up the rest, nor a cluster with many clients the other clusters. A request waits only once its head is complete (the
// front door reads heads under a deadline first). Long-running requests
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
  /** the same headers as sent (a credential's case matters) */
  rawHeaders: string;
}

/**
 * Where a request's head ends in `buf` (just after its blank line), or -1 when it has not
 * ended yet. A line may end with CRLF, or with LF alone (RFC 9112 2.2).
 */
export function headEnd(buf: Buffer): number {
  const crlf = buf.indexOf("\r\n\r\n");
  if (crlf >= 0) return crlf + 4;
  const lf = buf.indexOf("\n\n");
  return lf < 0 ? -1 : lf + 2;
}

/** A request's first line and headers, when `chunk` starts one (`end`: headEnd(chunk)). */
export function requestHead(chunk: Buffer, end = headEnd(chunk)): RequestHead | undefined {
  const head = chunk.toString("latin1", 0, end < 0 ? Math.min(chunk.length, 4096) : end).trimEnd();
  const line = /^([A-Z]+) (\S+) HTTP\/1\.([01])\r?(?:\n|$)/.exec(head);
  if (!line) return undefined;
  const rawHeaders = head.slice(line[0].length);
  return {
    method: line[1],
    target: line[2],
    version: `1.${line[3]}`,
    headers: rawHeaders.toLowerCase(),
    rawHeaders,
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

const AUTHORIZATION = /(?:^|\n)authorization: *([^\r\n]*)/;

/** The Authorization header of a request head, as sent, if any. */
export function credentialOf(head: RequestHead): string | undefined {
  const m = AUTHORIZATION.exec(head.headers);
  if (!m) return undefined;
  // lowercasing Latin-1 keeps every offset: the value as sent is at the same place
  const at = m.index + m[0].length - m[1].length;
  return head.rawHeaders.slice(at, at + m[1].length);
}

/**
 * A client of the queue: a credential ("credential <Authorization>"), or a source address
 * ("source <address>") for requests whose credential is missing or not yet verified;
 * undefined is one client for all.
 */
export type Flow = string | object | undefined;

/**
 * Priority levels, after upstream's API Priority and Fairness: each has its seats in workerd,
 * and its clients take turns within it.
 * - system: node agents and the control plane's own users (a credential the Worker named so,
 *   see api/wire/priority.ts): seats of its own, beyond `limit`, so that leases and status
 *   updates go in however many clients wait (upstream's system-node-high and system);
 * - probes: /healthz, /livez, /readyz: seats of their own (upstream exempts them);
 * - workload: every other verified credential: `limit` seats, shared with catch-all;
 * - catch-all: requests without a credential, or with one not yet verified: at most a few of
 *   the shared seats, and one client per source address, so that a crowd of connections
 *   counts as one client and never holds more than its few seats (upstream's catch-all).
 */
export type Level = "system" | "probes" | "workload" | "catch-all";

/** system's own seats (beyond the limit): a node's lease renewal never waits for a crowd */
export const SYSTEM_SEATS = 8;
export const PROBE_SEATS = 2;
/** how many of the shared seats requests without a verified credential may hold at once */
export const CATCH_ALL_SEATS = 4;

const PROBE = /^(?:\/clusters\/[^/?]+)?\/(?:healthz|livez|readyz)(?:[/?]|$)/;
const CLUSTER = /^\/clusters\/([^/?]+)/;

/** The cluster a request target names: "" for the root, else the name under /clusters/. */
export function clusterOfTarget(target: string): string {
  return CLUSTER.exec(target)?.[1] ?? "";
}

/**
 * A request's level and client, from its target, its credential and where it came from; `ask`
 * when its credential is not yet known (the Worker is asked to name its level).
 */
export function classify(
  target: string,
  authorization: string | undefined,
  source: string,
  known: CredentialLevels,
): { level: Level; flow: Flow; ask: boolean; cluster: string } {
  const level = authorization ? known.get(authorization) : undefined;
  const ask = authorization !== undefined && level === undefined;
  const cluster = clusterOfTarget(target);
  if (PROBE.test(target))
    return { level: "probes", flow: level ? authorization : `source ${source}`, ask, cluster };
  if (level) return { level, flow: `credential ${authorization}`, ask, cluster };
  return { level: "catch-all", flow: `source ${source}`, ask, cluster };
}

/**
 * Credentials the Worker has answered for, with the level it named (api/wire/priority.ts).
 * Only a credential that authenticated gets in, so its size is what real clients make it;
 * past `max` the one learned first is forgotten (it is learned again on its next request).
 */
export class CredentialLevels {
  private readonly levels = new Map<string, Level>();
  constructor(private readonly max = 10_000) {}
  get(credential: string): Level | undefined {
    return this.levels.get(credential);
  }
  learn(credential: string, level: string) {
    if (level !== "system" && level !== "workload") return;
    if (this.levels.get(credential) === level) return;
    this.levels.delete(credential);
    this.levels.set(credential, level);
    if (this.levels.size > this.max) this.levels.delete(this.levels.keys().next().value!);
  }
  /** A credential that stopped authenticating (a 401): it waits as unverified again. */
  forget(credential: string) {
    this.levels.delete(credential);
  }
  get size() {
    return this.levels.size;
  }
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
  /** ordinary requests (workload and catch-all) let into workerd at once (ADMIT_LIMIT) */
  limit?: number;
  /** how long an admitted request may hold its place before it gives it up */
  holdMs?: number;
  /** seats of the system level (SYSTEM_SEATS), of probes (PROBE_SEATS), of catch-all (CATCH_ALL_SEATS) */
  systemSeats?: number;
  probeSeats?: number;
  catchAllSeats?: number;
}

/** Gives a request's place back (or stops its wait); idempotent. */
export type Leave = () => void;

export interface AdmissionQueue {
  /**
   * Calls `admit(release)` once the request from client `flow` (one client for all when
   * undefined) of `cluster` ("" when not given: the root) at `level` (workload when not
   * given) may go in; `release` (idempotent) gives its place back and is due when its answer
   * completes. Returns a cancel for a request whose client went away while waiting.
   */
  enter(admit: (release: () => void) => void, flow?: Flow, level?: Level, cluster?: string): Leave;
  /** requests in workerd and waiting, at one level or at all */
  stats(level?: Level): { running: number; waiting: number };
}

/** One level's seats and turns. */
interface LevelQueue {
  seats: number;
  /** whether its requests also take seats of the shared `limit` */
  shared: boolean;
  running: number;
  waiting: number;
  /** each cluster's clients with requests waiting */
  clusters: Map<string, ClusterTurns>;
  /** the clusters with requests waiting, the next one to be admitted first */
  turns: string[];
}

/** One cluster's clients at one level. */
interface ClusterTurns {
  /** admit callbacks of each client's requests waiting, oldest first */
  flows: Map<Flow, (() => void)[]>;
  /** the clients with requests waiting, the next one to be admitted first */
  turns: Flow[];
}

export function admissionQueue({
  limit = ADMIT_LIMIT,
  holdMs = 2000,
  systemSeats = SYSTEM_SEATS,
  probeSeats = PROBE_SEATS,
  catchAllSeats = CATCH_ALL_SEATS,
}: AdmissionOptions = {}): AdmissionQueue {
  const level = (seats: number, shared: boolean): LevelQueue => ({
    seats,
    shared,
    running: 0,
    waiting: 0,
    clusters: new Map(),
    turns: [],
  });
  const levels: Record<Level, LevelQueue> = {
    system: level(systemSeats, false),
    probes: level(probeSeats, false),
    workload: level(limit, true),
    "catch-all": level(Math.min(catchAllSeats, limit), true),
  };
  const own = [levels.system, levels.probes];
  const shared = [levels.workload, levels["catch-all"]];
  /** requests of the shared levels in workerd */
  let sharedRunning = 0;
  /** the shared level whose turn is next when both wait */
  let sharedTurn = 0;

  const admitOne = (l: LevelQueue) => {
    const cluster = l.turns.shift()!;
    const c = l.clusters.get(cluster)!;
    const flow = c.turns.shift();
    const queue = c.flows.get(flow)!;
    const go = queue.shift()!;
    if (queue.length) c.turns.push(flow);
    else c.flows.delete(flow);
    if (c.turns.length) l.turns.push(cluster);
    else l.clusters.delete(cluster);
    l.waiting--;
    l.running++;
    if (l.shared) sharedRunning++;
    go();
  };

  const next = () => {
    for (const l of own) while (l.running < l.seats && l.turns.length) admitOne(l);
    while (sharedRunning < limit) {
      let admitted = false;
      for (let i = 0; i < shared.length && !admitted; i++) {
        const l = shared[(sharedTurn + i) % shared.length];
        if (l.turns.length && l.running < l.seats) {
          sharedTurn = (sharedTurn + i + 1) % shared.length;
          admitOne(l);
          admitted = true;
        }
      }
      if (!admitted) return;
    }
  };

  return {
    enter(admit, flow, at = "workload", cluster = "") {
      const l = levels[at];
      let state: "waiting" | "running" | "done" = "waiting";
      let timer: NodeJS.Timeout | undefined;
      const release = () => {
        if (state !== "running") return;
        state = "done";
        clearTimeout(timer);
        l.running--;
        if (l.shared) sharedRunning--;
        next();
      };
      const go = () => {
        state = "running";
        timer = setTimeout(release, holdMs);
        timer.unref?.();
        admit(release);
      };
      let c = l.clusters.get(cluster);
      if (!c) {
        l.clusters.set(cluster, (c = { flows: new Map(), turns: [] }));
        l.turns.push(cluster);
      }
      let queue = c.flows.get(flow);
      if (!queue) {
        c.flows.set(flow, (queue = []));
        c.turns.push(flow);
      }
      queue.push(go);
      l.waiting++;
      next();
      return () => {
        if (state !== "waiting") return release();
        state = "done";
        const mine = l.clusters.get(cluster)!;
        const q = mine.flows.get(flow)!;
        q.splice(q.indexOf(go), 1);
        l.waiting--;
        if (q.length) return;
        mine.flows.delete(flow);
        mine.turns.splice(mine.turns.indexOf(flow), 1);
        if (mine.turns.length) return;
        l.clusters.delete(cluster);
        l.turns.splice(l.turns.indexOf(cluster), 1);
      };
    },
    stats(at) {
      const of = at ? [levels[at]] : Object.values(levels);
      return {
        running: of.reduce((n, l) => n + l.running, 0),
        waiting: of.reduce((n, l) => n + l.waiting, 0),
      };
    },
  };
}
