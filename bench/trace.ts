// `npm run bench trace`: what recording pods' flow traces costs the create path. Two control
// planes from the same sources, one with tracing on (the default) and one with
// EDGEPLANE_TRACE=off, take pod creates from 50 clients through the front door in interleaved
// rounds, on/off then off/on (ABBA...), so drift of the machine and the order within a pair hit
// both alike. Each pair of rounds gives a ratio on/off of creates/s, create p99 and CPU per
// create; the figures are the medians of those pair ratios (and of the rounds' values). CPU per
// create is the workerd's (utime + stime from /proc/<pid>/stat, the Worker and its Durable
// Objects) and, apart, the engine's Node process: far less noisy than the wall-clock rate on a
// shared 2-core machine. The pods name no scheduler that exists (bench/lib/pods.ts): the create
// path alone is measured. After each round both engines are let go quiet (what the round's
// creates set off, e.g. the informers' pulls, counts in its CPU and not in the next round's).
// Target: tracing on is at most 3% slower.
import { loadavg } from "node:os";
import { createNamespace, createPods, startApiServer } from "./lib/apiserver";
import { groupCpu } from "./lib/cpu";
import { oneShot, request } from "./lib/http";
import { table, writeResults } from "./lib/report";
import { round } from "./lib/stats";

const CLIENTS = 50;
const ROUNDS = Number(process.env.BENCH_TRACE_ROUNDS ?? 30);
const ROUND_SECONDS = Number(process.env.BENCH_TRACE_SECONDS ?? 3);
const WARM_SECONDS = 5;
const NS = "bench-trace";

function log(m: string): void {
  console.log(`[trace] ${m}`);
}

/** The middle value (the mean of the middle two for an even count); NaN for none. */
function median(xs: readonly number[]): number {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return Number.NaN;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

/** The spread of samples as "min-max (quartiles q1-q3)". */
function spread(xs: readonly number[], digits = 3): string {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return "-";
  const q = (p: number) => v[Math.min(v.length - 1, Math.floor(p * (v.length - 1) + 0.5))];
  return `${round(v[0], digits)}-${round(v[v.length - 1], digits)} (quartiles ${round(q(0.25), digits)}-${round(q(0.75), digits)})`;
}

interface Round {
  rate: number;
  p99: number;
  /** CPU ms per create of the workerd (Worker + Durable Objects) */
  workerdCpu: number;
  /** CPU ms per create of the engine's Node process (front door, relay) */
  engineCpu: number;
}

/** Waits (up to 15 s) until no engine's workerd used more than a tenth of a core over 250 ms. */
async function quiet(pgids: number[]): Promise<void> {
  const deadline = Date.now() + 15_000;
  let last = pgids.map((p) => groupCpu(p).workerd);
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    const now = pgids.map((p) => groupCpu(p).workerd);
    const busy = now.some((v, i) => v - last[i] > 25);
    last = now;
    if (!busy) return;
  }
}

