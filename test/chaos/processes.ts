// The processes a chaos run starts, kills with SIGKILL and starts again, as a machine's
// supervisor would: `npm start` (start.ts, its engine host and their workerd), a fleet of
// simulated nodes, and one real node (an edgelet over a private containerd, reached through a
// TCP relay whose connections stand for its tunnel). Every child is tied to this process
// (PR_SET_PDEATHSIG through setpriv): nothing started here outlives a run that dies.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CriClient } from "../../agent/cri/client";
import { childrenOf } from "../helpers/processes";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy";

export const REPO = fileURLToPath(new URL("../../", import.meta.url));
const SETPRIV = existsSync("/usr/bin/setpriv") ? "/usr/bin/setpriv" : undefined;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` until it holds; throws naming `what` after `ms`. */
export async function until(what: string, cond: () => boolean | Promise<boolean>, ms: number, every = 200) {
  const end = Date.now() + ms;
  for (;;) {
    try {
      if (await cond()) return;
    } catch {
      // not yet
    }
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(every);
  }
}

/** A child process that dies with this one; its output kept (the last 64 KiB). */
export function tied(command: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
  const [cmd, argv] = SETPRIV ? [SETPRIV, ["--pdeathsig", "KILL", "--", command, ...args]] : [command, args];
  const child = spawn(cmd, argv, { cwd: REPO, env, stdio: ["ignore", "pipe", "pipe"] });
  const out = { text: "" };
  const keep = (d: Buffer) => (out.text = (out.text + d).slice(-65536));
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return { child, out, exited };
}

/** Processes whose command line contains `text`. */
export function processesWith(text: string): number[] {
  const pids: number[] = [];
  for (const p of readdirSync("/proc")) {
    if (!/^\d+$/.test(p) || Number(p) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${p}/cmdline`, "utf8");
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      if (cmd.includes(text) && !/^\S+ \(.*\) Z/.test(stat)) pids.push(Number(p));
    } catch {}
  }
  return pids;
}

export function kill9(pid: number | undefined) {
  if (!pid) return false;
  try {
    process.kill(pid, "SIGKILL");
    return true;
  } catch {
    return false;
  }
}

export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

/** `npm start`: the process npm runs (start.ts), its engine host and workerd. */
export class ControlPlane {
  proc?: ReturnType<typeof tied>;
  token = "";
  readonly url: string;
  constructor(
    readonly stateDir: string,
    readonly port: number,
  ) {
    this.url = `http://127.0.0.1:${port}`;
  }

  async start(ms = 120_000) {
    await until("the port to be free", () => portFree(this.port), 30_000);
    this.proc = tied(process.execPath, ["--import", "tsx", join(REPO, "local-engine/start.ts")], {
      ...process.env,
      EDGEPLANE_STATE_DIR: this.stateDir,
      EDGEPLANE_PORT: String(this.port),
      EDGEPLANE_RUNTIME: "simulated",
      EDGEPLANE_LOG_LEVEL: "warn",
    });
    await until(
      "npm start to be up",
      () => this.proc!.out.text.includes("joined with the SIMULATED runtime"),
      ms,
    );
    this.token = readFileSync(join(this.stateDir, "admin-token"), "utf8").trim();
    await this.ready(ms);
  }

  async ready(ms = 120_000) {
    await until(
      "/readyz",
      async () => (await fetch(`${this.url}/readyz`, { signal: AbortSignal.timeout(2000) })).status === 200,
      ms,
    );
  }

  pids() {
    const start = this.proc?.child.exitCode === null ? this.proc.child.pid : undefined;
    const host = start ? childrenOf(start).find((c) => c.comm === "node")?.pid : undefined;
    const workerd = host ? childrenOf(host).find((c) => c.comm === "workerd")?.pid : undefined;
    return { start, host, workerd };
  }

  /** kill -9 of one of its processes; false when it had none to kill. */
  kill(which: "workerd" | "engine-host" | "npm-start"): boolean {
    const p = this.pids();
    return kill9(which === "workerd" ? p.workerd : which === "engine-host" ? p.host : p.start);
  }

  /** Back after a fault: npm start started again by us (a supervisor's job), the rest by it. */
  async recover(which: "workerd" | "engine-host" | "npm-start", before: ReturnType<ControlPlane["pids"]>) {
    if (which === "npm-start") {
      await this.proc?.exited;
      // all it started goes with it
      await until(
        "the engine host of the killed npm start to go",
        () => processesWith(this.stateDir).length === 0,
        30_000,
      );
      await this.start();
      return;
    }
    await until(
      `a new ${which}`,
      () => {
        const now = this.pids();
        return which === "workerd"
          ? !!now.workerd && now.workerd !== before.workerd
          : !!now.host && now.host !== before.host;
      },
      90_000,
    );
    await this.ready();
  }

