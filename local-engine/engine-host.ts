// The local engine: the deploy bundle (wrangler's own build) run on workerd through Miniflare,
// with the Durable Objects on SQLite under the state dir, exactly as `wrangler dev` would run
// it but without wrangler's proxy workerd and DevTools inspector in the request path (~0.9 ms
// of CPU per request, and most of the CPU of a watch event's fan-out; see bench/api-store.ts).
//
//   node --import tsx local-engine/engine-host.ts CONFIG.json
// CONFIG: { bundleDir, persistDir, host, port, bindings, logLevel, inspectorPort,
//           front: { port, cert, key }, crons, cronSeconds }
// Cron triggers run as on Cloudflare: "* * * * *" at the start of every minute (or every
// cronSeconds), through the Worker's scheduled handler; other expressions are not run.
// With `front`, this process also serves the front door (front-door.ts) on that port,
// forwarding to workerd over a Unix socket (EDGEPLANE_FRONT_UPSTREAM=tcp: over workerd's TCP
// port instead, for comparison) and relaying watches (watch-relay.ts). Prints "ready <url>" once
// workerd answers; SIGTERM/SIGINT dispose of workerd and exit.
//
// It keeps workerd alive: when workerd dies (a crash, kill -9), it is started again over the
// same state, after a backoff that grows with each crash in a row, and meanwhile the front
// door answers 503 (workerd's SQLite is durable: an acknowledged write survives). Nothing it
// starts outlives it: workerd gets SIGKILL when this process dies, however it dies
// (PR_SET_PDEATHSIG, through setpriv), and with `launcherFd` this process exits when its
// launcher does (the launcher holds the other end of that pipe: its close, at any death of the
// launcher, is an end of file here).
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import readline from "node:readline";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { Log, LogLevel, Miniflare, type MiniflareOptions } from "miniflare";
import { type Bundle, type BundleManifest, MANIFEST } from "./bundle";
import { type FrontDoor, startFront } from "./front-door";
import { portInUse } from "./port-owner";
import { frontWorkers, hostWorkers } from "./store-hosts";

/** CONFIG.json, as devserver.ts writes it. */
export interface EngineConfig extends Bundle {
  /** the Worker's name (edgeplane) */
  name?: string;
  /** where the Durable Objects keep their SQLite files */
  persistDir: string;
  /** where workerd serves the Worker directly (the front door's upstream over TCP) */
  host: string;
  port: number;
  /** the Worker's vars and secrets, over wrangler.toml's */
  bindings?: Record<string, string>;
  /** error, warn, info or debug (another: warn) */
  logLevel: string;
  /** DevTools, for profiling; off when not given */
  inspectorPort?: number;
  /** the front door to serve, its serving certificate and key, and its client CAs (PEM) */
  front?: { port: number; cert: string; key: string; clientCa?: string };
  /** wrangler.toml's cron triggers */
  crons?: string[];
  /** the period of "* * * * *" in seconds (60), for tests */
  cronSeconds?: number;
  /** a pipe from the launcher on this fd: its end means the launcher is gone, and so this goes */
  launcherFd?: number;
  /**
   * EDGEPLANE_ENGINE_PROCESSES > 1: the store shards live in `count` workerd processes of their
   * own (store-hosts.ts), host i's SQLite under `<dir>/<i>`; the rest stays in this one's
   */
  storeHosts?: { count: number; dir: string };
}

const config: EngineConfig = JSON.parse(readFileSync(process.argv[2], "utf8"));

/** A Unix socket path for workerd: beside the state when that is short enough (108 bytes). */
function unixSocketPath({ persistDir }: EngineConfig): { base: string; path: string } {
  const inState = join(persistDir, "..", "engine.sock");
  const base =
    inState.length < 96 ? inState : join(tmpdir(), `edgeplane-${randomBytes(6).toString("hex")}.sock`);
  const path = `${base}:0`;
  rmSync(path, { force: true }); // left by an engine that was killed
  return { base, path };
}
// wrangler.toml's options and the module list, written beside the bundle when it was built
const { workerOptions, modules }: BundleManifest = JSON.parse(
  readFileSync(join(config.bundleDir, MANIFEST), "utf8"),
);

// The front door reaches workerd over a Unix socket: each request and each watch event
// crosses it, and a Unix socket costs both sides less system time per write than TCP over
// loopback does. Miniflare writes a socket's address as host:port, so workerd listens on
// `<base>:0`. The TCP port stays for the benchmark's engine rows.
const frontSocket =
  config.front && process.env.EDGEPLANE_FRONT_UPSTREAM !== "tcp" ? unixSocketPath(config) : undefined;

