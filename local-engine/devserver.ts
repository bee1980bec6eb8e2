// Starting the control plane locally: workerd (through Miniflare) with state on disk, an admin
// token, and a kubeconfig. Used by `npm start`, the tests and the benchmarks alike.
import { type ChildProcess, execFileSync, type StdioOptions, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { availableParallelism } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { checkShardSetting } from "../durable-objects/store/shard-plan";
import { workerBundle } from "./bundle";
import type { EngineConfig } from "./engine-host";
import { startFront } from "./front-door";
import { caKeyPkcs8, ensureAdminClientCert, ensurePki } from "./pki";

export interface DevServerOptions {
  /** where its state lives (created if missing) */
  stateDir: string;
  /** the front door's port (a free one when not given) */
  port?: number;
  /** the Worker's vars, over wrangler.toml's: { NAME: value } */
  vars?: Record<string, string>;
  /** extra lines of the token file ("token,user,uid,group1,...") besides the admin's */
  tokens?: string[];
  /** the engine's output kept (output()) instead of printed */
  quiet?: boolean;
  /** "wrangler" runs `wrangler dev` instead of the engine host (EDGEPLANE_DEV_ENGINE); "miniflare" */
  engine?: string;
  /** DevTools, for profiling; off by default */
  inspectorPort?: number;
  /** workerd's log level (warn) */
  logLevel?: string;
  /** the period of the every-minute cron trigger, for tests that cannot wait a minute */
  cronSeconds?: number;
  /** SIGUSR2 writes a Node diagnostic report of the engine into the state dir */
  diagnosable?: boolean;
  /** how long to wait for /readyz (60 s) */
  timeoutMs?: number;
  /**
   * workerd processes holding the store shards (EDGEPLANE_ENGINE_PROCESSES): 1 keeps everything
   * in one; N > 1 spreads the shards over N of their own besides the front one. By default the
   * state dir's own count, else 1 on machines with 2 cores or fewer.
   */
  engineProcesses?: number;
}

/** A local control plane started by startDevServer. */
export interface DevServer {
  /** the front door over plain HTTP, and over HTTPS (kubectl's) */
  url: string;
  httpsUrl: string;
  port: number;
  /** workerd's own port, behind the front door */
  internalPort: number;
  /** the admin's bearer token */
  token: string;
  kubeconfigPath: string;
  /** the same admin with a client certificate (<state>/kubeconfig-x509) */
  x509KubeconfigPath: string;
  /** the local CA (PEM) */
  caCert: string;
  stateDir: string;
  /** the engine process (detached: its own process group); another one after respawn() */
  readonly child: ChildProcess;
  /** Starts the engine again over the same state and ports, once it has exited; resolves when ready. */
  respawn(): Promise<void>;
  stop(): Promise<void>;
  /** kill -9 of the engine and workerd at once: a crash, no clean shutdown */
  kill(): Promise<void>;
  /** the engine's last output (with `quiet`) */
  output(): string;
}

/** The front door the engine serves: its port, and its serving certificate and key. */
type FrontTls = NonNullable<EngineConfig["front"]>;

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const WRANGLER = join(ROOT, "node_modules/wrangler/bin/wrangler.js");
const WRANGLER_TOML = join(ROOT, "wrangler.toml");

/** Every process below `pid` (wrangler starts workerd, which must not outlive it). */
export function descendants(pid: number): number[] {
  let out: number[] = [];
  try {
    const kids = execFileSync("ps", ["-o", "pid=", "--ppid", String(pid)], { encoding: "utf8" })
      .split("\n")
      .map((s) => Number(s.trim()))
      .filter((n) => n > 0);
    for (const k of kids) out = out.concat([k], descendants(k));
  } catch {
    // no children
  }
  return out;
}

function killAll(pids: number[], signal: NodeJS.Signals) {
  for (const p of pids) {
    try {
      process.kill(p, signal);
    } catch {
      // already gone
    }
  }
}

/** The first address of a service range ("10.96.0.0/12" -> "10.96.0.1"), the `kubernetes` Service's. */
export function firstServiceIP(cidr = "10.96.0.0/12") {
  const [ip, bits] = String(cidr).split("/");
  const n = ip.split(".").reduce((a, o) => a * 256 + Number(o), 0);
  const size = 2 ** (32 - Number(bits));
  const first = n - (n % size) + 1;
  return [first >>> 24, (first >>> 16) & 255, (first >>> 8) & 255, first & 255].join(".");
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.unref();
    s.on("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => res(port));
    });
  });
}

