// networking: the pod network's figures on real hosts (local-engine/hosts: three hosts, two of
// them on one subnet, the third behind a router), each beside the same work's floor measured
// in the same run, as ratios. Rows come from bench/lib/net-*.ts (pods: net-pods.ts).
// Needs root and containerd set up (npm run setup:containerd).
//
//   npm run bench networking   (or: node --import tsx bench/networking.ts)
// Knobs: BENCH_NET_ROUNDS (3), BENCH_NET_REQUESTS (2000), BENCH_NET_CONCURRENCY (8), BENCH_NET_SECONDS (3), BENCH_NET_BULK_MB (64).
import { loadavg } from "node:os";
import { hostsUnavailable, startHosts } from "../local-engine/hosts/hosts";
import { startApiServer } from "./lib/apiserver";
import { POD_NET_HEADER, podNetworkFigures } from "./lib/net-pods";
import { table, writeResults } from "./lib/report";

const log = (m: string) => console.log(`[networking] ${m}`);

async function main(): Promise<void> {
  const why = hostsUnavailable();
  if (why) {
    console.log(`SKIPPED: networking bench needs real hosts: ${why}`);
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
    const file = writeResults("networking", {
      ...pods.metrics,
      hosts_start_s: startS,
      load1: loadavg()[0] ?? 0,
    });
    console.log(`\nwrote ${file}`);
  } finally {
    await hosts?.stop();
    await api.stop();
  }
}

await main();
