// The apiserver side of the api-store benchmark: a fresh local control plane per run, and the
// measurements (creates, gets, lists, watches, per-request floors) against it.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type * as DevServer from "../../local-engine/devserver";
import {
  expectStatus,
  h2Session,
  keepAliveAgent,
  openH2LineStream,
  openLineStream,
  request,
  type Target,
} from "./http";
import { nameWithPrefix, podBody } from "./pods";
import { REPO_ROOT } from "./report";
import { closedLoop, type LoadResult, type Summary, summarize } from "./stats";
import { measureWatchLatency, type WatchResult } from "./watch-latency";

export interface ApiServer {
  /** The engine's own port: no front door in between. */
  direct: Target;
  /** The front door (plain HTTP side) that `npm start` users and kubectl go through. */
  front: Target;
  /**
   * The socket of the workerd that runs the Worker itself, behind wrangler's own proxy
   * workerd on the dev port (EDGEPLANE_DEV_ENGINE=wrangler): probed only with BENCH_WORKER_PORT=1,
   * undefined otherwise or when not found.
   */
  worker?: Target;
  /** Process group of the engine and its workerd (for CPU accounting). */
  pgid: number;
  /** The admin kubeconfig (https, the local CA) the engine wrote. */
  kubeconfigPath: string;
  stop(): Promise<void>;
}

/** What the Worker build needs; tests, bench, state and node_modules (linked) stay out. */
const SOURCES = [
  "api",
  "workers",
  "durable-objects",
  "migrations",
  "scripts",
  "local-engine",
  "agent",
  "wrangler.toml",
  "package.json",
  "tsconfig.json",
  "env.d.ts",
];

/**
 * A copy of the Worker's sources in `dir`: the engine builds the Worker from the tree at
 * start, so edits made meanwhile must not mix into a run. BENCH_LIVE_TREE=1 runs the live tree instead.
 */
export function snapshotSources(dir: string): string {
  if (process.env.BENCH_LIVE_TREE === "1") return REPO_ROOT;
  const root = join(dir, "src");
  for (const name of SOURCES) {
    const from = join(REPO_ROOT, name);
    if (existsSync(from))
      cpSync(from, join(root, name), { recursive: true, filter: (f) => !f.includes("node_modules") });
  }
  symlinkSync(join(REPO_ROOT, "node_modules"), join(root, "node_modules"));
  return root;
}

/**
 * vars: Worker variables for the engine (e.g. a cluster CIDR wide enough for the bench's nodes);
 * engineProcesses: EDGEPLANE_ENGINE_PROCESSES for it (else the environment's, else the default);
 * inspectorPort: workerd's DevTools inspector there (for a CPU profile).
 */
