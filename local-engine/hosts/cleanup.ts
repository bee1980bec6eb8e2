// Undoing a run of hosts from its ledger, in the order that leaves nothing behind: the agents
// first (so none recreates a pod), then every pod through each containerd's own CRI (its shims
// and containers exit with them), the containerds, whatever of their processes survived (found
// by the pid files in their own state dirs), the relays, mounts under the run's directories,
// the namespaces (their links, routes, rules and nft tables go with them), the machine's own
// links, the cgroups and the directories. Every step tolerates what is already gone.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { CriClient } from "../../agent/cri/client";
import { hierarchies } from "../../agent/edgelet/cgroups";
import { type Made, processStart } from "./ledger";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function alive(pid: number, start?: string): boolean {
  if (start !== undefined && processStart(pid) !== start) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGTERM, then SIGKILL after graceMs, for processes that are still the ones we started. */
async function stopProcesses(list: { pid: number; start?: string }[], graceMs: number): Promise<void> {
  const live = list.filter((p) => alive(p.pid, p.start));
  for (const p of live) {
    try {
      process.kill(p.pid, "SIGTERM");
    } catch {}
  }
  const until = Date.now() + graceMs;
  while (live.some((p) => alive(p.pid, p.start)) && Date.now() < until) await sleep(50);
  for (const p of live) {
    if (!alive(p.pid, p.start)) continue;
    try {
      process.kill(p.pid, "SIGKILL");
    } catch {}
  }
  while (live.some((p) => alive(p.pid, p.start)) && Date.now() < until + 2000) await sleep(50);
}

/** Every pod of a containerd, stopped and removed through its CRI. */
async function removePods(socket: string, log: (m: string) => void): Promise<void> {
  if (!existsSync(socket)) return;
  const cri = new CriClient({ endpoint: `unix://${socket}`, timeoutMs: 15_000 });
  try {
    // stopping a sandbox kills its containers and tears down its network; removing it removes them
    await Promise.all(
      (await cri.listPodSandbox().catch(() => [])).map(async (s) => {
        await cri.stopPodSandbox(s.id).catch((e) => log(`stop sandbox ${s.id}: ${(e as Error).message}`));
        await cri.removePodSandbox(s.id).catch((e) => log(`remove sandbox ${s.id}: ${(e as Error).message}`));
      }),
    );
  } finally {
    cri.close();
  }
}

/** Shims and container processes a containerd left (it died first): from the pid files in its state dir. */
function leftoverPids(state: string): { pid: number }[] {
  const out: { pid: number }[] = [];
  const tasks = join(state, "io.containerd.runtime.v2.task");
  if (!existsSync(tasks)) return out;
  for (const ns of readdirSync(tasks))
    for (const id of readdirSync(join(tasks, ns)).filter((d) => existsSync(join(tasks, ns, d))))
      for (const f of ["init.pid", "shim.pid"]) {
        try {
          const pid = Number(readFileSync(join(tasks, ns, id, f), "utf8").trim());
          if (pid > 1) out.push({ pid });
        } catch {}
      }
  return out;
}

/** Mount points at or under any of the roots, deepest first. */
function mountsUnder(roots: string[]): string[] {
  const out: string[] = [];
  for (const line of readFileSync("/proc/self/mountinfo", "utf8").split("\n")) {
    const mp = line.split(" ")[4];
    if (!mp) continue;
    const path = mp.replace(/\\040/g, " ");
    if (roots.some((r) => path === r || path.startsWith(`${r}/`))) out.push(path);
  }
  return out.sort((a, b) => b.length - a.length);
}

function quiet(cmd: string, args: string[]): void {
  try {
    execFileSync(cmd, args, { stdio: "ignore" });
  } catch {}
}

function rmCgroupTree(dir: string): void {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { withFileTypes: true }))
    if (e.isDirectory()) rmCgroupTree(join(dir, e.name));
  try {
    rmdirSync(dir);
  } catch {}
}

export async function undo(made: Made[], log: (m: string) => void = () => {}): Promise<void> {
  const of = <K extends Made["kind"]>(k: K) =>
    made.filter((m): m is Extract<Made, { kind: K }> => m.kind === k);
  const procs = of("process");
  const began = Date.now();
  const phases: string[] = [];
  let last = began;
  const mark = (what: string) => {
    phases.push(`${what} ${Date.now() - last} ms`);
    last = Date.now();
  };
  // 1. the agents: none may start a pod again while they go
  await stopProcesses(
    procs.filter((p) => p.role === "edgelet"),
    8000,
  );
  mark("agents");
  // 2. every pod, through its own containerd (still running)
  await Promise.all(
    of("runtime").map((r) =>
      Promise.race([removePods(r.socket, log), sleep(30_000)]).catch((e) =>
        log(`pods of ${r.host}: ${(e as Error).message}`),
      ),
    ),
  );
  mark("pods");
  // 3. the containerds, then anything of theirs still running
  await stopProcesses(
    procs.filter((p) => p.role === "containerd"),
    5000,
  );
  await stopProcesses(
    of("runtime").flatMap((r) => leftoverPids(r.state)),
    2000,
  );
  await stopProcesses(
    procs.filter((p) => p.role === "relay"),
    2000,
  );
  mark("processes");
  // 4. mounts under the run's directories (rootfs overlays, sandbox namespaces, shm)
  const dirs = of("dir").map((d) => d.path);
  for (const mp of mountsUnder(dirs)) quiet("umount", ["-l", mp]);
  // 5. namespaces (and everything inside them), then the machine's own links
  for (const n of of("netns").reverse()) quiet("ip", ["netns", "delete", n.name]);
  for (const l of of("link")) quiet("ip", ["link", "delete", l.name]);
  // 6. cgroups, directories, the subnet's reservation
  for (const c of of("cgroup"))
    for (const h of hierarchies()) {
      rmCgroupTree(join(h, c.path));
      try {
        rmdirSync(dirname(join(h, c.path))); // the parent all runs share, once no run uses it
      } catch {}
    }
  const parents = new Set<string>();
  for (const d of [...dirs].reverse()) {
    rmSync(d, { recursive: true, force: true });
    parents.add(dirname(d));
  }
  for (const r of of("reservation")) {
    rmSync(r.path, { recursive: true, force: true });
    parents.add(dirname(r.path));
  }
  mark("namespaces, links, cgroups, dirs");
  log(`undone in ${Date.now() - began} ms (${phases.join(", ")})`);
  // the folders all runs share, once no run uses them (deepest first)
  for (const p of [...parents].sort((a, b) => b.length - a.length))
    for (let d = p; d.split("/").length > 3; d = dirname(d)) {
      try {
        rmdirSync(d);
      } catch {
        break;
      }
    }
}