// The front door relays watches (watch-relay.ts) with a secret it shares with the Worker, made
// afresh at each start unless the bindings bring one (tests that speak to the engine port do);
// EDGEPLANE_RELAY=off serves each watch as a stream of its own, for comparison.
const relaySecret =
  config.front && process.env.EDGEPLANE_RELAY !== "off"
    ? (config.bindings?.EDGEPLANE_RELAY_SECRET ?? randomBytes(32).toString("hex"))
    : undefined;

// The front door asks the Worker to name the priority level of each credential it has not
// seen answered (api/wire/priority.ts), with a secret of their own, made as the relay's is.
const frontSecret = config.front
  ? (config.bindings?.EDGEPLANE_FRONT_SECRET ?? randomBytes(32).toString("hex"))
  : undefined;

const levels: Record<string, LogLevel> = {
  error: LogLevel.ERROR,
  warn: LogLevel.WARN,
  info: LogLevel.INFO,
  debug: LogLevel.DEBUG,
};

const log = (message: string) => console.error(`engine: ${message}`);

let closing = false;
let front: FrontDoor | undefined;
/** the store hosts' Miniflares, with EDGEPLANE_ENGINE_PROCESSES > 1 */
const hosts: Miniflare[] = [];
let cronTimer: NodeJS.Timeout | undefined;
async function close(code = 0) {
  if (closing) return;
  closing = true;
  try {
    clearTimeout(cronTimer);
    await front?.close();
    await mf.dispose();
    await Promise.all(hosts.map((h) => h.dispose().catch(() => {})));
    if (frontSocket) rmSync(frontSocket.path, { force: true });
  } finally {
    process.exit(code);
  }
}
process.on("SIGTERM", () => close());
process.on("SIGINT", () => close());

// the launcher's pipe: readable until the launcher dies (however it dies)
if (config.launcherFd !== undefined) {
  const launcher = new net.Socket({ fd: config.launcherFd, readable: true, writable: false });
  launcher.on("data", () => {});
  launcher.on("end", () => close());
  launcher.on("error", () => close());
  launcher.unref(); // it keeps nothing alive; the servers do
}

// workerd started through setpriv gets SIGKILL when this process dies (a kill -9 included)
const WORKERD_TIED = fileURLToPath(new URL("workerd-tied.sh", import.meta.url));
const tied = existsSync("/usr/bin/setpriv") || existsSync("/bin/setpriv");
if (tied && !process.env.MINIFLARE_WORKERD_PATH) {
  // the binary Miniflare would run: its own dependency's
  const fromMiniflare = createRequire(createRequire(import.meta.url).resolve("miniflare"));
  const bin = fromMiniflare("workerd") as { default?: string };
  process.env.EDGEPLANE_WORKERD = bin.default ?? String(bin);
  process.env.MINIFLARE_WORKERD_PATH = WORKERD_TIED;
}

/** the store hosts' workerd pids (EDGEPLANE_ENGINE_PROCESSES > 1) */
const hostPids: number[] = [];

/** The pid of the front workerd this process runs (its workerd child that is no store host's). */
function workerdPid(): number | undefined {
  try {
    for (const task of readdirSync(`/proc/${process.pid}/task`))
      for (const child of readFileSync(`/proc/${process.pid}/task/${task}/children`, "utf8").split(" ")) {
        const pid = Number(child);
        if (
          pid > 0 &&
          !hostPids.includes(pid) &&
          readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "workerd"
        )
          return pid;
      }
  } catch {
    // /proc not there, or the child gone meanwhile
  }
  return undefined;
}

/**
 * workerd's output, line by line as Miniflare prints it; its end (workerd's stdout closes only
 * when it exits: Miniflare's own disposal destroys the stream instead) calls for a restart.
 */
function runtimeOutput(stdout: Readable, stderr: Readable) {
  readline.createInterface(stdout).on("line", (line) => console.log(line));
  readline.createInterface(stderr).on("line", (line) => console.error(line));
  stdout.once("end", () => void crashed());
}

