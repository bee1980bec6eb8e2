// Several real hosts on one machine, as kind gives several nodes: `EDGEPLANE_HOSTS=N npm start`
// and the tests that need more than one node call startHosts. Each host is a network namespace
// on a LAN (a bridge in a namespace of its own, which also routes between the LAN's subnets and
// the machine), with its own containerd (root, state, sockets, opt path, runc root, CNI conf
// dir) and its own edgelet, both started with `nsenter --net` (not `ip netns exec`, whose new
// mount namespace breaks runc's cgroup lookup). The edgelet is the one `npx edgelet join` runs
// on a separate machine, given everything by flags. The machine reaches each host at its
// InternalIP; the registries and the control plane on the machine's 127.0.0.1 reach the hosts
// through Unix-socket relays (relay.ts), so image names and the server URL stay unchanged.
//
// Names and the LAN subnet are unique per run: two runs, or a test beside `npm start`, do not
// collide. What a run makes is written to its ledger before it is made; a guard process undoes
// it all when the launcher stops the run or dies (guard-main.ts, cleanup.ts).
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { CriClient } from "../../agent/cri/client";
import { bootstrapTokenSecret, randomBootstrapToken } from "../../api/bootstrap-token";
import type { Backend } from "../../api/network";
import { Ledger, processStart } from "./ledger";
import type { RelayRoute } from "./relay";

const execFileP = promisify(execFile);
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const EDGELET_BIN = join(REPO, "agent/bin/edgelet.mjs");
const REGISTRY_PORTS = [5000, 5001];
const SANDBOX_IMAGE = "127.0.0.1:5000/edgeplane/pause:1";
/** where the hosts' disks live (overlayfs needs a real filesystem) and their sockets */
const DATA_ROOT = "/var/lib/edgeplane/hosts";
const RUN_ROOT = "/run/edgeplane/hosts";
/** LAN subnets are 10.250.X.0/24, one X per run; a host's subnet is a /27 of it */
const LAN_PREFIX = "10.250";

export interface HostsOptions {
  count: number;
  /** the control plane, on the machine's 127.0.0.1, and an admin token for it */
  server: { url: string; token: string };
  /** every host's --pod-network (default: the cluster's, kube-system/edgeplane-network) */
  backend?: Backend;
  /**
   * how many L2 subnets the hosts spread over (round robin), routed to each other by the LAN's
   * router: 2 or more makes peers that host-gw cannot reach (VXLAN carries them). Default 1.
   */
  subnets?: number;
  /** node names are <prefix>1 .. <prefix>N (default "host-") */
  namePrefix?: string;
  /** more edgelet flags, for every host */
  edgeletArgs?: string[];
  /** progress and the guard's output */
  log?: (m: string) => void;
  /** how long to wait for the nodes to be Ready (default 90 s) */
  readyTimeoutMs?: number;
}

export interface Host {
  name: string;
  /** the network namespace (/run/netns/<netns>) */
  netns: string;
  /** its InternalIP on the LAN, reachable from the machine */
  ip: string;
  /** its containerd's CRI endpoint (a Unix socket path: reachable from the machine too) */
  containerdSocket: string;
  /** the host's directory: containerd, the edgelet's root, CNI config, logs */
  dir: string;
  /** the edgelet's output so far */
  edgeletLog(): string;
  /** runs a command inside the host's network namespace */
  exec(
    argv: string[],
    opts?: { timeoutMs?: number },
  ): Promise<{ code: number; stdout: string; stderr: string }>;
}

export interface Hosts {
  runId: string;
  lan: { cidr: string; machineIP: string; subnets: string[] };
  hosts: Host[];
  /** the node names, in order */
  nodes: string[];
  /** stops everything and removes all the run made (also done if the caller dies) */
  stop(): Promise<void>;
  /** the ledger file (what the run made, one JSON line each) */
  ledgerFile: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function sh(cmd: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await execFileP(cmd, args, { maxBuffer: 16 << 20 });
    return stdout;
  } catch (e: any) {
    throw new Error(`${cmd} ${args.join(" ")}: ${String(e.stderr || e.message).trim()}`);
  }
}

