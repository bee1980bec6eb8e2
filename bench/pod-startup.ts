// pod-startup: pod start on real containerd, image present, through the whole control
// plane: API create -> scheduler -> edgelet (in-process, containerd runtime) -> Running as a
// pod watch sees it. 50 pods one after another and 20 at once (p50/p99), a nodeName variant
// (no scheduler) of 20 one after another, beside the raw CRI pod start measured in the same
// run (bench/cri-raw.ts one after another; lib/sched-cri.ts 20 at once). Target: p99 <= 2x raw CRI p99, and never above 1 s.
//
//   npm run bench pod-startup     (or: node --import tsx bench/pod-startup.ts)
// Knobs: BENCH_STARTUP_SEQ (50), BENCH_STARTUP_PAR (20), BENCH_STARTUP_RAW (20).
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CriClient } from "../agent/cri/client";
import { parseConfig } from "../agent/edgelet/config";
import { type Edgelet, startEdgelet } from "../agent/edgelet/edgelet";
import { CRI_BENCH_IMAGE, measureRawCriPodStart } from "./cri-raw";
import { startApiServer } from "./lib/apiserver";
import { groupCpu } from "./lib/cpu";
import { oneShot, request } from "./lib/http";
import { type Row, table, writeResults } from "./lib/report";
import { measureRawCriParallel } from "./lib/sched-cri";
import { ensureNamespace, load1, loadText, readyNodes, serverCreds } from "./lib/sched-load";
import { deleteAndDrain, podStarts, removeNodeSandboxes, type StartRun } from "./lib/sched-pods";
import { PodTracker } from "./lib/sched-watch";
import { ratio } from "./lib/stats";

const SOCKET = "/run/edgeplane/containerd.sock";
const SEQ = Number(process.env.BENCH_STARTUP_SEQ ?? 50);
const PAR = Number(process.env.BENCH_STARTUP_PAR ?? 20);
const RAW = Number(process.env.BENCH_STARTUP_RAW ?? 20);
const NS = "bench-startup";

const t0 = performance.now();
const log = (s: string) =>
  console.log(`[${((performance.now() - t0) / 1000).toFixed(1)}s] ${s} (load ${loadText()})`);
const out: Record<string, number> = {};
const rows: Row[] = [];