/**
 * Runs `start` (which listens on ports from freePort) again, up to `attempts` times, when it
 * fails because an address was in use: a port probed free can be taken before the server binds
 * it, by another process or by an outgoing connection's ephemeral port.
 */
export async function onFreePorts<T>(start: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (e) {
      const inUse = /EADDRINUSE|ERR_ADDRESS_IN_USE|address already in use/i.test(
        String((e as Error | undefined)?.message ?? e),
      );
      if (!inUse || attempt >= attempts) throw e;
    }
  }
}

/** The admin token of a state dir, made on first use and kept (mode 0600). */
export function adminToken(stateDir: string): string {
  const file = join(stateDir, "admin-token");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(stateDir, { recursive: true });
  // hex: a token never starts with "-", which command lines (--token -x...) would misread
  const token = randomBytes(24).toString("hex");
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return token;
}

/** A user's credential in a kubeconfig: a bearer token, or a client certificate and key (PEM). */
export type KubeconfigCredential = string | { cert: string; key: string };

export function kubeconfig(
  server: string,
  credential: KubeconfigCredential,
  caCert: string,
  name = "edgeplane",
): string {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const user =
    typeof credential === "string"
      ? `token: ${credential}`
      : `client-certificate-data: ${b64(credential.cert)}\n    client-key-data: ${b64(credential.key)}`;
  return `apiVersion: v1
kind: Config
clusters:
- name: ${name}
  cluster:
    server: ${server}
    certificate-authority-data: ${Buffer.from(caCert).toString("base64")}
contexts:
- name: ${name}
  context:
    cluster: ${name}
    user: ${name}-admin
    namespace: default
current-context: ${name}
users:
- name: ${name}-admin
  user:
    ${user}
`;
}

/** Where a state dir keeps its count of engine processes (fixed once made). */
const PROCESSES_FILE = "engine-processes";

/**
 * The number of workerd processes holding store shards for `stateDir`: `requested` (else
 * EDGEPLANE_ENGINE_PROCESSES), else what the state dir was made with, else 1 on machines with
 * 2 cores or fewer and half the cores (at most 8) on bigger ones. A state dir keeps its count:
 * an object's owner is picked by its id among that many, so another count would lose objects;
 * asking for another is an error naming both. Records the count in the state dir.
 */
export function engineProcesses(stateDir: string, requested?: number): number {
  const env = process.env.EDGEPLANE_ENGINE_PROCESSES;
  const asked = requested ?? (env ? Number(env) : undefined);
  if (asked !== undefined && !(Number.isInteger(asked) && asked >= 1 && asked <= 64))
    throw new Error(
      `EDGEPLANE_ENGINE_PROCESSES must be a whole number from 1 to 64, not "${requested ?? env}"`,
    );
  const file = join(stateDir, "state", PROCESSES_FILE);
  let made: number | undefined;
  if (existsSync(file)) made = Number(readFileSync(file, "utf8").trim());
  else {
    // made before the count was kept: one process, if it holds any store shard
    const shards = join(stateDir, "state", "v3", "do", "edgeplane-StoreShard");
    if (existsSync(shards) && readdirSync(shards).some((f) => f.endsWith(".sqlite"))) made = 1;
  }
  if (asked !== undefined && made !== undefined && asked !== made)
    throw new Error(
      `the state dir ${stateDir} was made with EDGEPLANE_ENGINE_PROCESSES=${made} and cannot be opened with ${asked} (objects are placed by that count): use ${made}, or another EDGEPLANE_STATE_DIR`,
    );
  const cores = availableParallelism();
  const n = asked ?? made ?? (cores <= 2 ? 1 : Math.min(8, Math.floor(cores / 2)));
  mkdirSync(join(stateDir, "state"), { recursive: true });
  writeFileSync(file, `${n}\n`);
  return n;
}

/** The `crons` of wrangler.toml's [triggers]. */
function wranglerCrons(): string[] {
  const toml = readFileSync(WRANGLER_TOML, "utf8");
  const m = /^\[triggers\][^[]*?^crons\s*=\s*(\[[^\]]*\])/ms.exec(toml);
  return m ? JSON.parse(m[1]) : [];
}

/**
 * The engine process: by default workerd through Miniflare serving the deploy bundle
 * (local-engine/engine-host.ts); EDGEPLANE_DEV_ENGINE=wrangler (or opts.engine) runs
 * `wrangler dev` instead, with its proxy and inspector, for comparison. Returns what spawns it
 * (again, after a crash: over the same config and state).
 */