async function main(): Promise<void> {
  log(
    `load before: ${loadavg()
      .map((x) => round(x, 2))
      .join(" ")}`,
  );
  log("starting two control planes: tracing on, tracing off (EDGEPLANE_TRACE=off)");
  const on = await startApiServer();
  const off = await startApiServer({ vars: { EDGEPLANE_TRACE: "off" } });
  try {
    const sides = [
      { name: "on", s: on, rounds: [] as Round[], next: 0 },
      { name: "off", s: off, rounds: [] as Round[], next: 0 },
    ];
    // Warmed in the reverse order of round 0, so the pair orders stay balanced from the start.
    for (const side of [...sides].reverse()) {
      await createNamespace(side.s.front, NS);
      const w = await createPods(side.s.front, NS, "warm", 0, 1_000_000, CLIENTS, WARM_SECONDS);
      log(`warm-up ${side.name}: ${round(w.perSecond)} creates/s`);
    }
    const pgids = sides.map((x) => x.s.pgid);
    await quiet(pgids);
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        const before = groupCpu(side.s.pgid);
        const res = await createPods(side.s.front, NS, `r${r}`, side.next, 1_000_000, CLIENTS, ROUND_SECONDS);
        // the round's creates are not done when they are answered (the scheduler and the
        // controllers go on with them): a round's CPU counts until its side is quiet again,
        // and the next round starts then, so it does not run beside this one's tail
        await quiet(pgids);
        const after = groupCpu(side.s.pgid);
        const done = Math.max(1, res.done);
        side.next += res.done + res.errors;
        if (res.errors) log(`${side.name} round ${r}: ${res.errors} errors (${res.firstError})`);
        const x: Round = {
          rate: res.perSecond,
          p99: res.latency.p99,
          workerdCpu: (after.workerd - before.workerd) / done,
          engineCpu: (after.other - before.other) / done,
        };
        side.rounds.push(x);
        log(
          `round ${r} ${side.name}: ${round(x.rate)} creates/s, p99 ${round(x.p99)} ms, CPU/create workerd ${round(x.workerdCpu, 3)} ms, engine ${round(x.engineCpu, 3)} ms`,
        );
      }
      const [a, b] = [sides[0].rounds[r], sides[1].rounds[r]];
      log(
        `pair ${r} on/off: creates/s ${round(a.rate / b.rate, 3)}, p99 ${round(a.p99 / b.p99, 3)}, workerd CPU/create ${round(a.workerdCpu / b.workerdCpu, 3)}`,
      );
    }
    // is it really on (and off)? one pod's trace from each side
    const probe = async (side: (typeof sides)[number]) => {
      const r = await request(
        side.s.front,
        oneShot,
        "GET",
        `/apis/trace.edgeplane.dev/v1alpha1/namespaces/${NS}/podtraces/r0-0`,
      );
      return JSON.parse(r.body).stages?.length ?? -1;
    };
    const stagesOn = await probe(sides[0]);
    const stagesOff = await probe(sides[1]);
    log(`stages recorded for one pod: on ${stagesOn}, off ${stagesOff}`);
    log(
      `load after: ${loadavg()
        .map((x) => round(x, 2))
        .join(" ")}`,
    );
    const [a, b] = sides;
    const of = (side: (typeof sides)[number], k: keyof Round) => side.rounds.map((x) => x[k]);
    const pairs = (k: keyof Round) => a.rounds.map((x, i) => x[k] / b.rounds[i][k]);
    const metrics = {
      creates_per_s_trace_on: round(median(of(a, "rate"))),
      creates_per_s_trace_off: round(median(of(b, "rate"))),
      create_p99_ms_trace_on: round(median(of(a, "p99"))),
      create_p99_ms_trace_off: round(median(of(b, "p99"))),
      workerd_cpu_ms_per_create_trace_on: round(median(of(a, "workerdCpu")), 4),
      workerd_cpu_ms_per_create_trace_off: round(median(of(b, "workerdCpu")), 4),
      engine_cpu_ms_per_create_trace_on: round(median(of(a, "engineCpu")), 4),
      engine_cpu_ms_per_create_trace_off: round(median(of(b, "engineCpu")), 4),
      // the medians of the pairs' ratios: the headline figures
      throughput_ratio_on_vs_off: round(median(pairs("rate")), 3),
      p99_ratio_on_vs_off: round(median(pairs("p99")), 3),
      workerd_cpu_ratio_on_vs_off: round(median(pairs("workerdCpu")), 3),
      engine_cpu_ratio_on_vs_off: round(median(pairs("engineCpu")), 3),
      rounds: ROUNDS,
      stages_recorded_on: stagesOn,
      stages_recorded_off: stagesOff,
    };
    console.log(
      table(
        `pod creates, ${CLIENTS} clients, ${ROUNDS} interleaved pairs of ${ROUND_SECONDS}s rounds (medians; ratios are medians of the pairs' ratios)`,
        ["tracing", "creates/s", "create p99 ms", "workerd CPU ms/create", "engine CPU ms/create"],
        [
          [
            "on",
            metrics.creates_per_s_trace_on,
            metrics.create_p99_ms_trace_on,
            metrics.workerd_cpu_ms_per_create_trace_on,
            metrics.engine_cpu_ms_per_create_trace_on,
          ],
          [
            "off",
            metrics.creates_per_s_trace_off,
            metrics.create_p99_ms_trace_off,
            metrics.workerd_cpu_ms_per_create_trace_off,
            metrics.engine_cpu_ms_per_create_trace_off,
          ],
          [
            "on / off",
            metrics.throughput_ratio_on_vs_off,
            metrics.p99_ratio_on_vs_off,
            metrics.workerd_cpu_ratio_on_vs_off,
            metrics.engine_cpu_ratio_on_vs_off,
          ],
        ],
      ),
    );
    console.log(`pairs' ratios on/off, creates/s: ${spread(pairs("rate"))}`);
    console.log(`pairs' ratios on/off, p99: ${spread(pairs("p99"))}`);
    console.log(`pairs' ratios on/off, workerd CPU per create: ${spread(pairs("workerdCpu"))}`);
    console.log(`wrote ${writeResults("trace", metrics)}`);
  } finally {
    await on.stop();
    await off.stop();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
