// The agent's side of an HTTP stream (api/wire/node-tunnel.ts, kind "http"): one HTTPS request
// to an address this node reaches (an extension API server's pod), its response head carried in
// the REPLY and its body streamed back as DATA frames until CLOSE. The apiserver's aggregator
// uses it, so extension servers on nodes behind NAT are reachable.
import http from "node:http";
import https from "node:https";
import type { HttpRequest, HttpResponseHead } from "../../api/wire/node-tunnel";
import { failure, reachFailure } from "../../api/wire/node-tunnel";
import { OpenError, type StreamIO } from "./handlers";

const DEFAULT_TIMEOUT_MS = 30_000;

/** Node's request headers from ordered pairs (a repeated name becomes an array). */
function headerObject(pairs: [string, string][]): http.OutgoingHttpHeaders {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of pairs) {
    const name = k.toLowerCase();
    const have = out[name];
    if (have === undefined) out[name] = v;
    else out[name] = Array.isArray(have) ? [...have, v] : [have, v];
  }
  return out;
}

/** The response's headers as ordered pairs (rawHeaders keeps repeats and order). */
function headerPairs(raw: string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([raw[i], raw[i + 1]]);
  return out;
}

/**
 * Sends the request and waits for the response's head; the returned start() streams the body.
 * A connection or TLS failure is an OpenError (503, upstream's "error trying to reach service").
 */
export function openHttp(
  req: HttpRequest,
  io: StreamIO,
): Promise<{ response: HttpResponseHead; start: () => void }> {
  if (
    !req.host ||
    !Number.isInteger(req.port) ||
    req.port < 1 ||
    req.port > 65535 ||
    !req.path.startsWith("/")
  )
    return Promise.reject(new OpenError(failure(400, "BadRequest", "malformed http stream request")));
  const body = req.body ? Buffer.from(req.body, "base64") : undefined;
  const headers = headerObject(req.headers ?? []);
  if (body) headers["content-length"] = String(body.length);
  const common = { host: req.host, port: req.port, method: req.method, path: req.path, headers };
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (e: OpenError) => {
      if (settled) return;
      settled = true;
      reject(e);
    };
    const out = req.tls
      ? https.request({
          ...common,
          servername: req.tls.serverName,
          ca: req.tls.ca || undefined,
          rejectUnauthorized: !req.tls.insecureSkipTLSVerify,
          agent: false,
        })
      : http.request({ ...common, agent: false });
    const timer = setTimeout(() => {
      fail(new OpenError(reachFailure(`timeout awaiting response headers from ${req.host}:${req.port}`)));
      out.destroy();
    }, req.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    io.signal.addEventListener("abort", () => out.destroy(), { once: true });
    out.on("error", (e) => {
      clearTimeout(timer);
      if (!settled) fail(new OpenError(reachFailure((e as Error).message)));
      else io.close((e as Error).message);
    });
    out.on("response", (res) => {
      clearTimeout(timer);
      if (settled) {
        res.destroy();
        return;
      }
      settled = true;
      res.pause();
      resolve({
        response: { status: res.statusCode ?? 502, headers: headerPairs(res.rawHeaders) },
        start: () => {
          res.on("data", (chunk: Buffer) => io.send(new Uint8Array(chunk)));
          res.on("end", () => io.close());
          res.on("error", (e) => io.close(e.message));
          res.on("aborted", () => io.close("the extension server ended the response early"));
          res.resume();
        },
      });
    });
    out.end(body);
  });
}
