// `npm start` stops everything it started on SIGTERM or Ctrl-C, at any point: the engine runs
// detached (its own process group), so a signal that ends start.ts alone would leave workerd
// running with the port taken.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../../../local-engine/devserver";
import { removeStateDir, tempStateDir } from "../../helpers/own-server";

const REPO = join(__dirname, "../../..");
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) removeStateDir(d);
});

/** Processes whose command line names this state directory (the engine and workerd). */
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

async function gone(stateDir: string, ms = 15000): Promise<number[]> {
  const until = Date.now() + ms;
  for (;;) {
    const left = processesOf(stateDir);
    if (left.length === 0 || Date.now() > until) return left;
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function start(signalAfter: "up" | number) {
  const stateDir = tempStateDir("edgeplane-start-");
  dirs.push(stateDir);
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", join(REPO, "local-engine/start.ts")], {
    cwd: REPO,
    env: {
      ...process.env,
      EDGEPLANE_STATE_DIR: stateDir,
      EDGEPLANE_PORT: String(port),
      EDGEPLANE_RUNTIME: "simulated",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  if (signalAfter === "up") {
    const until = Date.now() + 60000;
    while (!out.includes("joined with the SIMULATED runtime") && Date.now() < until)
      await new Promise((r) => setTimeout(r, 100));
    expect(out).toContain("joined with the SIMULATED runtime");
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
  } else {
    // while the engine is still starting
    const until = Date.now() + 20000;
    while (processesOf(stateDir).length === 0 && Date.now() < until)
      await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, signalAfter));
    expect(out).not.toContain("is up");
  }
  child.kill("SIGTERM");
  return { code: await exited, left: await gone(stateDir), out };
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
});
