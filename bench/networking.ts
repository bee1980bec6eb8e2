// `npm run bench networking`: cluster networking's figures (issue 28), each beside a floor
// measured in the same run. Services rows come from bench/lib/net-services.ts (the nft
// proxier at scale, Service programming latency); the pod network's rows from
// bench/lib/net-pods.ts (local-engine/hosts: three hosts, two of them on one subnet, the third
// behind a router). Needs root, nft and containerd set up (npm run setup:containerd).
//
//   npm run bench networking   (or: node --import tsx bench/networking.ts)
// Knobs: BENCH_NET_NODES (3), BENCH_NET_CHANGES (100), BENCH_NET_ROUNDS (3),
// BENCH_NET_REQUESTS (2000), BENCH_NET_CONCURRENCY (8), BENCH_NET_SECONDS (3), BENCH_NET_BULK_MB (64).
import { existsSync } from "node:fs";
import { loadavg } from "node:os";
import { hostsUnavailable, startHosts } from "../local-engine/hosts/hosts";
import { startApiServer } from "./lib/apiserver";
import { POD_NET_HEADER, podNetworkFigures } from "./lib/net-pods";
import { haveNft, programmingLatency, proxierScale } from "./lib/net-services";
import { type Row, table, writeResults } from "./lib/report";

const log = (m: string) => console.log(`[networking] ${m}`);

async function services(metrics: Record<string, number>): Promise<void> {
  const rows: Row[] = [];
  if (!haveNft() || process.getuid?.() !== 0) {
    console.log("SKIPPED: Services rows need nft and root");
    return;
  }
  await proxierScale(metrics, rows);
  if (existsSync("/run/edgeplane/containerd.sock"))
    await programmingLatency(
      metrics,
      rows,
      Number(process.env.BENCH_NET_NODES ?? 3),
      Number(process.env.BENCH_NET_CHANGES ?? 100),
    );
  else console.log("SKIPPED: Service programming rows: containerd not running (npm run setup:containerd)");
  console.log(table("networking: Services", ["what", "ms (p50)", "cpu ms / p99", "note"], rows));
}

async function podNetwork(metrics: Record<string, number>): Promise<void> {
  const why = hostsUnavailable();
  if (why) {
    console.log(`SKIPPED: pod network rows need real hosts: ${why}`);
    return;
  }
  const api = await startApiServer();
  const url = `http://127.0.0.1:${api.front.port}`;
  const token = String(api.front.headers.authorization).replace(/^Bearer /, "");
  let hosts: Awaited<ReturnType<typeof startHosts>> | undefined;
  try {
    const began = Date.now();
    hosts = await startHosts({ count: 3, subnets: 2, server: { url, token }, log });
    const startS = (Date.now() - began) / 1000;
    log(`3 hosts Ready in ${startS.toFixed(1)} s`);
    const pods = await podNetworkFigures({ url, token, hosts, log });
    console.log(
      table("pod-to-pod across hosts (ratios against the floor, same run)", POD_NET_HEADER, pods.rows),
    );
    Object.assign(metrics, pods.metrics, { hosts_start_s: startS });
  } finally {
    await hosts?.stop();
    await api.stop();
  }
}

const metrics: Record<string, number> = {};
await services(metrics);
await podNetwork(metrics);
metrics.load1 = loadavg()[0] ?? 0;
console.log(`\nwrote ${writeResults("networking", metrics)}`);
