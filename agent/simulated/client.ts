// A small JSON client for the apiserver, tuned for one process speaking for thousands of
// simulated nodes: keep-alive sockets, bounded concurrency with a lane for leases that a
// burst of pod writes cannot starve, and newline-delimited watch streams.
import {
  forEachLine,
  HttpEndpoint,
  parseWatchFrame,
  type Reply,
  type WatchFrame,
  type WatchResult,
} from "../lib/http";

export type { Reply };

export interface ClientOptions {
  server: string;
  token?: string;
  /** PEM CA for an https server with a private CA. */
  ca?: string;
  /** Skip TLS verification (https only). */
  insecure?: boolean;
  /** Concurrent requests at most (default 64). */
  maxInFlight?: number;
}

export type Lane = "urgent" | "normal";

/** Counters for benchmarks and tests. */
export interface ClientStats {
  requests: number;
  failures: number;
  byVerb: Record<string, number>;
  /** The latest 5xx/429/transport failure, for diagnosis. */
  lastFailure?: string;
}

export class ApiClient {
  readonly stats: ClientStats = { requests: 0, failures: 0, byVerb: {} };
  private readonly http: HttpEndpoint;
  private readonly max: number;
  private inFlight = 0;
  private readonly queues: Record<Lane, Array<() => void>> = { urgent: [], normal: [] };
  private closed = false;

  constructor(opts: ClientOptions) {
    this.max = opts.maxInFlight ?? 64;
    const headers: Record<string, string> = {
      accept: "application/json",
      "user-agent": "edgeplane-simnodes/1.0",
    };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    const requests = { keepAlive: true, maxSockets: this.max, maxFreeSockets: this.max };
    // watches hold their socket for minutes: a pool of their own
    this.http = new HttpEndpoint(
      opts.server,
      { requests, watches: { ...requests, maxSockets: 8 } },
      opts,
      headers,
    );
  }

  /** Replaces the bearer token (a node credential renewed); requests after this carry the new one. */
  setToken(token: string): void {
    this.http.headers = { ...this.http.headers, authorization: `Bearer ${token}` };
  }

  /** One request; resolves with the status and parsed body, rejects only on transport errors. */
  async request(
    method: string,
    path: string,
    body?: unknown,
    contentType = "application/json",
    lane: Lane = "normal",
    headers?: Record<string, string>,
  ): Promise<Reply> {
    await this.acquire(lane);
    try {
      return await this.send(method, path, body, contentType, headers);
    } finally {
      this.release();
    }
  }

  /**
   * Opens a watch; calls onEvent per JSON line (returning false closes the stream). Resolves
   * when the stream ends, with the status and, for a non-200 answer, its body.
   */
  watch(path: string, onEvent: (ev: WatchFrame) => boolean, signal: AbortSignal): Promise<WatchResult> {
    return this.http.watch(
      path,
      signal,
      (res, req, { resolve, reject }) => {
        let open = true;
        const deliver = (line: string) => {
          const ev = parseWatchFrame(line);
          if (ev && open && onEvent(ev) === false) {
            open = false;
            req.destroy();
            resolve({ status: 200 });
          }
        };
        const rest = forEachLine(res, deliver, () => open);
        res.on("end", () => {
          deliver(rest().trim());
          resolve({ status: 200 });
        });
        res.on("error", (e) => (open ? reject(e) : undefined));
        // a connection cut mid-stream: the caller resumes from the last resourceVersion
        res.on("close", () => resolve({ status: 200 }));
      },
      (e, { reject }) => reject(e),
    );
  }

  close(): void {
    this.closed = true;
    this.http.close();
    for (const q of Object.values(this.queues)) for (const wake of q.splice(0)) wake();
  }

  private send(
    method: string,
    path: string,
    body: unknown,
    contentType: string,
    headers?: Record<string, string>,
  ): Promise<Reply> {
    if (this.closed) return Promise.reject(new Error("client closed"));
    this.stats.requests++;
    this.stats.byVerb[method] = (this.stats.byVerb[method] ?? 0) + 1;
    return this.http.send({
      method,
      path,
      body,
      contentType,
      headers,
      timeoutMs: 30_000,
      onResponse: (status, json, text) => {
        if (status >= 500 || status === 429) {
          this.stats.failures++;
          this.stats.lastFailure = `${method} ${path}: ${status} ${json?.message ?? text.slice(0, 200)}`;
        }
      },
      onRequestError: (e) => {
        this.stats.failures++;
        this.stats.lastFailure = `${method} ${path}: ${e.message}`;
      },
    });
  }

  private acquire(lane: Lane): Promise<void> {
    if (this.inFlight < this.max) {
      this.inFlight++;
      return Promise.resolve();
    }
    return new Promise((wake) => this.queues[lane].push(wake));
  }

  private release(): void {
    const next = this.queues.urgent.shift() ?? this.queues.normal.shift();
    if (next) next();
    else this.inFlight--;
  }
}

export { sleep, withRetry } from "../lib/informer";
