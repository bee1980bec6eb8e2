// Node HTTP plumbing shared by the apiserver clients of the node agent
// (edgelet/api.ts) and of the simulated nodes (simulated/client.ts): agents,
// JSON requests that never throw on HTTP status, and newline-delimited watch streams.
import http from "node:http";
import https from "node:https";
import { noteAnswer } from "./cluster-gone";
import { type ApiBody, asApiBody } from "./kube-types";

export interface Reply {
  status: number;
  /** The decoded body when it is a JSON object. */
  json: ApiBody | undefined;
}

export interface WatchResult {
  status: number;
  body?: ApiBody;
}

/** One frame of a watch stream (metav1.WatchEvent); a frame that is no object has no type. */
export interface WatchFrame {
  type?: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object?: ApiBody;
}

export interface TlsOptions {
  /** PEM CA for an https server with a private CA. */
  ca?: string;
  /** Skip TLS verification (https only). */
  insecure?: boolean;
  /** A client certificate and its key (PEM), https only. */
  cert?: string;
  key?: string;
}

export interface Pools {
  /** Pool for ordinary requests. */
  requests: http.AgentOptions;
  /** Pool of its own for watches, which hold their socket for minutes. */
  watches: http.AgentOptions;
}

/** Per-request options of HttpEndpoint.send. */
export interface JsonRequest {
  method: string;
  path: string;
  body?: unknown;
  contentType: string;
  timeoutMs: number;
  /** extra headers of this request */
  headers?: Record<string, string>;
  /** Sees every answer, with the raw text (for diagnostics). */
  onResponse?: (status: number, json: ApiBody | undefined, text: string) => void;
  /** Sees transport errors of the request before the promise rejects. */
  onRequestError?: (e: Error) => void;
}

export type Settle = { resolve: (r: WatchResult) => void; reject: (e: unknown) => void };

/** One apiserver: base URL, the protocol's module, connection pools and default headers. */
export class HttpEndpoint {
  readonly base: URL;
  private readonly mod: typeof http | typeof https;
  private agent: http.Agent;
  private watchAgent: http.Agent;
  private readonly makeAgent: (opts: http.AgentOptions, tls: TlsOptions) => http.Agent;
  private readonly pools: Pools;
  private tls: TlsOptions;

  constructor(
    server: string,
    pools: Pools,
    tls: TlsOptions,
    /** Sent with every request; replace the object to change them (e.g. a new token). */
    public headers: Record<string, string>,
  ) {
    this.base = new URL(server);
    const secure = this.base.protocol === "https:";
    this.mod = secure ? https : http;
    this.makeAgent = (opts, t) =>
      secure
        ? new https.Agent({ ...opts, ca: t.ca, cert: t.cert, key: t.key, rejectUnauthorized: !t.insecure })
        : new http.Agent(opts);
    this.agent = this.makeAgent(pools.requests, tls);
    this.watchAgent = this.makeAgent(pools.watches, tls);
    this.pools = pools;
    this.tls = tls;
  }

  /**
   * An API path under the server URL, its path prefix kept: a cluster served at
   * https://host/clusters/<name> is asked at /clusters/<name>/api/... (docs/clusters.md).
   */
  url(path: string): URL {
    const prefix = this.base.pathname.replace(/\/+$/, "");
    return new URL(prefix && path.startsWith("/") ? `${prefix}${path}` : path, this.base);
  }

