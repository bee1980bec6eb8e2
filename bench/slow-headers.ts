// slow-headers: the slow-header attack of issue 33 in its full form: 30 connections/s without
// credentials, each trickling its head, for 60 s, against a fresh local control plane; an
// authenticated client's latency (lists, one after another) quiet and under attack, an
// anonymous /readyz probe, and node Lease renewals (node credentials, one a second each).
// Prints the figures and the ratio attack/quiet p99; writes .edgeplane/bench/slow-headers.json.
//
//   npm run bench slow-headers
// Knobs: BENCH_ATTACK_SECONDS (60), BENCH_QUIET_SECONDS (30), BENCH_ATTACK_RATE (30/s).
import { startApiServer } from "./lib/apiserver";
import { writeResults } from "./lib/report";
import { type PhaseFigures, slowHeaderAttack } from "./lib/slow-headers";
import { ratio } from "./lib/stats";

const attackSeconds = Number(process.env.BENCH_ATTACK_SECONDS ?? 60);
const quietSeconds = Number(process.env.BENCH_QUIET_SECONDS ?? 30);
const perSecond = Number(process.env.BENCH_ATTACK_RATE ?? 30);

const t0 = performance.now();
const log = (line: string) => console.log(`[${((performance.now() - t0) / 1000).toFixed(1)}s] ${line}`);
log("apiserver: starting the control plane");
const server = await startApiServer();
const { host, port, headers } = server.front;
let failed = false;
try {
  const r = await slowHeaderAttack({
    url: `http://${host}:${port}`,
    token: headers.authorization.replace(/^Bearer /, ""),
    attackSeconds,
    quietSeconds,
    perSecond,
    log,
  });
  const row = (name: string, f: PhaseFigures) =>
    `${name.padEnd(7)} client n=${f.client.n} p50=${f.client.p50.toFixed(1)} p99=${f.client.p99.toFixed(1)} max=${f.client.max.toFixed(0)} timeouts=${f.client.timeouts} | readyz p99=${f.readyz.p99.toFixed(1)} timeouts=${f.readyz.timeouts} | leases ${f.leases.renewals} renewed, p99=${f.leases.p99.toFixed(1)} max=${f.leases.max.toFixed(0)} missed=${f.leases.missed}`;
  console.log(`\nSlow-header attack: ${perSecond} connections/s for ${attackSeconds}s (ms)`);
  console.log(row("quiet", r.quiet));
  console.log(row("attack", r.attack));
  console.log(
    `attackers: ${r.attackers.opened} opened, ${r.attackers.closedByServer} closed by the front door (${r.attackers.answered408} with 408), ${r.attackers.refused} refused`,
  );
  const p99Ratio = ratio(r.attack.client.p99, r.quiet.client.p99);
  const met = p99Ratio < 2 && r.attack.leases.missed === 0;
  console.log(
    `client p99 attack/quiet: ${p99Ratio} (target < 2), lease renewals missed: ${r.attack.leases.missed} (target 0): ${met ? "met" : "NOT met"}`,
  );
  failed = !met;
  const file = writeResults("slow-headers", {
    attack_seconds: attackSeconds,
    connections_per_second: perSecond,
    quiet_client_p50_ms: r.quiet.client.p50,
    quiet_client_p99_ms: r.quiet.client.p99,
    attack_client_p50_ms: r.attack.client.p50,
    attack_client_p99_ms: r.attack.client.p99,
    attack_client_timeouts: r.attack.client.timeouts,
    client_p99_attack_over_quiet: p99Ratio,
    quiet_readyz_p99_ms: r.quiet.readyz.p99,
    attack_readyz_p99_ms: r.attack.readyz.p99,
    attack_readyz_timeouts: r.attack.readyz.timeouts,
    attack_lease_renewals: r.attack.leases.renewals,
    attack_lease_p99_ms: r.attack.leases.p99,
    attack_leases_missed: r.attack.leases.missed,
    attackers_opened: r.attackers.opened,
    attackers_closed_by_server: r.attackers.closedByServer,
    attackers_answered_408: r.attackers.answered408,
  });
  log(`wrote ${file}`);
} finally {
  await server.stop();
}
if (failed) process.exit(1);
