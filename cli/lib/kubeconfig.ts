// Reading a kubeconfig as kubectl does, enough for the CLI's own requests: the current
// context's server, its CA, and the user's token or client certificate (inline or in files).
import { readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { parse } from "yaml";

export interface Connection {
  server: string;
  ca?: Buffer;
  insecure?: boolean;
  token?: string;
  cert?: Buffer;
  key?: Buffer;
  basic?: { username: string; password: string };
}

/** The kubeconfig path: --kubeconfig, else KUBECONFIG's first file, else <state>/kubeconfig. */
export function kubeconfigPath(flag: string | undefined): string {
  if (flag) return flag;
  const env = process.env.KUBECONFIG?.split(":").find(Boolean);
  if (env) return env;
  return join(resolve(process.env.EDGEPLANE_STATE_DIR ?? ".edgeplane"), "kubeconfig");
}

function named<T>(list: { name: string }[] | undefined, name: string, key: string): T {
  const found = (list ?? []).find((x) => x.name === name) as Record<string, unknown> | undefined;
  if (!found) throw new Error(`kubeconfig: no ${key} named "${name}"`);
  return (found[key] ?? {}) as T;
}

export function loadConnection(path: string, contextName?: string): Connection {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new Error(
      `cannot read kubeconfig ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
  const cfg = parse(text) ?? {};
  const base = dirname(path);
  const file = (p: string) => readFileSync(isAbsolute(p) ? p : join(base, p));
  const ctxName = contextName ?? cfg["current-context"];
  if (!ctxName) throw new Error(`kubeconfig ${path}: no current context`);
  const ctx = named<{ cluster: string; user?: string }>(cfg.contexts, ctxName, "context");
  const cluster = named<Record<string, any>>(cfg.clusters, ctx.cluster, "cluster");
  const user = ctx.user ? named<Record<string, any>>(cfg.users, ctx.user, "user") : {};
  if (!cluster.server) throw new Error(`kubeconfig ${path}: cluster "${ctx.cluster}" has no server`);
  const c: Connection = { server: String(cluster.server).replace(/\/+$/, "") };
  if (cluster["certificate-authority-data"])
    c.ca = Buffer.from(cluster["certificate-authority-data"], "base64");
  else if (cluster["certificate-authority"]) c.ca = file(cluster["certificate-authority"]);
  c.insecure = cluster["insecure-skip-tls-verify"] === true;
  if (user.token) c.token = String(user.token);
  else if (user.tokenFile) c.token = file(user.tokenFile).toString("utf8").trim();
  if (user["client-certificate-data"]) c.cert = Buffer.from(user["client-certificate-data"], "base64");
  else if (user["client-certificate"]) c.cert = file(user["client-certificate"]);
  if (user["client-key-data"]) c.key = Buffer.from(user["client-key-data"], "base64");
  else if (user["client-key"]) c.key = file(user["client-key"]);
  if (user.username && user.password) c.basic = { username: user.username, password: user.password };
  return c;
}

/** A GET with the connection's credentials: status and body text. */
export function get(c: Connection, path: string): Promise<{ status: number; text: string }> {
  const url = new URL(c.server + path);
  const headers: Record<string, string> = { accept: "application/json", "user-agent": "edgeplane-cli" };
  if (c.token) headers.authorization = `Bearer ${c.token}`;
  else if (c.basic)
    headers.authorization = `Basic ${Buffer.from(`${c.basic.username}:${c.basic.password}`).toString("base64")}`;
  const tls = url.protocol === "https:";
  const request = tls ? httpsRequest : httpRequest;
  return new Promise((resolvePromise, reject) => {
    const req = request(
      url,
      {
        method: "GET",
        headers,
        ...(tls ? { ca: c.ca, cert: c.cert, key: c.key, rejectUnauthorized: !c.insecure } : {}),
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (d: Buffer) => chunks.push(d));
        res.on("end", () =>
          resolvePromise({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }),
        );
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`timed out asking ${url.host}`)));
    req.on("error", reject);
    req.end();
  });
}
