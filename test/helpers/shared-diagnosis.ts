// What the summary reporter shows of the shared server when a test failed: whether it still
// answers (through the front door, and at workerd's own port), and when it does not, what its
// processes are doing: their CPU use and open files, workerd's native and JavaScript stacks
// (with gdb, when installed), and the JavaScript stack of the engine's Node process (the front
// door; a Node diagnostic report on SIGUSR2); then the end of its engine's output. All of it runs in vitest's main process,
// where global-setup.ts registers the function under this key.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { descendants } from "../../local-engine/devserver";

export const SHARED_SERVER_DIAGNOSIS = Symbol.for("edgeplane.sharedServerDiagnosis");

/** How long a probe waits for /livez. */
const PROBE_MS = 5000;

export interface DiagnosedServer {
  url: string;
  internalPort: number;
  stateDir: string;
  child: { pid?: number };
  output(): string;
}

async function probe(url: string): Promise<{ ok: boolean; text: string }> {
  const t0 = Date.now();
  try {
    const r = await fetch(`${url}/livez`, { signal: AbortSignal.timeout(PROBE_MS) });
    return { ok: true, text: `answered ${r.status} in ${Date.now() - t0} ms` };
  } catch (e) {
    return { ok: false, text: `gave no answer (${String(e)}) after ${Date.now() - t0} ms` };
  }
}

function run(cmd: string, args: string[], timeout = 20_000): string {
  try {
    return execFileSync(cmd, args, { encoding: "utf8", timeout, stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    return `(${cmd} failed: ${String(e).slice(0, 200)})`;
  }
}

/** utime + stime (clock ticks) and the state letter of a process. */
function stat(pid: number): { ticks: number; state: string; name: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const name = text.slice(text.indexOf("(") + 1, text.lastIndexOf(")"));
    const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { ticks: Number(f[11]) + Number(f[12]), state: f[0], name };
  } catch {
    return undefined;
  }
}

async function cpuOf(pids: number[]): Promise<string> {
  const before = new Map(pids.map((p) => [p, stat(p)]));
  await new Promise((r) => setTimeout(r, 1000));
  return pids
    .map((p) => {
      const a = before.get(p);
      const b = stat(p);
      if (!a || !b) return `${p}: gone`;
      let fds = "?";
      try {
        fds = String(readdirSync(`/proc/${p}/fd`).length);
      } catch {
        // not ours to read
      }
      return `${p} ${b.name}: ${b.ticks - a.ticks}% CPU over 1 s, state ${b.state}, ${fds} open files`;
    })
    .join("\n");
}

/** The engine's JavaScript stack, from a Node diagnostic report written on SIGUSR2. */
async function engineStack(pid: number, dir: string): Promise<string> {
  const reports = () => readdirSync(dir).filter((f) => f.startsWith("report.") && f.endsWith(".json"));
  const seen = new Set(reports());
  try {
    process.kill(pid, "SIGUSR2");
  } catch (e) {
    return `(no report: ${String(e)})`;
  }
  for (let i = 0; i < 30; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const fresh = reports().find((f) => !seen.has(f));
    if (!fresh) continue;
    try {
      const report = JSON.parse(readFileSync(join(dir, fresh), "utf8"));
      const js = report.javascriptStack ?? {};
      const handles = (report.libuv ?? []).filter((h: { is_active?: boolean }) => h.is_active).length;
      const stack: string[] = (js.stack ?? []).filter((l: string) => l.trim());
      return [
        stack.length ? `${js.message ?? ""}` : "(no JavaScript running: its event loop is waiting)",
        ...stack.slice(0, 15),
        `active libuv handles: ${handles}`,
      ].join("\n");
    } catch {
      // still being written
    }
  }
  return `(no report within 3 s in ${dir}: ${readdirSync(dir).join(", ")})`;
}

/**
 * The JavaScript stack workerd's thread is on now: gdb has V8 print it (its debugging helper
 * _v8_internal_Print_StackTrace) with the process's stdout pointed at a file for the moment.
 */
function jsStack(gdb: string, pid: number, dir: string): string {
  const file = join(dir, `js-stack-${pid}-${Date.now()}.txt`);
  const script = join(dir, "js-stack.gdb");
  writeFileSync(
    script,
    [
      "set pagination off",
      "call (int)dup(1)",
      "set $saved = $",
      `call (int)open("${file}", 0x241, 0644)`,
      "set $fd = $",
      "call (int)dup2($fd, 1)",
      "call (void)_v8_internal_Print_StackTrace()",
      "call (int)fflush(0)",
      "call (int)dup2($saved, 1)",
      "call (int)close($fd)",
      "call (int)close($saved)",
      "detach",
      "quit",
    ].join("\n"),
  );
  run(gdb, ["-p", String(pid), "-batch", "-x", script], 30_000);
  try {
    return readFileSync(file, "utf8").split("\n").slice(0, 40).join("\n") || "(empty)";
  } catch {
    return "(none written)";
  }
}

export function sharedServerDiagnosis(server: DiagnosedServer): () => Promise<string> {
  return async () => {
    const front = await probe(server.url);
    const lines = [`shared server at ${server.url}: /livez ${front.text}`];
    if (!front.ok) {
      const direct = await probe(`http://127.0.0.1:${server.internalPort}`);
      lines.push(`workerd's own port ${server.internalPort}: /livez ${direct.text}`);
      const engine = server.child.pid;
      if (engine) {
        const pids: number[] = [engine, ...descendants(engine)];
        lines.push("--- CPU ---", await cpuOf(pids));
        lines.push(
          "--- the engine's JavaScript stack (front door) ---",
          await engineStack(engine, server.stateDir),
        );
        const gdb = run("sh", ["-c", "command -v gdb || true"]).trim();
        for (const pid of pids.slice(1)) {
          if (!gdb) {
            lines.push(`--- native stacks of ${pid}: gdb is not installed ---`);
            break;
          }
          const bt = run(gdb, ["-p", String(pid), "-batch", "-ex", "thread apply all bt 25"], 30_000);
          lines.push(`--- native stacks of ${pid} ---`, bt.split("\n").slice(-200).join("\n"));
          for (let i = 1; i <= 3; i++)
            lines.push(`--- JavaScript stack of ${pid}, sample ${i} ---`, jsStack(gdb, pid, server.stateDir));
        }
      }
    }
    const tail = server.output().slice(-6000);
    lines.push("--- the end of its engine's output ---", tail || "(nothing)", "---");
    return lines.join("\n");
  };
}