/** Runs argv inside a namespace (nsenter --net: the mount namespace stays the machine's). */
function inNetns(netns: string, argv: string[], timeoutMs = 60_000) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((res) => {
    execFile(
      "nsenter",
      [`--net=/run/netns/${netns}`, "--", ...argv],
      { maxBuffer: 16 << 20, timeout: timeoutMs },
      (err: any, stdout, stderr) =>
        res({
          code: err ? (typeof err.code === "number" ? err.code : 1) : 0,
          stdout: String(stdout),
          stderr: String(stderr),
        }),
    );
  });
}

/** Picks a free 10.250.X.0/24 and reserves it (an atomic mkdir; the marker names its owner). */
async function reserveLan(ledger: Ledger): Promise<number> {
  const dir = join(RUN_ROOT, "lans");
  mkdirSync(dir, { recursive: true });
  const routes = await sh("ip", ["-4", "route", "show", "table", "all"]);
  const addrs = await sh("ip", ["-4", "-o", "addr", "show"]);
  for (let attempt = 0; attempt < 64; attempt++) {
    const x = Math.floor(Math.random() * 256);
    const prefix = `${LAN_PREFIX}.${x}.`;
    if (routes.includes(prefix) || addrs.includes(prefix)) continue;
    const marker = join(dir, `${LAN_PREFIX}.${x}`);
    ledger.add({ kind: "reservation", path: marker });
    try {
      mkdirSync(marker);
    } catch {
      continue; // another run has it
    }
    writeFileSync(join(marker, "owner"), `${process.pid}\n`);
    return x;
  }
  throw new Error(`no free ${LAN_PREFIX}.X.0/24 for the hosts' LAN`);
}

function containerdConfig(dir: string, socket: string): string {
  // without CAP_SYS_RESOURCE (bit 24 of CapEff) runc cannot lower oom_score_adj
  const capEff = /^CapEff:\s*([0-9a-f]+)/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? "0";
  const restrictOom = ((BigInt(`0x${capEff}`) >> 24n) & 1n) === 0n;
  return `version = 2
root = "${dir}/root"
state = "${dir}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "${socket}"

[ttrpc]
  address = "${socket}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "${dir}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${SANDBOX_IMAGE}"
  restrict_oom_score_adj = ${restrictOom}
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
        Root = "${dir}/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${dir}/net.d"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "${dir}/certs.d"
`;
}

/** Starts a process in a namespace, detached (its own process group: a terminal's Ctrl-C is the launcher's to handle). */
function spawnIn(netns: string, argv: string[], logFile: string, env?: NodeJS.ProcessEnv): ChildProcess {
  const fd = openSync(logFile, "a");
  const child = spawn("nsenter", [`--net=/run/netns/${netns}`, "--", ...argv], {
    detached: true,
    stdio: ["ignore", fd, fd],
    cwd: REPO,
    env: {
      ...(env ?? process.env),
      PATH: `/usr/local/sbin:/usr/sbin:/sbin:${process.env.PATH ?? "/usr/bin:/bin"}`,
    },
  });
  closeSync(fd);
  child.unref();
  return child;
}

