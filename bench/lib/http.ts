// Minimal HTTP client pieces for the benchmarks: one request over a keep-alive agent, and a
// long-lived streaming response read line by line (watches), over HTTP/1.1 (a connection
// each) or as streams of one HTTP/2 connection.
import http from "node:http";
import http2 from "node:http2";

export interface Target {
  host: string;
  port: number;
  headers?: Record<string, string>;
}

export interface Reply {
  status: number;
  body: string;
}

/** Keep-alive agent that holds exactly `sockets` connections (one per concurrent client). */
export function keepAliveAgent(sockets: number): http.Agent {
  return new http.Agent({
    keepAlive: true,
    maxSockets: sockets,
    maxFreeSockets: sockets,
    scheduling: "fifo",
  });
}

const REQUEST_TIMEOUT_MS = 60000;

/** For the odd request outside a measured loop: a fresh connection, closed after. */
export const oneShot = new http.Agent({ keepAlive: false });

/** One request; resolves with status and the whole body as text. */
export function request(
  target: Target,
  agent: http.Agent,
  method: string,
  path: string,
  body?: string | Buffer,
  headers: Record<string, string> = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: target.host,
        port: target.port,
        method,
        path,
        agent,
        headers: { ...target.headers, ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }),
        );
        res.on("error", reject);
      },
    );
    req.setNoDelay(true);
    req.setTimeout(REQUEST_TIMEOUT_MS, () =>
      req.destroy(new Error(`${method} ${path}: no reply in ${REQUEST_TIMEOUT_MS} ms`)),
    );
    req.on("error", reject);
    if (body !== undefined) {
      req.setHeader("content-length", Buffer.byteLength(body));
      req.end(body);
    } else req.end();
  });
}

/** Like request, but rejects unless the status is the expected one. */
export async function expectStatus(
  expected: number | number[],
  reply: Promise<Reply>,
  what: string,
): Promise<Reply> {
  const r = await reply;
  const ok = Array.isArray(expected) ? expected.includes(r.status) : r.status === expected;
  if (!ok) throw new Error(`${what}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
  return r;
}

export interface LineStream {
  close(): void;
}

/**
 * Opens a streaming request on its own connection and calls onLine(line, arrivedAt) for each
 * complete newline-terminated line; arrivedAt is performance.now() when the chunk holding
 * the line's end arrived, taken before any parsing. Resolves once response headers are in.
 */
export function openLineStream(
  target: Target,
  method: string,
  path: string,
  body: string | undefined,
  onLine: (line: string, arrivedAt: number) => void,
): Promise<LineStream> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: target.host, port: target.port, method, path, agent: false, headers: { ...target.headers } },
      (res) => {
        if (res.statusCode !== 200) {
          let text = "";
          res.on("data", (c) => (text += c));
          res.on("end", () =>
            reject(new Error(`stream ${path}: HTTP ${res.statusCode} ${text.slice(0, 300)}`)),
          );
          return;
        }
        res.setEncoding("utf8");
        res.on("data", lineReader(onLine));
        res.on("error", () => undefined);
        resolve({ close: () => req.destroy() });
      },
    );
    req.setNoDelay(true);
    req.on("error", reject);
    if (body !== undefined) {
      req.setHeader("content-length", Buffer.byteLength(body));
      req.end(body);
    } else req.end();
  });
}

/** A 'data' listener (utf8 chunks) that calls onLine with each complete non-empty line. */
export function lineReader(onLine: (line: string, arrivedAt: number) => void): (chunk: string) => void {
  let pending = "";
  return (chunk) => {
    const t = performance.now();
    pending += chunk;
    let nl = pending.indexOf("\n");
    while (nl >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (line.trim() !== "") onLine(line, t);
      nl = pending.indexOf("\n");
    }
  };
}

/**
 * One plain HTTP/2 connection (prior knowledge) to `target`, for many streams at once: how
 * client-go carries all of a process's watches, and how gRPC carries etcd's.
 */
export function h2Session(target: Target): http2.ClientHttp2Session {
  // windows as Go's HTTP/2 client (client-go) opens them: 4 MiB per stream, 1 GiB for the
  // connection (Node's default 64 KiB would hold a 1,000-watcher event at window updates)
  const session = http2.connect(`http://${target.host}:${target.port}`, {
    settings: { initialWindowSize: 4 << 20 },
  });
  session.once("connect", () => session.setLocalWindowSize(1 << 30));
  session.on("error", () => undefined);
  return session;
}

/** A GET on `path` as a stream of `session`, read line by line (see openLineStream). */
export function openH2LineStream(
  session: http2.ClientHttp2Session,
  target: Target,
  path: string,
  onLine: (line: string, arrivedAt: number) => void,
): Promise<LineStream> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ":method": "GET", ":path": path, ...target.headers });
    req.setEncoding("utf8");
    req.on("error", reject);
    req.on("response", (headers) => {
      const status = Number(headers[":status"]);
      if (status !== 200) {
        let text = "";
        req.on("data", (c) => (text += c));
        req.on("end", () => reject(new Error(`stream ${path}: HTTP ${status} ${text.slice(0, 300)}`)));
        return;
      }
      req.on("data", lineReader(onLine));
      resolve({ close: () => req.close() });
    });
  });
}
