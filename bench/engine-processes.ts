// engine-processes: what spreading the store shards over workerd processes of their own
// (EDGEPLANE_ENGINE_PROCESSES=2, local-engine/store-hosts.ts) costs per call against the
// one-process engine, measured in the same run: rounds alternate one server of each (never
// both at once), through the front door: pod creates at 1 and 50 clients (per second, p50,
// p99, the engine's CPU per create), and GET of a missing pod at 50 clients (authn, authz and
// one shard call: the one-shard-call ceiling). CPU is read from /proc for the engine's whole
// process group (every workerd of it), so the figures hold on a busy machine.
//
//   npm run bench engine-processes
// Knobs: BENCH_ROUNDS (2), BENCH_PROCESSES (the split count, 2).
import { cpus, loadavg } from "node:os";
import { perOp } from "./lib/api-store-report";
import { createNamespace, createPods, requestCeiling, startApiServer } from "./lib/apiserver";
import { withGroupCpu } from "./lib/cpu";
import { type Row, table, writeResults } from "./lib/report";
import type { LoadResult } from "./lib/stats";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const SPLIT = Number(process.env.BENCH_PROCESSES ?? 2);
const NS = "bench-procs";
const WARM_UP_SECONDS = 6;
const CREATES = [
  { clients: 1, count: 300, seconds: 10 },
  { clients: 50, count: 4000, seconds: 20 },
];
const CEILING_SECONDS = 6;

const t0 = performance.now();
const log = (s: string) => console.log(`[${((performance.now() - t0) / 1000).toFixed(1)}s] ${s}`);

interface Figures {
  /** per measure: ops/s, p50 and p99 ms, engine CPU ms per op (workerd, node) */
  [measure: string]: { perSecond: number; p50: number; p99: number; workerdMs: number; nodeMs: number };
}

async function measure(processes: number, round: number): Promise<Figures> {
  log(`round ${round}: EDGEPLANE_ENGINE_PROCESSES=${processes}: starting`);
  const api = await startApiServer({ engineProcesses: processes });
  const out: Figures = {};
  try {
    const d = api.front;
    await createNamespace(d, NS);
    const cpuOf = async (key: string, run: () => Promise<LoadResult>) => {
      const { result, cpu, clientMs } = await withGroupCpu(api.pgid, run);
      if (result.errors) log(`${key}: ${result.errors} errors, first: ${result.firstError}`);
      const c = perOp(cpu, clientMs, Math.max(1, result.done + result.errors));
      out[key] = {
        perSecond: result.perSecond,
        p50: result.latency.p50,
        p99: result.latency.p99,
        workerdMs: c.workerd,
        nodeMs: c.other,
      };
    };
    // workerd reaches its pace after seconds of load: warm every process up first
    await createPods(d, NS, "warm", 0, 100_000, 50, WARM_UP_SECONDS);
    let next = 0;
    for (const { clients, count, seconds } of CREATES) {
      await cpuOf(`create_c${clients}`, () =>
        createPods(d, NS, `p${clients}`, next, count, clients, seconds),
      );
      next += count;
    }
    await cpuOf("get_missing_c50", () =>
      requestCeiling(d, 404, (i) => `/api/v1/namespaces/${NS}/pods/none-${i}`, 50, CEILING_SECONDS),
    );
  } finally {
    await api.stop();
  }
  return out;
}

const byN: Record<number, Figures[]> = { 1: [], [SPLIT]: [] };
console.log(`engine-processes: ${cpus().length} cores, load ${loadavg()[0].toFixed(2)}, ${ROUNDS} round(s)`);
for (let r = 1; r <= ROUNDS; r++)
  for (const n of r % 2 ? [1, SPLIT] : [SPLIT, 1]) byN[n].push(await measure(n, r));

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const metrics: Record<string, number> = { rounds: ROUNDS, processes: SPLIT, cores: cpus().length };
const rows: Row[] = [];
for (const key of Object.keys(byN[1][0])) {
  for (const n of [1, SPLIT]) {
    const f = (pick: (x: Figures[string]) => number) => mean(byN[n].map((x) => pick(x[key])));
    const fig = {
      perSecond: f((x) => x.perSecond),
      p50: f((x) => x.p50),
      p99: f((x) => x.p99),
      workerdMs: f((x) => x.workerdMs),
      nodeMs: f((x) => x.nodeMs),
    };
    for (const [k, v] of Object.entries(fig)) metrics[`${key}_n${n}_${k}`] = v;
    rows.push([`${key}, N=${n}`, fig.perSecond, fig.p50, fig.p99, fig.workerdMs, fig.nodeMs]);
  }
  const ratio = (k: string) => metrics[`${key}_n${SPLIT}_${k}`] / metrics[`${key}_n1_${k}`];
  for (const k of ["perSecond", "p99", "workerdMs"]) metrics[`${key}_ratio_${k}`] = ratio(k);
  rows.push([`${key}, N=${SPLIT} / N=1`, ratio("perSecond"), "", ratio("p99"), ratio("workerdMs"), ""]);
}
console.log(
  table(
    `EDGEPLANE_ENGINE_PROCESSES=${SPLIT} against 1, same run (means of ${ROUNDS} round(s), through the front door)`,
    ["measure", "ops/s", "p50 ms", "p99 ms", "workerd CPU ms/op", "node CPU ms/op"],
    rows,
  ),
);
console.log(`\nwrote ${writeResults("engine-processes", metrics)}`);