async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  ms: number,
  every = 100,
): Promise<T> {
  const until = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > until)
      throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ""}`);
    await sleep(every);
  }
}

export async function startHosts(opts: HostsOptions): Promise<Hosts> {
  const count = opts.count;
  if (!Number.isInteger(count) || count < 1 || count > 80)
    throw new Error(`count must be 1..80, got ${count}`);
  const subnets = opts.subnets ?? 1;
  if (!Number.isInteger(subnets) || subnets < 1 || subnets > 4)
    throw new Error(`subnets must be 1..4, got ${subnets}`);
  if (process.getuid?.() !== 0) throw new Error("hosts need root (network namespaces, containerd)");
  const log = opts.log ?? (() => {});
  const prefix = opts.namePrefix ?? "host-";
  const runId = randomBytes(4).toString("hex").slice(0, 5);
  const tag = `eph${runId}`; // also the machine's link (8 characters: well within IFNAMSIZ)
  const runDir = join(RUN_ROOT, runId);
  const dataDir = join(DATA_ROOT, runId);
  mkdirSync(runDir, { recursive: true, mode: 0o700 });
  const ledgerFile = join(runDir, "made.jsonl");
  const ledger = new Ledger(ledgerFile);
  ledger.add({ kind: "dir", path: runDir });
  ledger.add({ kind: "dir", path: dataDir });
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });

  // the relays' routes: the registries and the control plane, through sockets of the run
  const cpPort = Number(new URL(opts.server.url).port || 80);
  const routes: RelayRoute[] = [...REGISTRY_PORTS, cpPort].map((port) => ({
    port,
    socket: join(runDir, `r${port}.sock`),
  }));
  // the guard: serves the machine's ends of the relays, and undoes the ledger when our end of
  // its stdin closes (stop, or our death)
  const guard = spawn(
    process.execPath,
    ["--import", "tsx", join(REPO, "local-engine/hosts/guard-main.ts"), ledgerFile, JSON.stringify(routes)],
    { detached: true, stdio: ["pipe", "pipe", "pipe"], cwd: REPO },
  );
  guard.stderr?.on("data", (d) => log(String(d).trimEnd()));
  let guardOut = "";
  guard.stdout?.on("data", (d) => (guardOut += d));
  guard.unref();
  for (const s of [guard.stdout, guard.stderr] as any[]) s?.unref?.();
  const guardExit = new Promise<void>((r) => guard.once("exit", () => r()));
  const children: ChildProcess[] = [];
  let stopped = false;
  const stop = async () => {
    if (stopped) return guardExit;
    stopped = true;
    guard.stdin?.end();
    await guardExit;
  };

  try {
    const x = await reserveLan(ledger);
    const lanCidr = `${LAN_PREFIX}.${x}.0/24`;
    const machineIP = `${LAN_PREFIX}.${x}.254`;
    const routerUp = `${LAN_PREFIX}.${x}.255`;
    const subnetOf = (k: number) => ({
      cidr: `${LAN_PREFIX}.${x}.${32 * k}/27`,
      router: `${LAN_PREFIX}.${x}.${32 * k + 1}`,
    });

    await waitFor(
      "the hosts' guard and relays",
      async () => (guardOut.includes("ready") ? true : undefined),
      20_000,
      50,
    );

    // the LAN: a bridge in a namespace that also routes its subnets and the machine's link
    const lan = `${tag}-lan`;
    ledger.add({ kind: "netns", name: lan });
    await sh("ip", ["netns", "add", lan]);
    const lanCmds = [
      "link set lo up",
      "link add br0 type bridge",
      "link set br0 up",
      ...Array.from({ length: subnets }, (_, k) => `addr add ${subnetOf(k).router}/27 dev br0`),
    ];
    for (const c of lanCmds) await sh("ip", ["-n", lan, ...c.split(" ")]);
    await inNetns(lan, ["sysctl", "-qw", "net.ipv4.ip_forward=1"]);
    ledger.add({ kind: "link", name: tag });
    await sh("ip", ["link", "add", tag, "type", "veth", "peer", "name", "machine", "netns", lan]);
    await sh("ip", ["-n", lan, "addr", "add", `${routerUp}/31`, "dev", "machine"]);
    await sh("ip", ["-n", lan, "link", "set", "machine", "up"]);
    await sh("ip", ["addr", "add", `${machineIP}/31`, "dev", tag]);
    await sh("ip", ["link", "set", tag, "up"]);
    await sh("ip", ["route", "add", lanCidr, "via", routerUp, "dev", tag]);

    // a bootstrap token the hosts' agents exchange for their own credentials, as any node joins
    const { id, secret, token } = randomBootstrapToken();
    const made = await fetch(`${opts.server.url}/api/v1/namespaces/kube-system/secrets`, {
      method: "POST",
      headers: { authorization: `Bearer ${opts.server.token}`, "content-type": "application/json" },
      body: JSON.stringify(bootstrapTokenSecret(id, secret, { ttlSeconds: 24 * 3600 })),
    });
    if (made.status !== 201)
      throw new Error(`creating a bootstrap token failed: ${made.status} ${await made.text()}`);

    const cgroupBase = `edgeplane-hosts/${runId}`;
    ledger.add({ kind: "cgroup", path: cgroupBase });
    const hosts: Host[] = [];
    const startHost = async (i: number): Promise<Host> => {
      const name = `${prefix}${i}`;
      const netns = `${tag}-${name}`;
      const k = (i - 1) % subnets;
      const j = Math.floor((i - 1) / subnets);
      const { router } = subnetOf(k);
      const ip = `${LAN_PREFIX}.${x}.${32 * k + 10 + j}`;
      const dir = join(dataDir, name);
      const sockDir = join(runDir, name);
      mkdirSync(sockDir, { recursive: true });
      mkdirSync(join(dir, "net.d"), { recursive: true });
      const socket = join(sockDir, "containerd.sock");

      ledger.add({ kind: "netns", name: netns });
      await sh("ip", ["netns", "add", netns]);
      // the host's eth0, its other end on the LAN's bridge
      const lanEnd = `${name.replace(/[^a-z0-9]/g, "").slice(-10)}`;
      await sh("ip", [
        "-n",
        netns,
        "link",
        "add",
        "eth0",
        "type",
        "veth",
        "peer",
        "name",
        lanEnd,
        "netns",
        lan,
      ]);
      await sh("ip", ["-n", lan, "link", "set", lanEnd, "master", "br0", "up"]);
      await sh("ip", ["-n", netns, "link", "set", "lo", "up"]);
      await sh("ip", ["-n", netns, "addr", "add", `${ip}/27`, "dev", "eth0"]);
      await sh("ip", ["-n", netns, "link", "set", "eth0", "up"]);
      await sh("ip", ["-n", netns, "route", "add", "default", "via", router]);

      // containerd: everything of its own, registries through the relay
      for (const port of REGISTRY_PORTS) {
        const d = join(dir, "certs.d", `127.0.0.1:${port}`);
        mkdirSync(d, { recursive: true });
        writeFileSync(
          join(d, "hosts.toml"),
          `server = "http://127.0.0.1:${port}"\n\n[host."http://127.0.0.1:${port}"]\n  capabilities = ["pull", "resolve"]\n`,
        );
      }
      writeFileSync(join(dir, "containerd.toml"), containerdConfig(dir, socket));
      ledger.add({ kind: "runtime", host: name, socket, state: join(dir, "state") });
      const ctd = spawnIn(
        netns,
        ["containerd", "--config", join(dir, "containerd.toml")],
        join(dir, "containerd.log"),
      );
      children.push(ctd);
      ledger.add({
        kind: "process",
        pid: ctd.pid!,
        start: processStart(ctd.pid!) ?? "",
        role: "containerd",
        host: name,
      });

      const relay = spawnIn(
        netns,
        [
          process.execPath,
          "--import",
          "tsx",
          join(REPO, "local-engine/hosts/relay-main.ts"),
          JSON.stringify(routes),
        ],
        join(dir, "relay.log"),
      );
      children.push(relay);
      ledger.add({
        kind: "process",
        pid: relay.pid!,
        start: processStart(relay.pid!) ?? "",
        role: "relay",
        host: name,
      });

      const cri = new CriClient({ endpoint: `unix://${socket}` });
      try {
        await waitFor("containerd", async () => (existsSync(socket) ? true : undefined), 20_000, 50);
        await cri.waitReady(30_000, 100, ["RuntimeReady"]);
      } finally {
        cri.close();
      }
      await waitFor(
        `the relay of ${name}`,
        async () => (readFileSync(join(dir, "relay.log"), "utf8").includes("ready") ? true : undefined),
        20_000,
        50,
      );

      const args = [
        process.execPath,
        EDGELET_BIN,
        "join",
        "--server",
        opts.server.url,
        "--token",
        token,
        "--name",
        name,
        "--root",
        join(dir, "edgelet"),
        "--containerd-socket",
        `unix://${socket}`,
        "--cni-conf-dir",
        join(dir, "net.d"),
        "--cgroup-root",
        `/${cgroupBase}/${name}`,
        "--node-ip",
        ip,
        ...(opts.backend ? ["--pod-network", opts.backend] : []),
        ...(opts.edgeletArgs ?? []),
      ];
      const edgelet = spawnIn(netns, args, join(dir, "edgelet.log"));
      children.push(edgelet);
      ledger.add({
        kind: "process",
        pid: edgelet.pid!,
        start: processStart(edgelet.pid!) ?? "",
        role: "edgelet",
        host: name,
      });
      log(`${name}: ${ip} (netns ${netns}), containerd ${socket}`);
      return {
        name,
        netns,
        ip,
        containerdSocket: socket,
        dir,
        edgeletLog: () => {
          try {
            return readFileSync(join(dir, "edgelet.log"), "utf8");
          } catch {
            return "";
          }
        },
        exec: (argv, o = {}) => inNetns(netns, argv, o.timeoutMs),
      };
    };
    // the hosts start side by side (each waits on its own containerd and agent)
    hosts.push(...(await Promise.all(Array.from({ length: count }, (_, i) => startHost(i + 1)))));

    // Ready, with a podCIDR, and (unless the backend is none) its pod network published
    const deadline = opts.readyTimeoutMs ?? 90_000;
    await Promise.all(
      hosts.map((h) =>
        waitFor(
          `node ${h.name} Ready`,
          async () => {
            const r = await fetch(`${opts.server.url}/api/v1/nodes/${h.name}`, {
              headers: { authorization: `Bearer ${opts.server.token}` },
            });
            if (r.status !== 200) return undefined;
            const n: any = await r.json();
            const ready = n.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True");
            const published =
              opts.backend === "none" || n.metadata?.annotations?.["network.edgeplane.dev/public-ip"];
            return ready && n.spec?.podCIDR && published ? true : undefined;
          },
          deadline,
          200,
        ).catch((e) => {
          throw new Error(
            `${(e as Error).message}\n--- edgelet log of ${h.name} ---\n${h.edgeletLog().slice(-4000)}`,
          );
        }),
      ),
    );
    const subnetCidrs = Array.from({ length: subnets }, (_, k) => subnetOf(k).cidr);
    return {
      runId,
      lan: { cidr: lanCidr, machineIP, subnets: subnetCidrs },
      hosts,
      nodes: hosts.map((h) => h.name),
      stop,
      ledgerFile,
    };
  } catch (e) {
    await stop().catch(() => {});
    throw e;
  }
}

/** Whether this machine can run hosts (root, containerd, nsenter); the reason when it cannot. */
export function hostsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return "not root";
  for (const bin of [
    "/usr/bin/containerd",
    "/usr/sbin/runc",
    "/usr/bin/nsenter",
    "/usr/sbin/nft",
    "/usr/lib/cni/bridge",
  ])
    if (!existsSync(bin)) return `${bin} not found (npm run setup:containerd)`;
  if (!existsSync("/run/edgeplane/containerd.sock"))
    return "the local registries and images are not set up (npm run setup:containerd)";
  return undefined;
}
