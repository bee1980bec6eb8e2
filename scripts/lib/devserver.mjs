// Starting the control plane locally: workerd (through Miniflare) with state on disk, an admin
// token, and a kubeconfig. Used by `npm start`, the tests and the benchmarks alike.
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { workerBundle } from "./bundle.mjs";
import { startFront } from "./front.mjs";
import { ensurePki } from "./pki.mjs";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const WRANGLER = join(ROOT, "node_modules/wrangler/bin/wrangler.js");
const WRANGLER_TOML = join(ROOT, "wrangler.toml");

/** Every process below `pid` (wrangler starts workerd, which must not outlive it). */
export function descendants(pid) {
  let out = [];
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

function killAll(pids, signal) {
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
export function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.unref();
    s.on("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

/**
 * Runs `start` (which listens on ports from freePort) again, up to `attempts` times, when it
 * fails because an address was in use: a port probed free can be taken before the server binds
 * it, by another process or by an outgoing connection's ephemeral port.
 */
export async function onFreePorts(start, attempts = 3) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (e) {
      const inUse = /EADDRINUSE|ERR_ADDRESS_IN_USE|address already in use/i.test(String(e?.message ?? e));
      if (!inUse || attempt >= attempts) throw e;
    }
  }
}

/** The admin token of a state dir, made on first use and kept (mode 0600). */
export function adminToken(stateDir) {
  const file = join(stateDir, "admin-token");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(stateDir, { recursive: true });
  // hex: a token never starts with "-", which command lines (--token -x...) would misread
  const token = randomBytes(24).toString("hex");
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return token;
}

export function kubeconfig(server, token, caCert, name = "edgeplane") {
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
    token: ${token}
`;
}

/** The `crons` of wrangler.toml's [triggers]. */
function wranglerCrons() {
  const toml = readFileSync(WRANGLER_TOML, "utf8");
  const m = /^\[triggers\][^[]*?^crons\s*=\s*(\[[^\]]*\])/ms.exec(toml);
  return m ? JSON.parse(m[1]) : [];
}

/**
 * The engine process: by default workerd through Miniflare serving the deploy bundle
 * (scripts/lib/workerd-host.mjs); EDGEPLANE_DEV_ENGINE=wrangler (or opts.engine) runs
 * `wrangler dev` instead, with its proxy and inspector, for comparison.
 */
async function spawnEngine(opts, { stateDir, internalPort, vars, front }) {
  const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: process.env.CI ?? "", NO_COLOR: "1" };
  const stdio = opts.quiet ? ["ignore", "pipe", "pipe"] : ["ignore", "inherit", "inherit"];
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
    return spawn(process.execPath, args, { cwd: ROOT, stdio, env, detached: true });
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
    }),
    { mode: 0o600 },
  );
  // opts.diagnosable: SIGUSR2 writes a Node diagnostic report (its JavaScript stack) into the
  // state dir, for the test suite's report on a server that stopped answering
  const report = opts.diagnosable ? ["--report-on-signal", `--report-directory=${stateDir}`] : [];
  return spawn(process.execPath, [...report, join(ROOT, "scripts/lib/workerd-host.mjs"), configFile], {
    cwd: ROOT,
    stdio,
    env,
    detached: true,
  });
}

/**
 * Starts the local control plane: the engine on an internal port behind the front door.
 * Returns { url, port, token, kubeconfigPath, child, stop(), kill() }.
 * opts: { stateDir, port, vars: {NAME: value}, tokens: extra token-file lines, quiet, engine,
 *   inspectorPort (DevTools for profiling; off by default) }
 */
export function startDevServer(opts) {
  return onFreePorts(() => startDevServerOnce(opts));
}

async function startDevServerOnce(opts) {
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
  const vars = {
    EDGEPLANE_TOKENS: tokens,
    EDGEPLANE_ROOT_CA: pki.caCert,
    EDGEPLANE_APISERVER_ADDRESS: `127.0.0.1:${port}`,
    ...(opts.vars ?? {}),
  };
  const url = `http://127.0.0.1:${port}`;
  const httpsUrl = `https://127.0.0.1:${port}`;
  const kubeconfigPath = join(stateDir, "kubeconfig");
  writeFileSync(kubeconfigPath, kubeconfig(httpsUrl, token, pki.caCert), { mode: 0o600 });
  const engine = opts.engine ?? process.env.EDGEPLANE_DEV_ENGINE ?? "miniflare";
  const frontOpts = { port, cert: pki.cert, key: pki.key };
  const child = await spawnEngine(
    { ...opts, engine },
    { stateDir, internalPort, vars, front: engine === "wrangler" ? undefined : frontOpts },
  );
  let output = "";
  if (opts.quiet) {
    child.stdout.on("data", (d) => (output = (output + d).slice(-20000)));
    child.stderr.on("data", (d) => (output = (output + d).slice(-20000)));
  }
  let exited = false;
  child.on("exit", () => (exited = true));
  // wrangler dev has no front door of its own: the caller serves it
  const front =
    engine === "wrangler" ? await startFront({ ...frontOpts, upstreamPort: internalPort }) : undefined;
  const deadline = Date.now() + (opts.timeoutMs ?? 60000);
  for (;;) {
    if (exited) {
      await front?.close();
      throw new Error(`the engine exited early:\n${output}`);
    }
    try {
      const r = await fetch(`${url}/readyz`);
      if (r.ok) break;
    } catch {}
    if (Date.now() > deadline) {
      killAll([child.pid, ...descendants(child.pid)], "SIGKILL");
      await front?.close();
      throw new Error(`the engine did not become ready on ${url}:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  const stop = async () => {
    await front?.close();
    if (exited) return;
    const tree = [child.pid, ...descendants(child.pid)];
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
    const tree = [child.pid, ...descendants(child.pid)];
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
    caCert: pki.caCert,
    stateDir,
    child,
    stop,
    kill,
    output: () => output,
  };
}