async function spawnEngine(
  opts: DevServerOptions,
  {
    stateDir,
    internalPort,
    vars,
    front,
    processes,
  }: {
    stateDir: string;
    internalPort: number;
    vars: Record<string, string>;
    front: FrontTls | undefined;
    processes: number;
  },
): Promise<() => ChildProcess> {
  const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: process.env.CI ?? "", NO_COLOR: "1" };
  const stdio: StdioOptions = opts.quiet ? ["ignore", "pipe", "pipe"] : ["ignore", "inherit", "inherit"];
  // the engine host watches this process through a pipe on its fd 3: its end is our death
  const watched: StdioOptions = [...(stdio as string[]), "pipe"] as StdioOptions;
  if (opts.engine === "wrangler") {
    const envFile = join(stateDir, "dev.vars");
    writeFileSync(
      envFile,
      Object.entries(vars)
        .map(([k, v]) => `${k}="${String(v).replaceAll('"', '\\"').replaceAll("\n", "\\n")}"`)
        .join("\n"),
      { mode: 0o600 },
    );
    const args = [
      WRANGLER,
      "dev",
      "--config",
      WRANGLER_TOML,
      "--ip",
      "127.0.0.1",
      "--port",
      String(internalPort),
      "--persist-to",
      join(stateDir, "state"),
      "--env-file",
      envFile,
      "--test-scheduled",
      "--show-interactive-dev-session=false",
      "--inspector-port",
      String(opts.inspectorPort ?? (await freePort())),
      "--log-level",
      opts.logLevel ?? "warn",
    ];
    return () => spawn(process.execPath, args, { cwd: ROOT, stdio, env, detached: true });
  }
  const bundle = await workerBundle(ROOT);
  const configFile = join(stateDir, "engine.json");
  writeFileSync(
    configFile,
    JSON.stringify({
      ...bundle,
      // the same layout `wrangler dev --persist-to state` uses, so either engine reads it
      persistDir: join(stateDir, "state", "v3"),
      host: "127.0.0.1",
      port: internalPort,
      bindings: vars,
      logLevel: opts.logLevel ?? "warn",
      inspectorPort: opts.inspectorPort,
      // the cron triggers, run by the engine as Cloudflare would (wrangler dev only runs them
      // when /__scheduled is called); opts.cronSeconds shortens the minute for tests
      crons: wranglerCrons(),
      cronSeconds: opts.cronSeconds,
      // the front door runs beside workerd, in the engine's process, not in the caller's
      front,
      launcherFd: 3,
      // EDGEPLANE_ENGINE_PROCESSES > 1: the store shards in workerd processes of their own
      storeHosts:
        processes > 1 ? { count: processes, dir: join(stateDir, "state", "store-hosts") } : undefined,
    } satisfies EngineConfig),
    { mode: 0o600 },
  );
  // opts.diagnosable: SIGUSR2 writes a Node diagnostic report (its JavaScript stack) into the
  // state dir, for the test suite's report on a server that stopped answering
  const report = opts.diagnosable ? ["--report-on-signal", `--report-directory=${stateDir}`] : [];
  return () =>
    spawn(
      process.execPath,
      [...report, "--import", "tsx", join(ROOT, "local-engine/engine-host.ts"), configFile],
      {
        cwd: ROOT,
        stdio: watched,
        env,
        detached: true,
      },
    );
}

/** Starts the local control plane: the engine on an internal port behind the front door. */
export function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  return onFreePorts(() => startDevServerOnce(opts));
}

