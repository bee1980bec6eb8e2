// `npm start` stops everything it started on SIGTERM or Ctrl-C, at any point: the engine runs
// detached (its own process group), so a signal that ends start.ts alone would leave workerd
// running with the port taken. And it keeps the engine alive: a kill -9 of workerd or of the
// engine host is followed by a restart (503 meanwhile, acknowledged writes kept), while a
// kill -9 of start.ts, or of npm, takes everything down with it. A port already taken is one
// line and exit code 1.
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { freePort } from "../../../local-engine/devserver";
import { removeStateDir, tempStateDir } from "../../helpers/own-server";
import { alive, childrenOf } from "../../helpers/processes";

const REPO = join(__dirname, "../../..");
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) removeStateDir(d);
});
/** process groups this file started, killed after each test whatever happened */
const groups: number[] = [];
afterEach(() => {
  for (const g of groups.splice(0))
    try {
      process.kill(-g, "SIGKILL");
    } catch {
      // gone
    }
});

/** Processes whose command line names this state directory (the engine host). */
function processesOf(stateDir: string): number[] {
  const pids: number[] = [];
  for (const p of readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (readFileSync(`/proc/${p}/cmdline`, "utf8").includes(stateDir)) pids.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean | Promise<boolean>, ms: number, what: string) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function gone(stateDir: string, ms = 15000): Promise<number[]> {
  const until = Date.now() + ms;
  for (;;) {
    const left = processesOf(stateDir);
    if (left.length === 0 || Date.now() > until) return left;
    await sleep(200);
  }
}

/** A started `npm start` (or start.ts alone): its output, exit, and what it runs. */
interface Started {
  child: ChildProcess;
  stateDir: string;
  port: number;
  out: () => string;
  exited: Promise<number | null>;
  /** the engine host's pid, and its workerd's */
  engine(): { host: number; workerd: number } | undefined;
  status(path: string, token?: string): Promise<number>;
}

/** `npm start` in a process group of its own (as a terminal runs it), or start.ts directly. */
function launch(how: "npm" | "node", opts: { port?: number; stateDir?: string } = {}): Promise<Started> {
  return (async () => {
    const stateDir = opts.stateDir ?? tempStateDir("edgeplane-start-");
    if (!dirs.includes(stateDir)) dirs.push(stateDir);
    const port = opts.port ?? (await freePort());
    const env = {
      ...process.env,
      EDGEPLANE_STATE_DIR: stateDir,
      EDGEPLANE_PORT: String(port),
      EDGEPLANE_RUNTIME: "simulated",
      // one workerd, which the engine host restarts (several: engine-processes.test.ts)
      EDGEPLANE_ENGINE_PROCESSES: "1",
    };
    const child =
      how === "npm"
        ? spawn("npm", ["start", "--silent"], {
            cwd: REPO,
            env,
            stdio: ["ignore", "pipe", "pipe"],
            detached: true,
          })
        : spawn(process.execPath, ["--import", "tsx", join(REPO, "local-engine/start.ts")], {
            cwd: REPO,
            env,
            stdio: ["ignore", "pipe", "pipe"],
          });
    if (how === "npm") groups.push(child.pid!);
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
    const engine = () => {
      const host = processesOf(stateDir).find((p) =>
        readFileSync(`/proc/${p}/cmdline`, "utf8").includes("engine-host.ts"),
      );
      const workerd = host && childrenOf(host).find((c) => c.comm === "workerd")?.pid;
      return host && workerd ? { host, workerd } : undefined;
    };
    const status = async (path: string, token?: string) => {
      try {
        const r = await fetch(`http://127.0.0.1:${port}${path}`, {
          headers: token ? { authorization: `Bearer ${token}` } : {},
          signal: AbortSignal.timeout(3000),
        });
        await r.arrayBuffer();
        return r.status;
      } catch {
        return 0;
      }
    };
    return { child, stateDir, port, out: () => out, exited, engine, status };
  })();
}

async function up(s: Started) {
  await until(() => s.out().includes("joined with the SIMULATED runtime"), 90_000, `npm start: ${s.out()}`);
  expect(await s.status("/healthz")).toBe(200);
}

/** The pid of `npm start`'s node process (start.ts): npm runs it in its place. */
function startTs(s: Started): number {
  const tree = [s.child.pid!, ...childrenOf(s.child.pid!).map((c) => c.pid)];
  for (const pid of tree)
    if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("local-engine/start.ts")) return pid;
  throw new Error(`no start.ts under npm (${tree})`);
}

const adminToken = (s: Started) => readFileSync(join(s.stateDir, "admin-token"), "utf8").trim();

async function start(signalAfter: "up" | number) {
  const s = await launch("node");
  if (signalAfter === "up") await up(s);
  else {
    // while the engine is still starting
    await until(() => processesOf(s.stateDir).length > 0, 20000, "the engine to start");
    await sleep(signalAfter);
    expect(s.out()).not.toContain("is up");
  }
  s.child.kill("SIGTERM");
  return { code: await s.exited, left: await gone(s.stateDir), out: s.out() };
}

