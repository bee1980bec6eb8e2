// A small JSON client for the apiserver: bearer token, keep-alive, and
// newline-delimited watch streams. Never throws on HTTP status, only on transport.
import http from "node:http";
import https from "node:https";

export interface Reply {
  status: number;
  json: any;
}

export interface ApiOptions {
  server: string;
  token?: string;
  ca?: string;
  insecure?: boolean;
  userAgent?: string;
}

export class Api {
  private readonly base: URL;
  private readonly mod: typeof http | typeof https;
  private readonly agent: http.Agent;
  private readonly watchAgent: http.Agent;
  private headers: Record<string, string>;

  constructor(opts: ApiOptions) {
    this.base = new URL(opts.server);
    const tls = this.base.protocol === "https:";
    this.mod = tls ? https : http;
    const a = {
      keepAlive: true,
      maxSockets: 16,
      ...(tls ? { ca: opts.ca, rejectUnauthorized: !opts.insecure } : {}),
    };
    this.agent = tls ? new https.Agent(a) : new http.Agent(a);
    // a watch gets a fresh connection: reusing a socket the server just closed fails with "socket hang up"
    const w = { ...a, keepAlive: false, maxSockets: 4 };
    this.watchAgent = tls ? new https.Agent(w) : new http.Agent(w);
    this.headers = { accept: "application/json", "user-agent": opts.userAgent ?? "edgelet/v1.32.0" };
    if (opts.token) this.headers.authorization = `Bearer ${opts.token}`;
  }

  /** Replaces the bearer token (after a credential exchange or rotation). */
  setToken(token: string): void {
    this.headers = { ...this.headers, authorization: `Bearer ${token}` };
  }

  get server(): string {
    return this.base.toString();
  }

  request(
    method: string,
    path: string,
    body?: unknown,
    contentType = "application/json",
    timeoutMs = 30_000,
  ): Promise<Reply> {
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
          collect(res).then((text) => resolve({ status: res.statusCode ?? 0, json: parse(text) }), reject);
        },
      );
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.on("error", reject);
      req.end(payload);
    });
  }

  get(path: string): Promise<Reply> {
    return this.request("GET", path);
  }

  mergePatch(path: string, patch: unknown): Promise<Reply> {
    return this.request("PATCH", path, patch, "application/merge-patch+json");
  }

  /** Streams a watch; onEvent per frame. Resolves with the HTTP status when the stream ends. */
  watch(
    path: string,
    onEvent: (ev: any) => void,
    signal: AbortSignal,
  ): Promise<{ status: number; body?: any }> {
    return new Promise((resolve, reject) => {
      const req = this.mod.request(
        new URL(path, this.base),
        { method: "GET", headers: this.headers, agent: this.watchAgent, signal },
        (res) => {
          if (res.statusCode !== 200) {
            collect(res).then((t) => resolve({ status: res.statusCode ?? 0, body: parse(t) }), reject);
            return;
          }
          let buf = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            buf += chunk;
            for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
              const line = buf.slice(0, nl).trim();
              buf = buf.slice(nl + 1);
              const ev = line ? parse(line) : undefined;
              if (ev) onEvent(ev);
            }
          });
          res.on("end", () => resolve({ status: 200 }));
          res.on("aborted", () => resolve({ status: 200 }));
          res.on("error", (e) => (signal.aborted ? resolve({ status: 200 }) : reject(e)));
        },
      );
      req.on("error", (e) => (signal.aborted ? resolve({ status: 0 }) : reject(e)));
      req.end();
    });
  }

  close(): void {
    this.agent.destroy();
    this.watchAgent.destroy();
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

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = () => {
      clearTimeout(t);
      resolve();
    };
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

export function errorText(r: Reply): string {
  return `${r.status} ${r.json?.reason ?? ""} ${r.json?.message ?? ""}`.trim();
}

export const enc = encodeURIComponent;
