// `EDGEPLANE_ENGINE_PROCESSES=2 npm start`: the store shards in two workerd processes of their own
// besides the front one (local-engine/store-hosts.ts), as real kubectl sees it: create, list
// (paged), watch and delete across several resources and namespaces, a Deployment's pods
// scheduled onto the simulated node; each host keeps its shards' SQLite under its own dir; a
// restart over the same state keeps every object; another count for that state dir is refused;
// a kill -9 of a store host restarts the engine whole; SIGTERM leaves no workerd behind.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { freePort } from "../../local-engine/devserver";
import { hasKubectl, kubectl, type Target, until } from "../helpers/cluster";
import { removeStateDir, tempStateDir } from "../helpers/own-server";
import { alive, childrenOf } from "../helpers/processes";

const REPO = join(__dirname, "../..");
const stateDir = tempStateDir("edgeplane-procs-");
afterAll(() => removeStateDir(stateDir));

/** launchers this file started, killed after each test whatever happened */
const launched: ChildProcess[] = [];
afterEach(() => {
  for (const c of launched.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
});

interface Launched {
  child: ChildProcess;
  target: Target;
  out: () => string;
  exited: Promise<number | null>;
  /** the engine host (start.ts's child) and the workerd processes it runs */
  engine(): { host: number; workerd: number[] } | undefined;
}

/** start.ts over `stateDir` with EDGEPLANE_ENGINE_PROCESSES=`processes` and one simulated node. */
async function launch(processes: number): Promise<Launched> {
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", join(REPO, "local-engine/start.ts")], {
    cwd: REPO,
    env: {
      ...process.env,
      EDGEPLANE_STATE_DIR: stateDir,
      EDGEPLANE_PORT: String(port),
      EDGEPLANE_RUNTIME: "simulated",
      EDGEPLANE_ENGINE_PROCESSES: String(processes),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  launched.push(child);
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  const engine = () => {
    const host = childrenOf(child.pid!).find((c) => c.comm === "node")?.pid;
    if (!host) return undefined;
    return {
      host,
      workerd: childrenOf(host)
        .filter((c) => c.comm === "workerd")
        .map((c) => c.pid),
    };
  };
  const token = () => readFileSync(join(stateDir, "admin-token"), "utf8").trim();
  return {
    child,
    out: () => out,
    exited,
    engine,
    target: {
      url: `http://127.0.0.1:${port}`,
      get token() {
        return token();
      },
      kubeconfigPath: join(stateDir, "kubeconfig"),
    },
  };
}

async function up(l: Launched) {
  await until(
    `npm start to be up: ${l.out()}`,
    async () => l.out().includes("joined with the SIMULATED runtime"),
    120_000,
    200,
  );
}

async function stop(l: Launched): Promise<{ code: number | null; workerd: number[] }> {
  const workerd = l.engine()?.workerd ?? [];
  l.child.kill("SIGTERM");
  const code = await l.exited;
  await until("the workerd processes to be gone", async () => !workerd.some(alive), 15_000);
  return { code, workerd };
}

const k = async (t: Target, args: string[]) => {
  const r = await kubectl(t, args);
  expect(r.code, `kubectl ${args.join(" ")}: ${r.stderr}`).toBe(0);
  return r.stdout;
};

/** The store shards' SQLite files (one per object) under each host's dir and the front's. */
function shardFiles() {
  const count = (dir: string) =>
    existsSync(dir) ? readdirSync(dir).filter((f) => /^[0-9a-f]{64}\.sqlite$/.test(f)).length : 0;
  return {
    front: count(join(stateDir, "state/v3/do/edgeplane-StoreShard")),
    hosts: [0, 1].map((i) => count(join(stateDir, `state/store-hosts/${i}/do/edgeplane-StoreShard`))),
  };
}

describe.skipIf(!hasKubectl)("EDGEPLANE_ENGINE_PROCESSES=2", () => {
  it("serves kubectl over shards in two store hosts, and SIGTERM leaves no workerd", async () => {
    const l = await launch(2);
    await up(l);
    const t = l.target;
    // the front's workerd and two store hosts', all tied to the engine host
    expect(l.engine()?.workerd.length, l.out()).toBe(3);

    for (const ns of ["procs-a", "procs-b"]) await k(t, ["create", "namespace", ns]);
    const watch = spawn(
      "/usr/bin/kubectl",
      ["--kubeconfig", t.kubeconfigPath, "get", "configmaps", "-n", "procs-a", "-w", "--output-watch-events"],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let watched = "";
    watch.stdout.on("data", (d) => (watched += d));
    try {
      await until("the watch to list", async () => watched.includes("kube-root-ca.crt"), 20_000);
      for (let i = 0; i < 5; i++) {
        await k(t, ["create", "configmap", `c${i}`, "-n", "procs-a", `--from-literal=i=${i}`]);
        await k(t, ["create", "secret", "generic", `s${i}`, "-n", "procs-b", `--from-literal=i=${i}`]);
      }
      await k(t, ["create", "serviceaccount", "robot", "-n", "procs-b"]);
      await k(t, ["delete", "configmap", "c0", "-n", "procs-a"]);
      // its table: EVENT NAME DATA AGE
      await until(
        `the watch to see the changes: ${watched}`,
        async () => /^DELETED\s+c0\s/m.test(watched),
        20_000,
      );
      for (let i = 0; i < 5; i++) expect(watched).toMatch(new RegExp(`^ADDED\\s+c${i}\\s`, "m"));
    } finally {
      watch.kill();
    }

    // lists, whole and paged, across namespaces
    const cms = await k(t, ["get", "configmaps", "-A", "--chunk-size=2", "-o", "name"]);
    expect(
      cms
        .split("\n")
        .filter((n) => /^configmap\/c\d$/.test(n))
        .sort(),
    ).toEqual(["configmap/c1", "configmap/c2", "configmap/c3", "configmap/c4"]);
    const secrets = await k(t, ["get", "secrets", "-n", "procs-b", "-o", "name"]);
    expect(secrets.split("\n").filter((n) => /^secret\/s\d$/.test(n))).toHaveLength(5);
    const gone = await kubectl(t, ["get", "configmap", "c0", "-n", "procs-a"]);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toContain('configmaps "c0" not found');

    // a Deployment: the controllers (front) create pods (hosts), the scheduler binds them
    await k(t, ["create", "deployment", "web", "-n", "procs-a", "--image=nginx", "--replicas=2"]);
    const pods = await until(
      "the pods to run on the simulated node",
      async () => {
        const r = await kubectl(t, [
          "get",
          "pods",
          "-n",
          "procs-a",
          "-l",
          "app=web",
          "-o",
          "jsonpath={range .items[*]}{.spec.nodeName} {.status.phase}{'\\n'}{end}",
        ]);
        const lines = r.stdout.trim().split("\n").filter(Boolean);
        return lines.length === 2 && lines.every((x) => x === "local-0 Running") && lines;
      },
      60_000,
      300,
    );
    expect(pods).toHaveLength(2);
    expect(
      await k(t, ["get", "deployment", "web", "-n", "procs-a", "-o", "jsonpath={.status.readyReplicas}"]),
    ).toBe("2");

    // every shard's SQLite is in a store host's dir: both hold some, the front none (so far)
    const files = shardFiles();
    expect(files.front).toBe(0);
    expect(files.hosts[0]).toBeGreaterThan(0);
    expect(files.hosts[1]).toBeGreaterThan(0);

    // a virtual cluster: its objects read their cluster off their names, so its shards stay in
    // the front, made by name; its controllers make a Deployment's ReplicaSet and pod
    const made = spawnSync(
      process.execPath,
      [join(REPO, "cli/bin/edgeplane.mjs"), "cluster", "create", "team-a"],
      {
        env: { ...process.env, EDGEPLANE_STATE_DIR: stateDir, KUBECONFIG: t.kubeconfigPath },
        encoding: "utf8",
      },
    );
    expect(made.status, made.stderr).toBe(0);
    const team: Target = { ...t, kubeconfigPath: made.stdout.trim().split("\n").pop()! };
    await k(team, ["create", "configmap", "only-in-team-a"]);
    await k(team, ["create", "deployment", "w", "--image=nginx"]);
    await until(
      "the virtual cluster's controllers to make the Deployment's pod",
      async () => {
        const r = await kubectl(team, ["get", "pods", "-l", "app=w", "-o", "name"]);
        return r.code === 0 && r.stdout.startsWith("pod/w-");
      },
      30_000,
      300,
    );
    expect(await k(team, ["get", "configmaps", "-o", "name"])).toContain("configmap/only-in-team-a");
    expect(await k(t, ["get", "configmaps", "-A", "-o", "name"])).not.toContain("only-in-team-a");
    expect(shardFiles().front).toBeGreaterThan(0);

    const s = await stop(l);
    expect(s.code).toBe(0);
    expect(s.workerd).toHaveLength(3);
    expect(s.workerd.filter(alive)).toEqual([]);
  }, 240_000);

  it("keeps every object over a restart, refuses another count for the state dir, restarts whole after a store host's kill -9", async () => {
    // another count: one line naming the state dir's, exit 1, nothing started
    const other = await launch(1);
    expect(await other.exited).toBe(1);
    expect(other.out()).toContain("was made with EDGEPLANE_ENGINE_PROCESSES=2 and cannot be opened with 1");

    const l = await launch(2);
    await up(l);
    const t = l.target;
    const cms = await k(t, ["get", "configmaps", "-n", "procs-a", "-o", "name"]);
    expect(cms.split("\n").filter((n) => /^configmap\/c\d$/.test(n))).toHaveLength(4);
    expect(await k(t, ["get", "deployment", "web", "-n", "procs-a", "-o", "name"])).toContain(
      "deployment.apps/web",
    );
    expect(await k(t, ["get", "serviceaccount", "robot", "-n", "procs-b", "-o", "name"])).toContain("robot");

    // a store host dies: reported, the engine stops rather than run without its shards, and the
    // launcher starts it again whole, over the same state
    const before = l.engine()!;
    const hosts = [...l.out().matchAll(/store host \d up \(pid (\d+),/g)].map((m) => Number(m[1]));
    const victim = hosts[hosts.length - 1];
    expect(before.workerd).toContain(victim);
    process.kill(victim, "SIGKILL");
    await until(
      "the engine host to be started again",
      async () => l.out().includes("the engine host is up again"),
      90_000,
    );
    expect(l.out()).toMatch(
      new RegExp(`store host \\d \\(workerd, pid ${victim}\\) exited: stopping the engine`),
    );
    expect(before.workerd.filter(alive)).toEqual([]);
    const after = await until(
      "the new engine",
      async () => l.engine()?.workerd.length === 3 && l.engine(),
      10_000,
    );
    expect(after.host).not.toBe(before.host);
    const again = await until(
      "a list after the restart",
      async () => {
        const r = await kubectl(t, ["get", "configmaps", "-n", "procs-a", "-o", "name"]);
        return r.code === 0 && r.stdout;
      },
      30_000,
      300,
    );
    expect(again.split("\n").filter((n) => /^configmap\/c\d$/.test(n))).toHaveLength(4);

    const s = await stop(l);
    expect(s.code).toBe(0);
    expect(s.workerd.filter(alive)).toEqual([]);
  }, 240_000);
});