describe("npm start", () => {
  it("stops the engine and the node on SIGTERM once up", async () => {
    const r = await start("up");
    expect(r.left, r.out).toEqual([]);
    expect(r.code).toBe(0);
  });

  it("stops the engine on SIGTERM while it is still starting", async () => {
    const r = await start(100);
    expect(r.left, r.out).toEqual([]);
  });

  it("starts workerd again after a kill -9, and the engine host too; writes survive; SIGINT to npm alone stops all", async () => {
    const s = await launch("npm");
    await up(s);
    const token = adminToken(s);
    const cm = await fetch(`http://127.0.0.1:${s.port}/api/v1/namespaces/default/configmaps`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "kept" },
        data: { a: "1" },
      }),
    });
    expect(cm.status).toBe(201);
    const kept = () => s.status("/api/v1/namespaces/default/configmaps/kept", token);

    // workerd dies: the front door says 503 until it is back
    const first = s.engine()!;
    process.kill(first.workerd, "SIGKILL");
    const seen = new Set<number>();
    await until(
      async () => {
        const code = await s.status("/readyz");
        seen.add(code);
        return code === 200 && seen.has(503);
      },
      60_000,
      "readyz 503 then 200",
    );
    expect(await kept()).toBe(200);
    const second = s.engine()!;
    expect(second.host).toBe(first.host);
    expect(second.workerd).not.toBe(first.workerd);
    expect(s.out()).toMatch(/workerd \(pid \d+\) exited; starting it again in \d+ ms/);

    // the port is ours: a second start says so in one line, and exits 1
    const second2 = await launch("node", { port: s.port });
    expect(await second2.exited).toBe(1);
    expect(second2.out().trim()).toMatch(
      new RegExp(
        `^edgeplane: port ${s.port} is in use by pid ${second.host} \\(edgeplane\\? yes: an engine host, state in ${s.stateDir}\\)`,
      ),
    );
    expect(second2.out().trim().split("\n")).toHaveLength(1);

    // the engine host dies: its workerd goes with it, and npm start starts both again
    process.kill(second.host, "SIGKILL");
    await until(() => !alive(second.workerd), 5000, "workerd to die with its engine host");
    await until(
      async () => (await s.status("/readyz")) === 200 && s.engine()?.host !== second.host,
      90_000,
      "a new engine host",
    );
    expect(await kept()).toBe(200);
    const third = s.engine()!;

    // SIGINT to npm's pid alone (not its group): everything stops
    process.kill(s.child.pid!, "SIGINT");
    expect(await s.exited).toBe(0);
    expect(await gone(s.stateDir), s.out()).toEqual([]);
    expect(alive(third.workerd)).toBe(false);
  }, 240_000);

  it("Ctrl-C (SIGINT to npm's whole process group, as a terminal sends it) stops everything, exit 0", async () => {
    const s = await launch("npm");
    await up(s);
    const { workerd } = s.engine()!;
    process.kill(-s.child.pid!, "SIGINT");
    expect(await s.exited).toBe(0);
    expect(await gone(s.stateDir), s.out()).toEqual([]);
    await until(() => !alive(workerd), 5000, "workerd to go");
    expect(s.out().match(/stopping edgeplane/g)).toHaveLength(1);
  }, 120_000);

  it("a kill -9 of start.ts takes the engine down; so does a kill -9 of npm", async () => {
    for (const victim of ["start.ts", "npm"] as const) {
      const s = await launch("npm");
      await up(s);
      const { workerd } = s.engine()!;
      process.kill(victim === "npm" ? s.child.pid! : startTs(s), "SIGKILL");
      expect(await gone(s.stateDir, 20_000), `${victim}: ${s.out()}`).toEqual([]);
      await until(() => !alive(workerd), 5000, "workerd to go");
      // the port is free again
      await new Promise<void>((resolve, reject) => {
        const probe = net.createServer().once("error", reject);
        probe.listen(s.port, "127.0.0.1", () => probe.close(() => resolve()));
      });
    }
  }, 240_000);

  it("a port taken by anything else is one line naming its process, and exit code 1", async () => {
    const taken = net.createServer();
    await new Promise<void>((r) => taken.listen(0, "127.0.0.1", r));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const s = await launch("node", { port });
      expect(await s.exited).toBe(1);
      const lines = s.out().trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(
          `^edgeplane: port ${port} is in use by pid ${process.pid} \\(edgeplane\\? no: \\S*node.*\\); stop it, or choose another port with EDGEPLANE_PORT$`,
        ),
      );
      expect(processesOf(s.stateDir)).toEqual([]);
    } finally {
      taken.close();
    }
  });
});
