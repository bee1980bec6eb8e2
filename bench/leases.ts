// `npm run bench leases`: node heartbeats at scale. N nodes (default 5,000) each renew their
// Lease in kube-node-lease every 10 s, as the kubelet's lease controller does (an update of the
// lease it holds, with its resourceVersion; on a conflict it reads the lease again and retries),
// for BENCH_LEASES_SECONDS (default 300). Run twice in the same run: leases in one store shard
// (the baseline) and spread over BENCH_LEASES_SHARDS shards (default 4, by name:
// EDGEPLANE_STORE_SHARDS). A renewal fails when it is not stored within the lease's 40 s.
// The nodes here are their leases only: no tunnels, no pods (the cost measured is the leases').
// BENCH_LEASES_BASELINE=0 skips the one-shard run.

import { startApiServer } from "./lib/apiserver";
import { groupCpu } from "./lib/cpu";
import { expectStatus, keepAliveAgent, request } from "./lib/http";
import { table, writeResults } from "./lib/report";
import { round, sleep, summarize } from "./lib/stats";

const NODES = Number(process.env.BENCH_LEASES_NODES ?? 5000);
const SECONDS = Number(process.env.BENCH_LEASES_SECONDS ?? 300);
const SHARDS = Number(process.env.BENCH_LEASES_SHARDS ?? 4);
const PERIOD_MS = 10_000;
const LEASE_SECONDS = 40;
const NS = "kube-node-lease";
const path = (name?: string) =>
  `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases${name ? `/${name}` : ""}`;

const microTime = (ms: number) => new Date(ms).toISOString().replace("Z", "000Z");

interface Lease {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: { holderIdentity: string; leaseDurationSeconds: number; renewTime: string };
}

interface Run {
  label: string;
  renewals: number;
  failed: number;
  conflicts: number;
  latency: ReturnType<typeof summarize>;
  /** the longest a lease went between two stored renewals, ms */
  maxGap: number;
  workerdMsPerRenewal: number;
  workerdCores: number;
}

async function runOnce(label: string, vars: Record<string, string>): Promise<Run> {
  const server = await startApiServer({ vars });
  const t = server.front;
  const agent = keepAliveAgent(64);
  try {
    // the nodes' leases, as each kubelet creates its own
    const leases: Lease[] = [];
    const lastStored: number[] = [];
    for (let i = 0; i < NODES; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, NODES - i) }, async (_, k) => {
          const name = `node-${String(i + k).padStart(5, "0")}`;
          const body: Lease = {
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            metadata: { name, namespace: NS },
            spec: {
              holderIdentity: name,
              leaseDurationSeconds: LEASE_SECONDS,
              renewTime: microTime(Date.now()),
            },
          };
          const r = await expectStatus(
            201,
            request(t, agent, "POST", path(), JSON.stringify(body)),
            "create lease",
          );
          leases[i + k] = JSON.parse(r.body);
          lastStored[i + k] = Date.now();
        }),
      );
    }
    console.log(`${label}: ${NODES} leases created; renewing every ${PERIOD_MS / 1000} s for ${SECONDS} s`);

    const latencies: number[] = [];
    let failed = 0;
    let conflicts = 0;
    let maxGap = 0;
    const renew = async (i: number): Promise<void> => {
      const began = Date.now();
      for (let attempt = 0; attempt < 5; attempt++) {
        const lease = leases[i];
        lease.spec.renewTime = microTime(Date.now());
        let r: Awaited<ReturnType<typeof request>>;
        try {
          r = await request(t, agent, "PUT", path(lease.metadata.name), JSON.stringify(lease));
        } catch {
          continue;
        }
        if (r.status === 200) {
          leases[i] = JSON.parse(r.body);
          const at = Date.now();
          latencies.push(at - began);
          maxGap = Math.max(maxGap, at - lastStored[i]);
          if (at - lastStored[i] > LEASE_SECONDS * 1000) failed++;
          lastStored[i] = at;
          return;
        }
        if (r.status === 409) {
          conflicts++;
          const g = await request(t, agent, "GET", path(lease.metadata.name));
          if (g.status === 200) leases[i] = JSON.parse(g.body);
        }
      }
      failed++;
    };

    const before = groupCpu(server.pgid);
    const start = Date.now();
    const end = start + SECONDS * 1000;
    const inflight = new Set<Promise<void>>();
    // each node renews at its own offset in the period, as kubelets started at different times
    let tick = 0;
    for (;;) {
      const at = start + (tick * PERIOD_MS) / NODES;
      if (at >= end) break;
      const wait = at - Date.now();
      if (wait > 2) await sleep(wait);
      const p = renew(tick % NODES).finally(() => inflight.delete(p));
      inflight.add(p);
      tick++;
    }
    await Promise.all(inflight);
    const after = groupCpu(server.pgid);
    const wallMs = Date.now() - start;
    const workerdMs = after.workerd - before.workerd;
    const renewals = latencies.length;
    return {
      label,
      renewals,
      failed,
      conflicts,
      latency: summarize(latencies),
      maxGap,
      workerdMsPerRenewal: workerdMs / Math.max(1, renewals),
      workerdCores: workerdMs / wallMs,
    };
  } finally {
    agent.destroy();
    await server.stop();
  }
}

const one = process.env.BENCH_LEASES_BASELINE === "0" ? undefined : await runOnce("one shard", {});
const spread = await runOnce(`${SHARDS} shards`, { EDGEPLANE_STORE_SHARDS: `leases=${SHARDS}` });
const runs = one ? [one, spread] : [spread];

console.log(
  table(
    `Lease renewals: ${NODES} nodes every ${PERIOD_MS / 1000} s for ${SECONDS} s (load ${round(
      (await import("node:os")).loadavg()[0],
      1,
    )})`,
    [
      "",
      "renewals",
      "failed",
      "409s",
      "p50 ms",
      "p99 ms",
      "max ms",
      "max gap s",
      "workerd ms/renewal",
      "workerd cores",
    ],
    runs.map((r) => [
      r.label,
      r.renewals,
      r.failed,
      r.conflicts,
      r.latency.p50,
      r.latency.p99,
      r.latency.max,
      r.maxGap / 1000,
      r.workerdMsPerRenewal,
      r.workerdCores,
    ]),
  ),
);
const metrics: Record<string, number> = {};
for (const r of runs) {
  const key = r === one ? "one" : "spread";
  metrics[`${key}_renewals`] = r.renewals;
  metrics[`${key}_failed`] = r.failed;
  metrics[`${key}_conflicts`] = r.conflicts;
  metrics[`${key}_p50_ms`] = r.latency.p50;
  metrics[`${key}_p99_ms`] = r.latency.p99;
  metrics[`${key}_max_gap_s`] = r.maxGap / 1000;
  metrics[`${key}_workerd_ms_per_renewal`] = r.workerdMsPerRenewal;
  metrics[`${key}_workerd_cores`] = r.workerdCores;
}
if (one) {
  metrics.spread_vs_one_p99 = spread.latency.p99 / one.latency.p99;
  metrics.spread_vs_one_cpu_per_renewal = spread.workerdMsPerRenewal / one.workerdMsPerRenewal;
}
console.log(`\nwrote ${writeResults("leases", metrics)}`);
