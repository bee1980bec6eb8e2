// A private single-node etcd (Debian's etcd-server, 3.4) on free loopback ports with a temp
// data dir, and a minimal v3 client over etcd's JSON gRPC gateway (HTTP/1.1, keep-alive):
// KV.Put as POST /v3/kv/put, Watch as a streaming POST /v3/watch, keys/values base64.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import type http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, onFreePorts } from "../../local-engine/devserver";
import { expectStatus, type LineStream, openLineStream, request, type Target } from "./http";
import { sleep } from "./stats";

export const ETCD_BIN = "/usr/bin/etcd";

/** Installs Debian's etcd-server (as root) when /usr/bin/etcd is missing. */
export function ensureEtcdInstalled(): void {
  if (existsSync(ETCD_BIN)) return;
  console.log("etcd: /usr/bin/etcd missing, running apt-get install -y etcd-server");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  let r = spawnSync("apt-get", ["install", "-y", "etcd-server"], { stdio: "inherit", env });
  if (r.status !== 0) {
    spawnSync("apt-get", ["update"], { stdio: "inherit", env });
    r = spawnSync("apt-get", ["install", "-y", "etcd-server"], { stdio: "inherit", env });
  }
  if (r.status !== 0 || !existsSync(ETCD_BIN)) throw new Error("could not install etcd-server");
}

export interface Etcd {
  target: Target;
  version: string;
  stop(): Promise<void>;
}

/**
 * Starts etcd in its own process group; resolves once /health answers. When a port probed
 * free was taken before etcd bound it, etcd exits and is started again on others.
 */
export function startEtcd(): Promise<Etcd> {
  return onFreePorts(startEtcdOnce);
}

async function startEtcdOnce(): Promise<Etcd> {
  ensureEtcdInstalled();
  const dataDir = mkdtempSync(join(tmpdir(), "edgeplane-bench-etcd-"));
  const clientPort: number = await freePort();
  const peerPort: number = await freePort();
  const client = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const args = [
    "--name=bench",
    `--data-dir=${join(dataDir, "data")}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=bench=${peer}`,
    "--initial-cluster-state=new",
    "--logger=zap",
    "--log-level=error",
    "--quota-backend-bytes=4294967296",
  ];
  const child: ChildProcess = spawn(ETCD_BIN, args, { stdio: ["ignore", "ignore", "pipe"], detached: true });
  let output = "";
  child.stderr?.on("data", (d) => (output = (output + d).slice(-5000)));
  let exited = false;
  child.on("exit", () => (exited = true));
  const target: Target = { host: "127.0.0.1", port: clientPort };
  const deadline = Date.now() + 20000;
  for (;;) {
    if (exited) {
      rmSync(dataDir, { recursive: true, force: true });
      throw new Error(`etcd exited early:\n${output}`);
    }
    try {
      const r = await fetch(`${client}/health`);
      if (r.ok && ((await r.json()) as { health?: string }).health === "true") break;
    } catch {}
    if (Date.now() > deadline) {
      process.kill(-(child.pid as number), "SIGKILL");
      throw new Error(`etcd did not become healthy:\n${output}`);
    }
    await sleep(100);
  }
  const version =
    ((await (await fetch(`${client}/version`)).json()) as { etcdserver?: string }).etcdserver ?? "?";
  const killOnSignal = () => {
    try {
      process.kill(-(child.pid as number), "SIGKILL");
    } catch {}
    rmSync(dataDir, { recursive: true, force: true });
    process.exit(130);
  };
  process.once("SIGINT", killOnSignal);
  process.once("SIGTERM", killOnSignal);
  const stop = async () => {
    process.off("SIGINT", killOnSignal);
    process.off("SIGTERM", killOnSignal);
    if (!exited) {
      const done = new Promise((r) => child.on("exit", r));
      try {
        process.kill(-(child.pid as number), "SIGTERM");
      } catch {}
      const t = setTimeout(() => {
        try {
          process.kill(-(child.pid as number), "SIGKILL");
        } catch {}
      }, 3000);
      await done;
      clearTimeout(t);
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { target, version, stop };
}

const b64 = (s: string | Buffer): string => Buffer.from(s).toString("base64");

/** KV.Put through the gateway; resolves with the new revision. */
export async function etcdPut(
  etcd: Etcd,
  agent: http.Agent,
  key: string,
  value: string | Buffer,
): Promise<number> {
  const body = JSON.stringify({ key: b64(key), value: b64(value) });
  const r = await expectStatus(200, request(etcd.target, agent, "POST", "/v3/kv/put", body), "etcd put");
  return Number((JSON.parse(r.body) as { header?: { revision?: string } }).header?.revision ?? 0);
}

const KEY_FIELD = '"key":"';

interface WatchLine {
  result?: { created?: boolean };
  error?: unknown;
}

/**
 * Watch.Watch on every key under `prefix` through the gateway. Calls onKey(key, arrivedAt)
 * per event; resolves once etcd confirmed the watch was created.
 */
export function etcdWatchPrefix(
  etcd: Etcd,
  prefix: string,
  onKey: (key: string, arrivedAt: number) => void,
): Promise<LineStream> {
  const end = Buffer.from(prefix);
  end[end.length - 1] = (end[end.length - 1] as number) + 1;
  const body = JSON.stringify({ create_request: { key: b64(prefix), range_end: b64(end) } });
  return new Promise((resolve, reject) => {
    let stream: LineStream | undefined;
    let created = false;
    const timer = setTimeout(() => {
      stream?.close();
      reject(new Error("etcd watch: not created within 10s"));
    }, 10000);
    openLineStream(etcd.target, "POST", "/v3/watch", body, (line, t) => {
      if (!created) {
        const msg = JSON.parse(line) as WatchLine;
        if (msg.error) reject(new Error(`etcd watch: ${JSON.stringify(msg.error)}`));
        if (msg.result?.created) {
          created = true;
          clearTimeout(timer);
          if (stream) resolve(stream);
        }
      }
      // Events: the keys are read without parsing the whole line (values are ~2 KB of base64),
      // the same cheap scan the apiserver watchers use, so client cost is alike on both sides.
      let at = line.indexOf(KEY_FIELD);
      while (at >= 0) {
        const start = at + KEY_FIELD.length;
        const end = line.indexOf('"', start);
        onKey(Buffer.from(line.slice(start, end), "base64").toString("utf8"), t);
        at = line.indexOf(KEY_FIELD, end);
      }
    }).then((s) => {
      stream = s;
      if (created) resolve(s);
    }, reject);
  });
}
