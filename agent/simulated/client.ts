// A small JSON client for the apiserver, tuned for one process speaking for thousands of
// simulated nodes: keep-alive sockets, bounded concurrency with a lane for leases that a
// burst of pod writes cannot starve, and newline-delimited watch streams.
import http from "node:http";
import https from "node:https";

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

export interface Reply {
  status: number;
  json: any;
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
  private readonly base: URL;
  private readonly mod: typeof http | typeof https;
  private readonly agent: http.Agent;
  private readonly watchAgent: http.Agent;
  private readonly headers: Record<string, string>;
  private readonly max: number;
  private inFlight = 0;
  private readonly queues: Record<Lane, Array<() => void>> = { urgent: [], normal: [] };
  private closed = false;

  constructor(opts: ClientOptions) {
    this.base = new URL(opts.server);
    const tls = this.base.protocol === "https:";
    this.mod = tls ? https : http;
    this.max = opts.maxInFlight ?? 64;
    const agentOpts = {
      keepAlive: true,
      maxSockets: this.max,
      maxFreeSockets: this.max,
      ...(tls ? { ca: opts.ca, rejectUnauthorized: !opts.insecure } : {}),
    };
    this.agent = tls ? new https.Agent(agentOpts) : new http.Agent(agentOpts);
    // watches hold their socket for minutes: a pool of their own
    this.watchAgent = tls
      ? new https.Agent({ ...agentOpts, maxSockets: 8 })
      : new http.Agent({ ...agentOpts, maxSockets: 8 });
    this.headers = { accept: "application/json", "user-agent": "edgeplane-simnodes/1.0" };
    if (opts.token) this.headers.authorization = `Bearer ${opts.token}`;
  }

  /** One request; resolves with the status and parsed body, rejects only on transport errors. */
  async request(
    method: string,
    path: string,
    body?: unknown,
    contentType = "application/json",
    lane: Lane = "normal",
  ): Promise<Reply> {
    await this.acquire(lane);
    try {
      return await this.send(method, path, body, contentType);
    } finally {
      this.release();
    }
  }

  /**
   * Opens a watch; calls onEvent per JSON line (returning false closes the stream). Resolves
   * when the stream ends, with the status and, for a non-200 answer, its body.
   */
  watch(
    path: string,
    onEvent: (ev: any) => boolean,
    signal: AbortSignal,
  ): Promise<{ status: number; body?: any }> {
    return new Promise((resolve, reject) => {
      const req = this.mod.request(
        new URL(path, this.base),
        { method: "GET", headers: this.headers, agent: this.watchAgent, signal },
        (res) => {
          if (res.statusCode !== 200) {
            collect(res).then((text) => resolve({ status: res.statusCode ?? 0, body: parse(text) }), reject);
            return;
          }
          let buf = "";
          let open = true;
          const deliver = (line: string) => {
            const ev = line ? parse(line) : undefined;
            if (ev && open && onEvent(ev) === false) {
              open = false;
              req.destroy();
              resolve({ status: 200 });
            }
          };
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            buf += chunk;
            for (let nl = buf.indexOf("\n"); nl >= 0 && open; nl = buf.indexOf("\n")) {
              const line = buf.slice(0, nl).trim();
              buf = buf.slice(nl + 1);
              deliver(line);
            }
          });
          res.on("end", () => {
            deliver(buf.trim());
            resolve({ status: 200 });
          });
          res.on("error", (e) => (open ? reject(e) : undefined));
          // a connection cut mid-stream: the caller resumes from the last resourceVersion
          res.on("close", () => resolve({ status: 200 }));
        },
      );
      req.on("error", reject);
      req.end();
    });
  }

  close(): void {
    this.closed = true;
    this.agent.destroy();
    this.watchAgent.destroy();
    for (const q of Object.values(this.queues)) for (const wake of q.splice(0)) wake();
  }

  private send(method: string, path: string, body: unknown, contentType: string): Promise<Reply> {
    if (this.closed) return Promise.reject(new Error("client closed"));
    this.stats.requests++;
    this.stats.byVerb[method] = (this.stats.byVerb[method] ?? 0) + 1;
    const payload = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
    const headers: Record<string, string> = { ...this.headers };
    if (payload !== undefined) {
      headers["content-type"] = contentType;
      headers["content-length"] = String(Buffer.byteLength(payload));
    }
    return new Promise((resolve, reject) => {
      const req = this.mod.request(
        new URL(path, this.base),
        { method, headers, agent: this.agent },
        (res) => {
          collect(res).then((text) => {
            const status = res.statusCode ?? 0;
            const json = parse(text);
            if (status >= 500 || status === 429) {
              this.stats.failures++;
              this.stats.lastFailure = `${method} ${path}: ${status} ${json?.message ?? text.slice(0, 200)}`;
            }
            resolve({ status, json });
          }, reject);
        },
      );
      req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.on("error", (e) => {
        this.stats.failures++;
        this.stats.lastFailure = `${method} ${path}: ${e.message}`;
        reject(e);
      });
      req.end(payload);
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

function collect(res: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    res.on("data", (c: Buffer) => parts.push(c));
    res.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    res.on("error", reject);
  });
}

function parse(text: string): any {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Retries transport errors, 5xx and 429 with capped exponential backoff. */
export async function withRetry(
  fn: () => Promise<Reply>,
  opts: { attempts?: number; baseMs?: number; stopped?: () => boolean } = {},
): Promise<Reply> {
  const attempts = opts.attempts ?? 6;
  let delay = opts.baseMs ?? 200;
  for (let i = 1; ; i++) {
    try {
      const r = await fn();
      if ((r.status < 500 && r.status !== 429) || i >= attempts || opts.stopped?.()) return r;
    } catch (e) {
      if (i >= attempts || opts.stopped?.()) throw e;
    }
    await sleep(delay * (0.8 + Math.random() * 0.4));
    delay = Math.min(delay * 2, 5000);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