const name = config.name ?? "edgeplane";
/** the Worker as every workerd process of the engine runs it (store-hosts.ts) */
const worker = {
  ...workerOptions,
  name,
  modules: modules.map((m) => ({ type: m.type, path: join(config.bundleDir, m.path) })),
  modulesRoot: config.bundleDir,
  bindings: {
    ...workerOptions.bindings,
    ...config.bindings,
    ...(relaySecret ? { EDGEPLANE_RELAY_SECRET: relaySecret } : {}),
    ...(frontSecret ? { EDGEPLANE_FRONT_SECRET: frontSecret } : {}),
  },
};
const single: MiniflareOptions = {
  ...worker,
  defaultPersistRoot: config.persistDir,
  // Clients reach our Worker on a direct workerd socket, not through Miniflare's entry
  // Worker (a Worker-to-Worker hop on every request and every chunk of every watch stream:
  // /healthz 0.59 -> 0.24 ms of CPU). Alone, a direct socket was measured unfair: under 50
  // busy keep-alive clients another connection's request waited the whole load (6 s; a
  // minimal Worker shows the same, so it is workerd's scheduling). The front door's fair
  // queue (fair-queue.ts) bounds what workerd sees, and with it a /healthz probe waits
  // 28-37 ms at p50 (max 60-149 ms) under the same load. Only the front door is served to
  // clients; this engine port is for it (and the benchmark's engine rows).
  host: config.host,
  port: 0,
  unsafeDirectSockets: [
    { host: config.host, port: config.port },
    ...(frontSocket ? [{ host: `unix:${frontSocket.base}`, port: 0 }] : []),
  ],
  // request.cf is the local default unless a caller injects one (MF-CF-Blob); never fetched
  cf: false,
  // only when asked (bench/profile.ts): DevTools tracing costs CPU on every request
  inspectorPort: config.inspectorPort,
  log: new Log(levels[config.logLevel] ?? LogLevel.WARN),
  handleRuntimeStdio: runtimeOutput,
} as MiniflareOptions;

/** A free TCP port on 127.0.0.1 (for a workerd debug port). */
function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.on("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => res(port));
    });
  });
}

/**
 * Starts a Miniflare whose workerd also serves its debug port on `debugPort` (workerd-tied.sh
 * reads it from the environment workerd is started with: one start at a time).
 */
async function withDebugPort(opts: MiniflareOptions, debugPort: number): Promise<Miniflare> {
  process.env.EDGEPLANE_DEBUG_PORT = String(debugPort);
  try {
    const started = new Miniflare(opts);
    await started.ready;
    return started;
  } finally {
    delete process.env.EDGEPLANE_DEBUG_PORT;
  }
}

// EDGEPLANE_ENGINE_PROCESSES > 1 (config.storeHosts): the store shards' workerd processes, each
// with a debug port, and this process's workerd routing STORE to them (store-hosts.ts). Their
// ports are fixed for the life of this process: a crash of any of them stops it (below).
let options = single;
let frontDebugPort = 0;
if (config.storeHosts) {
  if (process.env.MINIFLARE_WORKERD_PATH !== WORKERD_TIED) {
    log("EDGEPLANE_ENGINE_PROCESSES > 1 needs setpriv (util-linux) to tie workerd processes to this one");
    process.exit(1);
  }
  const { count, dir } = config.storeHosts;
  const ports: number[] = [];
  while (ports.length < count + 1) {
    const p = await freePort();
    if (!ports.includes(p)) ports.push(p);
  }
  const [frontDebug, ...hostDebug] = ports.map((p) => `127.0.0.1:${p}`);
  const {
    unsafeDirectSockets,
    host,
    port,
    cf,
    inspectorPort,
    log: mfLog,
  } = single as MiniflareOptions & {
    unsafeDirectSockets: unknown;
  };
  for (let i = 0; i < count; i++) {
    hosts.push(
      await withDebugPort(
        {
          host,
          port: 0,
          cf,
          log: mfLog,
          defaultPersistRoot: join(dir, String(i)),
          handleRuntimeStdio: (stdout: Readable, stderr: Readable) => hostOutput(i, stdout, stderr),
          workers: hostWorkers(worker, frontDebug, hostDebug),
        } as MiniflareOptions,
        ports[i + 1],
      ),
    );
    const hostPid = workerdPid();
    if (hostPid) hostPids.push(hostPid);
    log(`store host ${i} up (pid ${hostPid}, debug port ${hostDebug[i]}, state ${join(dir, String(i))})`);
  }
  const [main, ...routing] = frontWorkers(worker, hostDebug);
  options = {
    host,
    port,
    cf,
    inspectorPort,
    log: mfLog,
    defaultPersistRoot: config.persistDir,
    handleRuntimeStdio: runtimeOutput,
    workers: [{ ...main, unsafeDirectSockets }, ...routing],
  } as MiniflareOptions;
  frontDebugPort = ports[0];
}

