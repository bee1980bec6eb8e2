// A small JSON client for the apiserver: bearer token, keep-alive, and
// newline-delimited watch streams. Never throws on HTTP status, only on transport.
import {
  forEachLine,
  HttpEndpoint,
  parseWatchFrame,
  type Reply,
  type WatchFrame,
  type WatchResult,
} from "../lib/http";

export type { Reply };

export interface ApiOptions {
  server: string;
  token?: string;
  ca?: string;
  insecure?: boolean;
  /** a client certificate and key (PEM), in place of a token */
  cert?: string;
  key?: string;
  userAgent?: string;
  /** watches held at once (default 4); more wait for a free connection */
  maxWatches?: number;
}

export class Api {
  private readonly http: HttpEndpoint;

  constructor(opts: ApiOptions) {
    const headers: Record<string, string> = {
      accept: "application/json",
      "user-agent": opts.userAgent ?? "edgelet/v1.32.0",
    };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    const requests = { keepAlive: true, maxSockets: 16 };
    // a watch gets a fresh connection: reusing a socket the server just closed fails with "socket hang up"
    const watches = { keepAlive: false, maxSockets: opts.maxWatches ?? 4 };
    this.http = new HttpEndpoint(opts.server, { requests, watches }, opts, headers);
  }

  /** Replaces the bearer token (after a credential exchange or rotation). */
  setToken(token: string): void {
    this.http.headers = { ...this.http.headers, authorization: `Bearer ${token}` };
  }

  /** Presents this client certificate from now on (a rotation). */
  setClientCertificate(cert: string, key: string): void {
    this.http.setClientCertificate(cert, key);
  }

  get server(): string {
    return this.http.base.toString();
  }

  request(
    method: string,
    path: string,
    body?: unknown,
    contentType = "application/json",
    timeoutMs = 30_000,
  ): Promise<Reply> {
    return this.http.send({ method, path, body, contentType, timeoutMs });
  }

  get(path: string): Promise<Reply> {
    return this.request("GET", path);
  }

  mergePatch(path: string, patch: unknown, headers?: Record<string, string>): Promise<Reply> {
    return this.http.send({
      method: "PATCH",
      path,
      body: patch,
      contentType: "application/merge-patch+json",
      timeoutMs: 30_000,
      headers,
    });
  }

  /** Streams a watch; onEvent per frame. Resolves with the HTTP status when the stream ends. */
  watch(path: string, onEvent: (ev: WatchFrame) => void, signal: AbortSignal): Promise<WatchResult> {
    return this.http.watch(
      path,
      signal,
      (res, _req, { resolve, reject }) => {
        forEachLine(res, (line) => {
          const ev = parseWatchFrame(line);
          if (ev) onEvent(ev);
        });
        res.on("end", () => resolve({ status: 200 }));
        res.on("aborted", () => resolve({ status: 200 }));
        res.on("error", (e) => (signal.aborted ? resolve({ status: 200 }) : reject(e)));
      },
      (e, { resolve, reject }) => (signal.aborted ? resolve({ status: 0 }) : reject(e)),
    );
  }

  close(): void {
    this.http.close();
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
