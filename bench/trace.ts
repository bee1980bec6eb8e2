// `npm run bench trace`: what recording pods' flow traces costs the create path. Two control
// planes from the same sources, one with tracing on (the default) and one with
// EDGEPLANE_TRACE=off, take pod creates from 50 clients through the front door in alternating
// rounds (so drift of the machine hits both alike); creates/s and the create p99 of each, and
// their ratios. The pods name no scheduler that exists (bench/lib/pods.ts): the create path
// alone is measured. Target: tracing on is at most 3% slower.
import { createNamespace, createPods, startApiServer } from "./lib/apiserver";
import { groupCpu } from "./lib/cpu";
import { oneShot, request } from "./lib/http";
import { table, writeResults } from "./lib/report";
import { percentile, round } from "./lib/stats";

const CLIENTS = 50;
const ROUNDS = Number(process.env.BENCH_TRACE_ROUNDS ?? 4);
const ROUND_SECONDS = Number(process.env.BENCH_TRACE_SECONDS ?? 8);
const WARM_SECONDS = 5;
const NS = "bench-trace";

function log(m: string): void {
  console.log(`[trace] ${m}`);
}

async function main(): Promise<void> {
  log("starting two control planes: tracing on, tracing off (EDGEPLANE_TRACE=off)");
  const on = await startApiServer();
  const off = await startApiServer({ vars: { EDGEPLANE_TRACE: "off" } });
  try {
    const sides = [
      { name: "on", s: on, rates: [] as number[], p99s: [] as number[], cpu: [] as number[], next: 0 },
      { name: "off", s: off, rates: [] as number[], p99s: [] as number[], cpu: [] as number[], next: 0 },
    ];
    // Warmed in the reverse order of round 0: a round right after the other side's tends to
    // have the wider tail, and so each side gets half its rounds right after the other's
    // (with round 0 following the warm-up of the other side, "on" got 4 of 6, "off" 3).
    for (const side of [...sides].reverse()) {
      await createNamespace(side.s.front, NS);
      const w = await createPods(side.s.front, NS, "warm", 0, 1_000_000, CLIENTS, WARM_SECONDS);
      log(`warm-up ${side.name}: ${round(w.perSecond)} creates/s`);
    }
    for (let r = 0; r < ROUNDS; r++) {
      // alternate which side goes first
      const order = r % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        const before = groupCpu(side.s.pgid);
        const res = await createPods(side.s.front, NS, `r${r}`, side.next, 1_000_000, CLIENTS, ROUND_SECONDS);
        const after = groupCpu(side.s.pgid);
        // CPU of the engine and its workerd per create: what the machine's other load moves least
        side.cpu.push((after.workerd + after.other - before.workerd - before.other) / Math.max(1, res.done));
        side.next += res.done + res.errors;
        if (res.errors) log(`${side.name} round ${r}: ${res.errors} errors (${res.firstError})`);
        side.rates.push(res.perSecond);
        side.p99s.push(res.latency.p99);
        log(
          `round ${r} ${side.name}: ${round(res.perSecond)} creates/s, p99 ${round(res.latency.p99)} ms, ${round(side.cpu.at(-1)!, 3)} CPU ms/create`,
        );
      }
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
    const median = (xs: number[]) => percentile(xs, 50);
    const [a, b] = sides;
    const p99 = (side: (typeof sides)[number]) => median(side.p99s);
    const metrics = {
      creates_per_s_trace_on: round(median(a.rates)),
      creates_per_s_trace_off: round(median(b.rates)),
      create_p99_ms_trace_on: round(p99(a)),
      create_p99_ms_trace_off: round(p99(b)),
      throughput_ratio_on_vs_off: round(median(a.rates) / median(b.rates), 3),
      p99_ratio_on_vs_off: round(p99(a) / p99(b), 3),
      cpu_ms_per_create_trace_on: round(median(a.cpu), 3),
      cpu_ms_per_create_trace_off: round(median(b.cpu), 3),
      cpu_ratio_on_vs_off: round(median(a.cpu) / median(b.cpu), 3),
      stages_recorded_on: stagesOn,
      stages_recorded_off: stagesOff,
    };
    console.log(
      table(
        `pod creates, ${CLIENTS} clients, ${ROUNDS} alternating rounds of ${ROUND_SECONDS}s (medians of the rounds)`,
        ["tracing", "creates/s", "create p99 ms", "CPU ms/create"],
        [
          [
            "on",
            metrics.creates_per_s_trace_on,
            metrics.create_p99_ms_trace_on,
            metrics.cpu_ms_per_create_trace_on,
          ],
          [
            "off",
            metrics.creates_per_s_trace_off,
            metrics.create_p99_ms_trace_off,
            metrics.cpu_ms_per_create_trace_off,
          ],
          [
            "on / off",
            metrics.throughput_ratio_on_vs_off,
            metrics.p99_ratio_on_vs_off,
            metrics.cpu_ratio_on_vs_off,
          ],
        ],
      ),
    );
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
