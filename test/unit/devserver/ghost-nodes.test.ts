// `npm start` takes the simulated nodes it joined out of the cluster when it stops, and a start
// removes those a killed launcher left: a later start on the same state directory has no
// NotReady ghost of an earlier one for the scheduler to place pods on.
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../../../local-engine/devserver";
import { removeStateDir, tempStateDir } from "../../helpers/own-server";

const REPO = join(__dirname, "../../..");
const dirs: string[] = [];
const running = new Set<ChildProcess>();
afterAll(async () => {
  for (const c of running) c.kill("SIGTERM");
  for (const d of dirs) removeStateDir(d);
});

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

async function allGone(stateDir: string, ms = 20000): Promise<void> {
  const until = Date.now() + ms;
  while (processesOf(stateDir).length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
  expect(processesOf(stateDir)).toEqual([]);
}

interface Started {
  child: ChildProcess;
  port: number;
  out: () => string;
  exited: Promise<number | null>;
}

async function start(stateDir: string, nodes: number): Promise<Started> {
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", join(REPO, "local-engine/start.ts")], {
    cwd: REPO,
    env: {
      ...process.env,
      EDGEPLANE_STATE_DIR: stateDir,
      EDGEPLANE_PORT: String(port),
      EDGEPLANE_RUNTIME: "simulated",
      EDGEPLANE_NODES: String(nodes),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let out = "";
  child.stdout?.on("data", (d) => (out += d));
  child.stderr?.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((r) =>
    child.on("exit", (code) => {
      running.delete(child);
      r(code);
    }),
  );
  const until = Date.now() + 90000;
  while (!out.includes("joined with the SIMULATED runtime") && Date.now() < until)
    await new Promise((r) => setTimeout(r, 100));
  expect(out).toContain("joined with the SIMULATED runtime");
  return { child, port, out: () => out, exited };
}

async function nodesOf(stateDir: string, port: number): Promise<{ name: string; ready: string }[]> {
  const token = /token: (\S+)/.exec(readFileSync(join(stateDir, "kubeconfig"), "utf8"))?.[1];
  const r = await fetch(`http://127.0.0.1:${port}/api/v1/nodes`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(r.status).toBe(200);
  const list = (await r.json()) as { items: any[] };
  return list.items
    .map((n) => ({
      name: n.metadata.name as string,
      ready: n.status?.conditions?.find((c: any) => c.type === "Ready")?.status as string,
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

describe("npm start and the simulated nodes it joins", () => {
  it("removes them when it stops: the next start has its own nodes only", async () => {
    const dir = tempStateDir("edgeplane-ghosts-");
    dirs.push(dir);
    const first = await start(dir, 2);
    expect((await nodesOf(dir, first.port)).map((n) => n.name)).toEqual([
      "local-0",
      "sim-node-0",
      "sim-node-1",
    ]);
    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    await allGone(dir);

    const second = await start(dir, 0);
    expect(await nodesOf(dir, second.port)).toEqual([{ name: "local-0", ready: "True" }]);
    second.child.kill("SIGTERM");
    await second.exited;
    await allGone(dir);
  });

  it("removes at start those a killed launcher left behind", async () => {
    const dir = tempStateDir("edgeplane-ghosts-");
    dirs.push(dir);
    const first = await start(dir, 1);
    first.child.kill("SIGKILL");
    await first.exited;
    // the engine it started is detached and may outlive it: end it as a crash would (these
    // are this test's own processes, found by the state directory they name)
    for (const pid of processesOf(dir)) process.kill(pid, "SIGTERM");
    await allGone(dir);

    const second = await start(dir, 0);
    expect(second.out()).toContain("removed 2 simulated node(s) an earlier start left behind");
    expect(await nodesOf(dir, second.port)).toEqual([{ name: "local-0", ready: "True" }]);
    second.child.kill("SIGTERM");
    await second.exited;
    await allGone(dir);
  });
});