  /** One request with a JSON (or string) body; resolves with status and parsed body, rejects on transport errors. */
  send(r: JsonRequest): Promise<Reply> {
    const payload =
      r.body === undefined ? undefined : typeof r.body === "string" ? r.body : JSON.stringify(r.body);
    const headers: Record<string, string> = { ...this.headers, ...r.headers };
    if (payload !== undefined) {
      headers["content-type"] = r.contentType;
      headers["content-length"] = String(Buffer.byteLength(payload));
    }
    const attempt = (retried: boolean): Promise<Reply> =>
      new Promise((resolve, reject) => {
        let answered = false;
        const req = this.mod.request(
          this.url(r.path),
          { method: r.method, headers, agent: this.agent },
          (res) => {
            answered = true;
            collect(res).then((text) => {
              const status = res.statusCode ?? 0;
              const json = asApiBody(parseJson(text));
              noteAnswer(status, json);
              r.onResponse?.(status, json, text);
              resolve({ status, json });
            }, reject);
          },
        );
        req.setTimeout(r.timeoutMs, () => req.destroy(new Error(`${r.method} ${r.path}: timed out`)));
        req.on("error", (e: NodeJS.ErrnoException) => {
          // A kept-alive socket the server closed as idle just as this request went out: the
          // server never read it, so it goes again on a fresh socket, once (as Go's client does).
          if (!retried && !answered && req.reusedSocket && e.code === "ECONNRESET") {
            attempt(true).then(resolve, reject);
            return;
          }
          r.onRequestError?.(e);
          reject(e);
        });
        req.end(payload);
      });
    return attempt(false);
  }

  /**
   * Opens a watch stream (GET). A non-200 answer resolves with its status and parsed body;
   * a 200 stream is handed to `onStream`, which settles the promise. `onRequestError` decides
   * what a transport error of the request means.
   */
  watch(
    path: string,
    signal: AbortSignal,
    onStream: (res: http.IncomingMessage, req: http.ClientRequest, settle: Settle) => void,
    onRequestError: (e: Error, settle: Settle) => void,
  ): Promise<WatchResult> {
    return new Promise((resolve, reject) => {
      const settle: Settle = { resolve, reject };
      const req = this.mod.request(
        this.url(path),
        { method: "GET", headers: this.headers, agent: this.watchAgent, signal },
        (res) => {
          if (res.statusCode !== 200) {
            collect(res).then((text) => {
              const body = asApiBody(parseJson(text));
              noteAnswer(res.statusCode ?? 0, body);
              resolve({ status: res.statusCode ?? 0, body });
            }, reject);
            return;
          }
          onStream(res, req, settle);
        },
      );
      req.on("error", (e) => onRequestError(e, settle));
      req.end();
    });
  }

  /**
   * Connections from now on present this client certificate (a rotation). Requests in flight
   * finish on the old connections, which go a minute later; open watches run until they end.
   */
  setClientCertificate(cert: string, key: string): void {
    const old = this.agent;
    this.tls = { ...this.tls, cert, key };
    this.agent = this.makeAgent(this.pools.requests, this.tls);
    this.watchAgent = this.makeAgent(this.pools.watches, this.tls);
    setTimeout(() => old.destroy(), 60_000).unref();
  }

  close(): void {
    this.agent.destroy();
    this.watchAgent.destroy();
  }
}

/**
 * Feeds each complete, trimmed line of a text stream to `onLine` while `isOpen()` holds.
 * Returns a function giving the text after the last newline (an unterminated last line).
 */
export function forEachLine(
  res: http.IncomingMessage,
  onLine: (line: string) => void,
  isOpen: () => boolean = () => true,
): () => string {
  let buf = "";
  res.setEncoding("utf8");
  res.on("data", (chunk: string) => {
    buf += chunk;
    for (let nl = buf.indexOf("\n"); nl >= 0 && isOpen(); nl = buf.indexOf("\n")) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      onLine(line);
    }
  });
  return () => buf;
}

/** The whole body of a response as UTF-8 text. */
export function collect(res: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    res.on("data", (c: Buffer) => parts.push(c));
    res.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    res.on("error", reject);
  });
}

/** JSON.parse that yields undefined for empty or malformed text. */
export function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A watch stream line as a frame: an object with an object-valued `object`; undefined otherwise. */
export function parseWatchFrame(line: string): WatchFrame | undefined {
  const ev = asApiBody(line ? parseJson(line) : undefined);
  if (!ev) return undefined;
  const type = typeof ev.type === "string" ? (ev.type as WatchFrame["type"]) : undefined;
  return { type, object: asApiBody(ev.object) };
}