async function startDevServerOnce(opts: DevServerOptions): Promise<DevServer> {
  const stateDir = resolve(opts.stateDir);
  mkdirSync(stateDir, { recursive: true });
  const port = opts.port ?? (await freePort());
  const internalPort = await freePort();
  // the serving certificate also names the `kubernetes` Service (pods reach the front door by it)
  const pki = ensurePki(stateDir, { serviceIP: firstServiceIP(opts.vars?.EDGEPLANE_SERVICE_CIDR) });
  const token = adminToken(stateDir);
  const tokens = [`${token},admin,admin,system:masters`, ...(opts.tokens ?? [])].join("\n");
  // the local CA is the cluster's root CA: published to every namespace as kube-root-ca.crt;
  // the front door is the apiserver address nodes dial (the `kubernetes` Service's endpoint)
  const vars: Record<string, string> = {
    EDGEPLANE_TOKENS: tokens,
    EDGEPLANE_ROOT_CA: pki.caCert,
    // the CSR signers sign with the local CA (kube-controller-manager's --cluster-signing-key-file)
    EDGEPLANE_CA_KEY: caKeyPkcs8(stateDir),
    EDGEPLANE_APISERVER_ADDRESS: `127.0.0.1:${port}`,
    ...(opts.vars ?? {}),
  };
  // resources spread over several store shards (durable-objects/store/shard-plan.ts), checked here
  if (process.env.EDGEPLANE_STORE_SHARDS) vars.EDGEPLANE_STORE_SHARDS ??= process.env.EDGEPLANE_STORE_SHARDS;
  checkShardSetting(vars.EDGEPLANE_STORE_SHARDS);
  const url = `http://127.0.0.1:${port}`;
  const httpsUrl = `https://127.0.0.1:${port}`;
  const kubeconfigPath = join(stateDir, "kubeconfig");
  writeFileSync(kubeconfigPath, kubeconfig(httpsUrl, token, pki.caCert), { mode: 0o600 });
  // the same admin with a client certificate (kubeadm's admin.conf), which the engine's front
  // door verifies against the local CA and reports to the Worker (local-engine/client-cert.ts)
  const x509KubeconfigPath = join(stateDir, "kubeconfig-x509");
  writeFileSync(x509KubeconfigPath, kubeconfig(httpsUrl, ensureAdminClientCert(stateDir), pki.caCert), {
    mode: 0o600,
  });
  const engine = opts.engine ?? process.env.EDGEPLANE_DEV_ENGINE ?? "miniflare";
  const processes = engine === "wrangler" ? 1 : engineProcesses(stateDir, opts.engineProcesses);
  if (engine !== "wrangler") vars.EDGEPLANE_CLIENT_CERT_AUTH ??= "front";
  const frontOpts: FrontTls = { port, cert: pki.cert, key: pki.key, clientCa: pki.caCert };
  const spawnChild = await spawnEngine(
    { ...opts, engine },
    { stateDir, internalPort, vars, front: engine === "wrangler" ? undefined : frontOpts, processes },
  );
  let output = "";
  let child: ChildProcess;
  let exited = false;
  /** Spawns the engine and waits until it answers /readyz (or fails, or times out). */
  const launch = async () => {
    child = spawnChild();
    exited = false;
    const mine = child;
    if (opts.quiet) {
      // (piped when quiet)
      mine.stdout!.on("data", (d: Buffer) => (output = (output + d).slice(-20000)));
      mine.stderr!.on("data", (d: Buffer) => (output = (output + d).slice(-20000)));
    }
    mine.on("exit", () => {
      if (child === mine) exited = true;
      // whatever of its process group is left (workerd, were it not tied to it) goes with it
      killAll([-mine.pid!], "SIGKILL");
    });
    const deadline = Date.now() + (opts.timeoutMs ?? 60000);
    for (;;) {
      if (exited) throw new Error(`the engine exited early:\n${output}`);
      try {
        const r = await fetch(`${url}/readyz`);
        if (r.ok) return;
      } catch {}
      if (Date.now() > deadline) {
        killAll([mine.pid!, ...descendants(mine.pid!)], "SIGKILL");
        throw new Error(`the engine did not become ready on ${url}:\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 150));
    }
  };
  // wrangler dev has no front door of its own: the caller serves it
  const front =
    engine === "wrangler" ? await startFront({ ...frontOpts, upstreamPort: internalPort }) : undefined;
  try {
    await launch();
  } catch (e) {
    await front?.close();
    throw e;
  }
  const stop = async () => {
    await front?.close();
    if (exited) return;
    const tree = [child.pid!, ...descendants(child.pid!)];
    const done = new Promise((r) => child.on("exit", r));
    killAll(tree, "SIGTERM");
    const t = setTimeout(() => killAll(tree, "SIGKILL"), 5000);
    await done;
    clearTimeout(t);
    // workerd can outlive wrangler; never leave it running
    await new Promise((r) => setTimeout(r, 200));
    killAll(tree, "SIGKILL");
  };
  /** kill -9 of wrangler and workerd at once: the crash the durability test needs */
  const kill = async () => {
    await front?.close();
    if (exited) return;
    const tree = [child.pid!, ...descendants(child.pid!)];
    const done = new Promise((r) => child.on("exit", r));
    killAll(tree, "SIGKILL");
    await done;
  };
  return {
    url,
    httpsUrl,
    port,
    internalPort,
    token,
    kubeconfigPath,
    x509KubeconfigPath,
    caCert: pki.caCert,
    stateDir,
    get child() {
      return child;
    },
    respawn: async () => {
      if (!exited) throw new Error("the engine is still running");
      await launch();
    },
    stop,
    kill,
    output: () => output,
  };
}