async function main(): Promise<void> {
  if (!existsSync(SOCKET)) {
    console.warn(
      `\n*** SKIPPED: containerd not running (npm run setup:containerd); no socket at ${SOCKET} ***\n`,
    );
    return;
  }
  log(`raw CRI pod start, ${RAW} pods one after another`);
  const rawLoad = load1();
  const raw = await measureRawCriPodStart(RAW, { endpoint: `unix://${SOCKET}` });
  Object.assign(out, {
    cri_raw_p50_ms: raw.p50,
    cri_raw_p99_ms: raw.p99,
    cri_raw_n: raw.n,
    cri_raw_load1: (rawLoad + load1()) / 2,
  });
  rows.push(["raw CRI pod start (same run)", raw.n, raw.p50, raw.p99, "", ""]);
  log(`raw CRI: p50 ${raw.p50} ms p99 ${raw.p99} ms`);
  const rawParLoad = load1();
  const rawPar = await measureRawCriParallel(PAR, `unix://${SOCKET}`, CRI_BENCH_IMAGE);
  Object.assign(out, {
    cri_raw_par_p50_ms: rawPar.p50,
    cri_raw_par_p99_ms: rawPar.p99,
    cri_raw_par_n: rawPar.n,
    cri_raw_par_load1: (rawParLoad + load1()) / 2,
  });
  rows.push([`raw CRI, ${PAR} at once (same run)`, rawPar.n, rawPar.p50, rawPar.p99, rawPar.max, ""]);
  log(`raw CRI ${PAR} at once: p50 ${rawPar.p50.toFixed(0)} ms p99 ${rawPar.p99.toFixed(0)} ms`);

  log("starting the control plane");
  const api = await startApiServer();
  const d = api.front;
  const { url, token } = serverCreds(d);
  const nodeName = `bench-edgelet-${Math.random().toString(36).slice(2, 7)}`;
  const root = mkdtempSync(join(tmpdir(), "edgeplane-bench-edgelet-"));
  const cri = new CriClient({ endpoint: `unix://${SOCKET}` });
  const edgeletLog: string[] = [];
  let edgelet: Edgelet | undefined;
  let tracker: PodTracker | undefined;
  try {
    await ensureNamespace(d, NS);
    edgelet = await startEdgelet(
      parseConfig([
        "join",
        "--server",
        url,
        "--token",
        token,
        "--runtime",
        "containerd",
        "--name",
        nodeName,
        "--root",
        root,
        // beside other agents on the machine's one containerd: its shared conflist, no pod network
        "--pod-cidr",
        "10.88.0.0/16",
        "--cni-ipam-dir",
        "/var/lib/edgeplane/cni/networks",
        "--pod-network",
        "none",
      ]),
      (m) => edgeletLog.push(m),
    );
    for (let i = 0; i < 120 && (await readyNodes(d, nodeName)) < 1; i++)
      await new Promise((r) => setTimeout(r, 500));
    log(`edgelet ${nodeName} joined and Ready`);
    if (!(await cri.imageStatus(CRI_BENCH_IMAGE)).image) await cri.pullImage(CRI_BENCH_IMAGE);
    tracker = new PodTracker(d, `/api/v1/namespaces/${NS}/pods`);
    await tracker.start();
    const tr = tracker;

    const run = async (
      label: string,
      key: string,
      prefix: string,
      n: number,
      mode: "sequential" | "parallel",
      node?: string,
    ) => {
      const l0 = load1();
      const c0 = groupCpu(api.pgid);
      const w0 = performance.now();
      const r: StartRun = await podStarts(d, tr, NS, prefix, n, mode, node);
      const c1 = groupCpu(api.pgid);
      const serverMs = c1.workerd + c1.proxy + c1.other - (c0.workerd + c0.proxy + c0.other);
      Object.assign(out, {
        [`${key}_running_p50_ms`]: r.running.p50,
        [`${key}_running_p99_ms`]: r.running.p99,
        [`${key}_running_max_ms`]: r.running.max,
        [`${key}_bound_p50_ms`]: r.bound.p50,
        [`${key}_bound_p99_ms`]: r.bound.p99,
        [`${key}_n`]: r.running.n,
        [`${key}_failed`]: r.failed,
        [`${key}_p99_vs_cri_raw_p99`]: ratio(r.running.p99, raw.p99),
        [`${key}_server_cpu_ms_per_pod`]: serverMs / n,
        [`${key}_wall_s`]: (performance.now() - w0) / 1000,
        [`${key}_load1`]: (l0 + load1()) / 2,
      });
      rows.push([
        label,
        r.running.n,
        r.running.p50,
        r.running.p99,
        r.running.max,
        `x${ratio(r.running.p99, raw.p99)} raw p99; bound p50 ${r.bound.p50.toFixed(0)}`,
      ]);
      log(
        `${label}: Running p50 ${r.running.p50.toFixed(0)} ms p99 ${r.running.p99.toFixed(0)} ms (${r.failed} not Running)`,
      );
      const drained = await deleteAndDrain(d, cri, NS, r.names, nodeName);
      if (!drained) log(`${label}: pods or sandboxes still left after 90 s`);
    };

    log("warm-up: 2 pods (not reported)");
    await run("warm-up", "warmup", "warm", 2, "sequential");
    for (const k of Object.keys(out).filter((k) => k.startsWith("warmup_"))) delete out[k];
    rows.pop();
    log(`${SEQ} pods one after another via the scheduler`);
    await run(`${SEQ} sequential, scheduled`, "seq", "seq", SEQ, "sequential");
    log(`${PAR} pods at once via the scheduler`);
    await run(`${PAR} at once, scheduled`, "par", "par", PAR, "parallel");
    log(`${PAR} pods one after another with spec.nodeName`);
    await run(`${PAR} sequential, spec.nodeName`, "seq_nodename", "nn", PAR, "sequential", nodeName);
    out.par_p99_vs_cri_raw_par_p99 = ratio(out.par_running_p99_ms ?? Number.NaN, rawPar.p99);
    out.target_seq_p99_le_2x_raw =
      out.seq_p99_vs_cri_raw_p99 !== undefined && out.seq_p99_vs_cri_raw_p99 <= 2 ? 1 : 0;
    out.target_par_p99_le_1s = (out.par_running_p99_ms ?? Infinity) <= 1000 ? 1 : 0;
    out.target_seq_p99_le_1s = (out.seq_running_p99_ms ?? Infinity) <= 1000 ? 1 : 0;
  } finally {
    tracker?.close();
    await edgelet?.stop().catch((e) => log(`edgelet stop: ${(e as Error).message}`));
    const left = await removeNodeSandboxes(cri, nodeName);
    if (left > 0) log(`removed ${left} sandboxes the edgelet left`);
    cri.close();
    await request(d, oneShot, "DELETE", `/api/v1/nodes/${nodeName}`).catch(() => undefined);
    await api.stop();
    rmSync(root, { recursive: true, force: true });
    const errs = edgeletLog.filter((m) => /error|fail/i.test(m));
    if (errs.length > 0)
      console.log(`edgelet errors (${errs.length}, first 10):\n  ${errs.slice(0, 10).join("\n  ")}`);
  }
  console.log(
    table(
      "pod startup: API create -> Running (watch), ms",
      ["measure", "n", "p50", "p99", "max", "note"],
      rows,
    ),
  );
  console.log(`wrote ${writeResults("pod-startup", out)}`);
}

await main();