/** A store host's output, prefixed; its end (it exited) stops the engine: no half an engine. */
function hostOutput(i: number, stdout: Readable, stderr: Readable) {
  readline.createInterface(stdout).on("line", (line) => console.log(`[store host ${i}] ${line}`));
  readline.createInterface(stderr).on("line", (line) => console.error(`[store host ${i}] ${line}`));
  stdout.once("end", () => {
    if (closing) return;
    log(
      `store host ${i} (workerd, pid ${hostPids[i]}) exited: stopping the engine (its shards are unreachable)`,
    );
    void close(1);
  });
}

let mf = config.storeHosts ? await withDebugPort(options, frontDebugPort) : new Miniflare(options);
let pid: number | undefined;
/** workerd is being started again: the front door answers 503 meanwhile */
let restarting = false;

/** Restarts of workerd in a row (a run of RESTART_RESET_MS without a crash starts over). */
let crashes = 0;
let upSince = Date.now();
const RESTART_RESET_MS = 60_000;
/** the wait before the nth restart in a row: 0.25 s, doubling, at most 8 s */
const backoff = (n: number) => Math.min(250 * 2 ** (n - 1), 8000);
/** restarts in a row that fail to start workerd before this process gives up (exit 1) */
const MAX_FAILED_STARTS = 10;

/** workerd died under us: 503 at the front door until it is back, then as before. */
async function crashed() {
  if (closing || restarting) return;
  if (config.storeHosts) {
    // the store hosts hold connections to this workerd's debug port: stop all, not half
    log(`workerd${pid ? ` (pid ${pid})` : ""} exited: stopping the engine and its store hosts`);
    return void close(1);
  }
  restarting = true;
  const lost = pid;
  front?.setAvailable(false, "the control plane's engine (workerd) is restarting");
  if (Date.now() - upSince > RESTART_RESET_MS) crashes = 0;
  for (let failed = 0; ; ) {
    const wait = backoff(++crashes);
    log(
      `workerd${lost ? ` (pid ${lost})` : ""} exited; starting it again in ${wait} ms (restart ${crashes} in a row)`,
    );
    await new Promise((r) => setTimeout(r, wait));
    if (closing) return;
    const t0 = Date.now();
    try {
      await mf.dispose().catch(() => {});
      if (frontSocket) rmSync(frontSocket.path, { force: true });
      mf = new Miniflare(options);
      await mf.ready;
      pid = workerdPid();
      upSince = Date.now();
      restarting = false;
      front?.setAvailable(true);
      log(`workerd started again${pid ? ` (pid ${pid})` : ""} in ${Date.now() - t0} ms`);
      return;
    } catch (e) {
      log(`starting workerd again failed: ${(e as Error).message}`);
      if (++failed >= MAX_FAILED_STARTS) {
        log(`giving up after ${failed} failed starts`);
        return void close(1);
      }
    }
  }
}

await mf.ready;
pid = workerdPid();
const url = await mf.unsafeGetDirectURL();
if (config.front) {
  try {
    front = await startFront({
      port: config.front.port,
      upstreamPort: config.port,
      upstreamPath: frontSocket?.path,
      cert: config.front.cert,
      key: config.front.key,
      relaySecret,
      frontSecret,
      clientCa: config.front.clientCa,
    });
  } catch (e) {
    const inUse = (e as NodeJS.ErrnoException).code === "EADDRINUSE";
    console.error(inUse ? portInUse(config.front.port) : `the front door failed: ${(e as Error).message}`);
    await close(1);
  }
}
console.log(`ready ${url.href}`);

const EVERY_MINUTE = "* * * * *";
for (const cron of config.crons ?? [])
  if (cron !== EVERY_MINUTE) console.warn(`cron "${cron}" is not run locally (only "${EVERY_MINUTE}" is)`);
if ((config.crons ?? []).includes(EVERY_MINUTE)) {
  const period = (config.cronSeconds ?? 60) * 1000;
  const tick = () => {
    cronTimer = setTimeout(
      async () => {
        if (closing) return;
        try {
          // the current workerd's (it may have been started again since the last tick)
          if (!restarting)
            await (await mf.getWorker()).scheduled({ cron: EVERY_MINUTE, scheduledTime: new Date() });
        } catch (e) {
          if (!closing && !restarting) console.error("scheduled handler failed:", e);
        }
        tick();
      },
      period - (Date.now() % period),
    );
  };
  tick();
}