  async stop() {
    const c = this.proc?.child;
    if (c && c.exitCode === null) {
      c.kill("SIGTERM");
      await Promise.race([this.proc!.exited, sleep(20_000)]);
      kill9(c.pid);
    }
  }
}

/** A fleet of simulated nodes in a process of its own (agent/bin/simnodes.mjs). */
export class SimFleet {
  proc?: ReturnType<typeof tied>;
  constructor(
    readonly cp: ControlPlane,
    readonly count: number,
    readonly prefix: string,
  ) {}
  names() {
    return Array.from({ length: this.count }, (_, i) => `${this.prefix}${i}`);
  }
  start() {
    this.proc = tied(process.execPath, [
      join(REPO, "agent/bin/simnodes.mjs"),
      "--server",
      this.cp.url,
      "--token",
      this.cp.token,
      "--count",
      String(this.count),
      "--prefix",
      this.prefix,
      "--lease-seconds",
      "5",
      "--pod-start-delay-ms",
      "200",
    ]);
  }
  kill() {
    return kill9(this.proc?.child.pid);
  }
  async recover() {
    await this.proc?.exited;
    this.start();
  }
  async stop() {
    const c = this.proc?.child;
    if (c && c.exitCode === null) {
      c.kill("SIGTERM");
      await Promise.race([this.proc!.exited, sleep(10_000)]);
      kill9(c.pid);
    }
  }
}

/** A containerd of the run's own: its own root, state, socket, CNI config and bridge. */
export class PrivateContainerd {
  proc?: ReturnType<typeof tied>;
  readonly socket: string;
  readonly bridge: string;
  constructor(
    readonly dir: string,
    readonly podCIDR: string,
  ) {
    this.socket = join(dir, "containerd.sock");
    this.bridge = `epx${process.pid % 100000}`;
  }

  /** Its config, and a CNI config on a bridge and IPAM store of its own (no NAT, no port maps). */
  write() {
    mkdirSync(join(this.dir, "net.d"), { recursive: true });
    const d = this.dir;
    writeFileSync(
      join(d, "config.toml"),
      `version = 2
root = "${d}/root"
state = "${d}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "${this.socket}"
[ttrpc]
  address = "${this.socket}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "${d}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "127.0.0.1:5000/edgeplane/pause:1"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        Root = "${d}/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${d}/net.d"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "/var/lib/edgeplane/containerd/certs.d"
`,
    );
    // the edgelet writes its own conflist over this one (same subnet and bridge, its own options)
    writeFileSync(
      join(d, "net.d", "10-edgeplane.conflist"),
      JSON.stringify({
        cniVersion: "1.0.0",
        name: `edgeplane-chaos-${process.pid}`,
        plugins: [
          {
            type: "bridge",
            bridge: this.bridge,
            isGateway: true,
            ipMasq: false,
            hairpinMode: true,
            ipam: { type: "host-local", ranges: [[{ subnet: this.podCIDR }]], dataDir: join(d, "cni") },
          },
          { type: "loopback" },
        ],
      }),
    );
  }

  async start() {
    rmSync(this.socket, { force: true });
    this.proc = tied("containerd", ["--config", join(this.dir, "config.toml")]);
    const cri = new CriClient({ endpoint: `unix://${this.socket}` });
    try {
      await until("containerd's CRI", async () => existsSync(this.socket) && !!(await cri.version()), 30_000);
      await cri.waitReady(30_000);
    } finally {
      cri.close();
    }
  }
  kill() {
    return kill9(this.proc?.child.pid);
  }
  async recover() {
    await this.proc?.exited;
    await this.start();
  }
  /** Shims of this containerd (they outlive it by design): pid and the sandbox id each serves. */
  shims(): { pid: number; id: string }[] {
    const out: { pid: number; id: string }[] = [];
    for (const pid of processesWith(this.socket)) {
      try {
        const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        if (!args[0].includes("containerd-shim")) continue;
        out.push({ pid, id: args[args.indexOf("-id") + 1] ?? "" });
      } catch {}
    }
    return out;
  }

  /**
   * Shims serving a sandbox containerd no longer knows: containerd 1.6, killed while it runs a
   * sandbox, can start its shim and lose the sandbox's record; after its restart it drops the
   * bundle and leaves the shim running. Nothing above containerd can see them (CRI lists no
   * such sandbox); the machine's supervisor of containerd has to end them.
   */
  async orphanShims(): Promise<{ pid: number; id: string }[]> {
    const cri = new CriClient({ endpoint: `unix://${this.socket}` });
    try {
      const known = new Set((await cri.listPodSandbox()).map((s) => s.id));
      return this.shims().filter((s) => !known.has(s.id));
    } finally {
      cri.close();
    }
  }
  async stop() {
    const c = this.proc?.child;
    if (c && c.exitCode === null) {
      c.kill("SIGTERM");
      await Promise.race([this.proc!.exited, sleep(10_000)]);
      kill9(c.pid);
    }
  }
}