export async function startApiServer(
  opts: { vars?: Record<string, string>; engineProcesses?: number; inspectorPort?: number } = {},
): Promise<ApiServer> {
  const dir = mkdtempSync(join(tmpdir(), "edgeplane-bench-"));
  const root = snapshotSources(dir);
  const dev = (await import(pathToFileURL(join(root, "local-engine/devserver.ts")).href)) as typeof DevServer;
  const stateDir = join(dir, "state");
  let s: Awaited<ReturnType<typeof dev.startDevServer>>;
  try {
    s = await dev.startDevServer({
      stateDir,
      quiet: true,
      vars: opts.vars,
      engineProcesses: opts.engineProcesses,
      inspectorPort: opts.inspectorPort,
    });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const pgid = s.child.pid as number;
  const killOnSignal = () => {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {}
    rmSync(dir, { recursive: true, force: true });
    process.exit(130);
  };
  process.once("SIGINT", killOnSignal);
  process.once("SIGTERM", killOnSignal);
  const headers = {
    authorization: `Bearer ${s.token}`,
    "content-type": "application/json",
    accept: "application/json",
  };
  // only for the opt-in figures (BENCH_WORKER_PORT=1, meaningful under EDGEPLANE_DEV_ENGINE=wrangler)
  const workerPort = process.env.BENCH_WORKER_PORT === "1" ? await findWorkerPort(pgid) : undefined;
  return {
    direct: { host: "127.0.0.1", port: s.internalPort, headers },
    front: { host: "127.0.0.1", port: s.port, headers },
    worker: workerPort ? { host: "127.0.0.1", port: workerPort, headers } : undefined,
    pgid,
    kubeconfigPath: s.kubeconfigPath,
    stop: async () => {
      process.off("SIGINT", killOnSignal);
      process.off("SIGTERM", killOnSignal);
      await s.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The listening port of the user workerd in the group (wrangler starts it with an inspector)
 * that answers /healthz: its entry socket, one hop nearer than wrangler's dev port.
 */
async function findWorkerPort(pgid: number): Promise<number | undefined> {
  let listing: string;
  try {
    listing = execFileSync("ss", ["-ltnpH"], { encoding: "utf8" });
  } catch {
    return undefined;
  }
  for (const pid of readdirSync("/proc").filter((e) => /^\d+$/.test(e))) {
    let stat: string;
    let cmd: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    const pgrp = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
    if (pgrp !== pgid || !cmd.includes("workerd") || !cmd.includes("--inspector-addr")) continue;
    const ports = listing
      .split("\n")
      .filter((l) => l.includes(`pid=${pid},`))
      .map((l) => Number(/127\.0\.0\.1:(\d+)/.exec(l)?.[1]))
      .filter((p) => p > 0);
    for (const port of ports) {
      try {
        const r = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(3000) });
        if (r.ok && (await r.text()).trim() === "ok") return port;
      } catch {}
    }
  }
  return undefined;
}

const podsPath = (ns: string) => `/api/v1/namespaces/${ns}/pods`;

export async function createNamespace(t: Target, name: string): Promise<void> {
  const agent = keepAliveAgent(1);
  const body = JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
  await expectStatus([201, 409], request(t, agent, "POST", "/api/v1/namespaces", body), "create namespace");
  agent.destroy();
}

/** Creates pods prefix-<from..from+count-1> with `clients` concurrent clients. */
export async function createPods(
  t: Target,
  ns: string,
  prefix: string,
  from: number,
  count: number,
  clients: number,
  maxSeconds?: number,
): Promise<LoadResult> {
  const agent = keepAliveAgent(clients);
  try {
    return await closedLoop(
      count,
      clients,
      async (i) => {
        const n = from + i;
        await expectStatus(
          201,
          request(t, agent, "POST", podsPath(ns), podBody(`${prefix}-${n}`, n)),
          "create pod",
        );
      },
      maxSeconds,
    );
  } finally {
    agent.destroy();
  }
}

/**
 * How many requests of one shape the server answers per second with `clients` in a closed
 * loop for `seconds`: with a request that does no work (GET /version), the runtime's own
 * ceiling on this machine, which no create (one request, and more inside) can pass.
 */
export async function requestCeiling(
  t: Target,
  status: number,
  path: (i: number) => string,
  clients: number,
  seconds: number,
): Promise<LoadResult> {
  const agent = keepAliveAgent(clients);
  try {
    return await closedLoop(
      Number.MAX_SAFE_INTEGER,
      clients,
      async (i) => {
        await expectStatus(status, request(t, agent, "GET", path(i)), `GET ${path(i)}`);
      },
      seconds,
    );
  } finally {
    agent.destroy();
  }
}

/** Sequential latency of one request shape (one client, keep-alive), after 5 warm-ups. */
export async function sequential(
  t: Target,
  n: number,
  status: number,
  method: string,
  path: (i: number) => string,
  body?: (i: number) => string,
  headers?: Record<string, string>,
): Promise<Summary & { bytes: number }> {
  const agent = keepAliveAgent(1);
  const samples: number[] = [];
  let bytes = 0;
  try {
    for (let i = -5; i < n; i++) {
      const t0 = performance.now();
      const r = await expectStatus(
        status,
        request(t, agent, method, path(i + 5), body?.(i + 5), headers),
        `${method} ${path(i + 5)}`,
      );
      if (i >= 0) samples.push(performance.now() - t0);
      bytes = r.body.length;
    }
  } finally {
    agent.destroy();
  }
  return { ...summarize(samples), bytes };
}

/**
 * Runs `work` while a second client sends GET `path` every `everyMs`, one at a time: how long
 * a small request waits while big ones (whole lists) are served.
 */
export async function probeDuring<T>(
  t: Target,
  path: string,
  work: () => Promise<T>,
  everyMs = 5,
): Promise<{ result: T; probe: Summary }> {
  const agent = keepAliveAgent(1);
  const samples: number[] = [];
  let done = false;
  const probing = (async () => {
    while (!done) {
      const t0 = performance.now();
      await expectStatus(200, request(t, agent, "GET", path), `GET ${path}`);
      samples.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  try {
    return { result: await work(), probe: summarize(samples) };
  } finally {
    done = true;
    await probing;
    agent.destroy();
  }
}

/** Lists with limit=pageSize following `continue` to the end; per-page latency and the walk. */
export async function pagedWalks(
  t: Target,
  ns: string,
  pageSize: number,
  walks: number,
): Promise<{ page: Summary; walk: Summary; items: number }> {
  const agent = keepAliveAgent(1);
  const pages: number[] = [];
  const totals: number[] = [];
  let items = 0;
  try {
    for (let w = 0; w < walks; w++) {
      const start = performance.now();
      let cont = "";
      items = 0;
      do {
        const q = `?limit=${pageSize}${cont ? `&continue=${encodeURIComponent(cont)}` : ""}`;
        const t0 = performance.now();
        const r = await expectStatus(200, request(t, agent, "GET", podsPath(ns) + q), "list page");
        pages.push(performance.now() - t0);
        const list = JSON.parse(r.body) as { items: unknown[]; metadata: { continue?: string } };
        items += list.items.length;
        cont = list.metadata.continue ?? "";
      } while (cont);
      totals.push(performance.now() - start);
    }
  } finally {
    agent.destroy();
  }
  return { page: summarize(pages), walk: summarize(totals), items };
}

/** The collection's current resourceVersion (a list with limit=1). */
async function listRv(t: Target, ns: string): Promise<string> {
  const agent = keepAliveAgent(1);
  const r = await expectStatus(200, request(t, agent, "GET", `${podsPath(ns)}?limit=1`), "list rv");
  agent.destroy();
  return (JSON.parse(r.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
}

/**
 * N HTTP watches on the pods of `ns` (from the current resourceVersion), over an HTTP/1.1
 * connection each, or with "h2" as streams of one HTTP/2 connection (as client-go watches,
 * and as the etcd side's gRPC watches share one channel); each event is a pod create sent
 * by a separate keep-alive client.
 */
export async function apiWatchLatency(
  t: Target,
  ns: string,
  watchers: number,
  events: number,
  maxSeconds?: number,
  prefix = `bw${watchers}`,
  transport: "h1" | "h2" = "h1",
): Promise<WatchResult> {
  const rv = await listRv(t, ns);
  const writer = keepAliveAgent(1);
  const session = transport === "h2" ? h2Session(t) : undefined;
  const path = `${podsPath(ns)}?watch=1&resourceVersion=${rv}`;
  let seq = 0;
  try {
    return await measureWatchLatency(
      {
        open: (_i, deliver) => {
          const onLine = (line: string, at: number) => {
            const name = nameWithPrefix(line, prefix);
            if (name) deliver(name, at);
          };
          return session
            ? openH2LineStream(session, t, path, onLine)
            : openLineStream(t, "GET", path, undefined, onLine);
        },
        fire: async (id) => {
          await expectStatus(
            201,
            request(t, writer, "POST", podsPath(ns), podBody(id, seq++)),
            "watch create",
          );
        },
      },
      { watchers, events, prefix, maxSeconds },
    );
  } finally {
    writer.destroy();
    session?.destroy();
  }
}
