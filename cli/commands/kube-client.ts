// The CLI's way to the control plane: the kubeconfig it is pointed at (--kubeconfig, else
// KUBECONFIG's first file, else <state>/kubeconfig) read for its current context's server,
// CA and credential (a token, or a client certificate), and plain JSON requests with them.
import { readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";

const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Where `npm start` keeps its state: EDGEPLANE_STATE_DIR, else the package's .edgeplane. */
export function stateDir(): string {
  return process.env.EDGEPLANE_STATE_DIR || join(PACKAGE_ROOT, ".edgeplane");
}

export interface KubeTarget {
  /** the server URL without a trailing slash */
  server: string;
  ca?: string;
  insecure: boolean;
  token?: string;
  cert?: string;
  key?: string;
  /** the kubeconfig file it came from */
  path: string;
}

/** Takes `--kubeconfig <path>` / `--kubeconfig=<path>` out of args. */
export function takeKubeconfigFlag(args: string[]): { path?: string; rest: string[] } {
  const rest: string[] = [];
  let path: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--kubeconfig") path = args[++i];
    else if (a.startsWith("--kubeconfig=")) path = a.slice("--kubeconfig=".length);
    else rest.push(a);
  }
  return { path, rest };
}

function fileOrData(base: string, data: unknown, file: unknown): string | undefined {
  if (typeof data === "string" && data) return Buffer.from(data, "base64").toString("utf8");
  if (typeof file === "string" && file) return readFileSync(resolve(base, file), "utf8");
  return undefined;
}

export function loadKubeconfig(flag?: string): KubeTarget {
  const path =
    flag || (process.env.KUBECONFIG ?? "").split(delimiter).find((p) => p) || join(stateDir(), "kubeconfig");
  let doc: any;
  try {
    doc = parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new Error(`cannot read kubeconfig ${path}: ${(e as Error).message}`);
  }
  const byName = (list: unknown, name: string) =>
    (Array.isArray(list) ? list : []).find((x: any) => x?.name === name);
  const ctxName = doc?.["current-context"] ?? doc?.contexts?.[0]?.name;
  const ctx = byName(doc?.contexts, ctxName)?.context ?? {};
  const cluster = byName(doc?.clusters, ctx.cluster)?.cluster ?? doc?.clusters?.[0]?.cluster;
  const user = byName(doc?.users, ctx.user)?.user ?? {};
  if (!cluster?.server) throw new Error(`kubeconfig ${path}: no server for context "${ctxName}"`);
  const base = dirname(path);
  return {
    server: String(cluster.server).replace(/\/+$/, ""),
    ca: fileOrData(base, cluster["certificate-authority-data"], cluster["certificate-authority"]),
    insecure: cluster["insecure-skip-tls-verify"] === true,
    token: typeof user.token === "string" ? user.token : undefined,
    cert: fileOrData(base, user["client-certificate-data"], user["client-certificate"]),
    key: fileOrData(base, user["client-key-data"], user["client-key"]),
    path,
  };
}

export interface Reply {
  status: number;
  json: any;
  text: string;
}

export function call(t: KubeTarget, method: string, path: string, body?: unknown): Promise<Reply> {
  const url = new URL(t.server + path);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = { accept: "application/json" };
  if (t.token) headers.authorization = `Bearer ${t.token}`;
  if (payload !== undefined) headers["content-type"] = "application/json";
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolvePromise, reject) => {
    const req = send(
      url,
      { method, headers, ca: t.ca, cert: t.cert, key: t.key, rejectUnauthorized: !t.insecure },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (text += d));
        res.on("end", () => {
          let json: any;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolvePromise({ status: res.statusCode ?? 0, json, text });
        });
      },
    );
    req.setTimeout(60_000, () => req.destroy(new Error(`${method} ${path}: timed out`)));
    req.on("error", reject);
    req.end(payload);
  });
}

/** A failed answer in a user's words: the Status message when there is one. */
export function failureMessage(r: Reply): string {
  return r.json?.kind === "Status" && r.json.message
    ? String(r.json.message)
    : `HTTP ${r.status}: ${r.text.slice(0, 200)}`;
}