/** One real node: `edgelet join` over the private containerd, through a relay standing for its tunnel. */
export class RealNode {
  proc?: ReturnType<typeof tied>;
  proxy?: TcpProxy;
  readonly root: string;
  readonly cgroupRoot: string;
  constructor(
    readonly cp: ControlPlane,
    readonly ctd: PrivateContainerd,
    readonly name: string,
    readonly dir: string,
  ) {
    this.root = join(dir, "edgelet");
    this.cgroupRoot = `/edgeplane-chaos-${process.pid}`;
  }
  async start() {
    this.proxy ??= await startTcpProxy(this.cp.port);
    this.proc = tied(process.execPath, [
      join(REPO, "agent/bin/edgelet.mjs"),
      "join",
      "--server",
      `http://127.0.0.1:${this.proxy.port}`,
      "--token",
      this.cp.token,
      "--name",
      this.name,
      "--runtime",
      "containerd",
      "--containerd-socket",
      `unix://${this.ctd.socket}`,
      "--root",
      this.root,
      "--cni-conf-dir",
      join(this.ctd.dir, "net.d"),
      // its own bridge and nftables table: the machine's containerd (edgeplane0) and other
      // suites' nodes share this network namespace
      "--cni-bridge",
      this.ctd.bridge,
      "--nft-table",
      `chaos${process.pid}`,
      "--cgroup-root",
      this.cgroupRoot,
      "--pod-cidr",
      this.ctd.podCIDR,
      "--lease-seconds",
      "5",
      "--status-seconds",
      "5",
    ]);
  }
  kill() {
    return kill9(this.proc?.child.pid);
  }
  /** Its tunnel (and every other connection it has) cut as a network failure does. */
  cutTunnel() {
    if (!this.proxy) return false;
    this.proxy.cutAll();
    return true;
  }
  async recover() {
    await this.proc?.exited;
    await this.start();
  }
  async stop() {
    const c = this.proc?.child;
    if (c && c.exitCode === null) {
      c.kill("SIGTERM");
      await Promise.race([this.proc!.exited, sleep(15_000)]);
      kill9(c.pid);
    }
    await this.proxy?.close();
    this.proxy = undefined;
  }
}

/** What a run leaves on the machine that is its: mounts under `dir`, its bridge, its cgroups. */
export function leftovers(dir: string, bridge: string | undefined, cgroupRoot: string | undefined): string[] {
  const left: string[] = [];
  const mounts = readFileSync("/proc/mounts", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[1])
    .filter((m) => m?.startsWith(dir));
  if (mounts.length) left.push(`mounts: ${mounts.join(", ")}`);
  if (bridge && existsSync(`/sys/class/net/${bridge}`)) left.push(`link ${bridge}`);
  if (cgroupRoot)
    for (const ctl of readdirSync("/sys/fs/cgroup"))
      if (existsSync(`/sys/fs/cgroup/${ctl}${cgroupRoot}`)) left.push(`cgroup ${ctl}${cgroupRoot}`);
  for (const pid of processesWith(dir)) {
    let cmd = "";
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
    } catch {}
    left.push(`process ${pid}: ${cmd.length > 160 ? `${cmd.slice(0, 157)}...` : cmd}`);
  }
  return left;
}

/**
 * What a node's teardown removes that its agent leaves by design (as kubelet leaves its QoS
 * cgroups and the bridge plugin its bridge): the run's bridge and the node's cgroup tree, once
 * no pod is left in it (a cgroup with a process in it stays, and is then reported).
 */
export function removeNodeArtifacts(bridge: string | undefined, cgroupRoot: string | undefined) {
  if (bridge && existsSync(`/sys/class/net/${bridge}`))
    try {
      execFileSync("ip", ["link", "del", bridge]);
    } catch {}
  if (cgroupRoot)
    for (const ctl of readdirSync("/sys/fs/cgroup")) {
      const top = `/sys/fs/cgroup/${ctl}${cgroupRoot}`;
      if (!existsSync(top)) continue;
      // deepest first: a cgroup is removed with rmdir once its children are
      const dirs: string[] = [];
      const walk = (d: string) => {
        dirs.push(d);
        for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(join(d, e.name));
      };
      try {
        walk(top);
      } catch {}
      for (const d of dirs.reverse())
        try {
          execFileSync("rmdir", [d], { stdio: "ignore" });
        } catch {}
    }
}

/** Removes what leftovers() finds (after it was reported): processes, mounts, the rest. */
export function removeLeftovers(dir: string, bridge: string | undefined, cgroupRoot: string | undefined) {
  for (const p of processesWith(dir)) kill9(p);
  const mounts = readFileSync("/proc/mounts", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[1])
    .filter((m): m is string => !!m?.startsWith(dir))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts)
    try {
      execFileSync("umount", ["-l", m]);
    } catch {}
  removeNodeArtifacts(bridge, cgroupRoot);
  rmSync(dir, { recursive: true, force: true });
}
