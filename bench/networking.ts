// `npm run bench networking`: cluster networking's figures (issue 28). The Services rows live in
// bench/lib/net-services.ts; the pod network's rows join them here.
//
//   node --import tsx bench/networking.ts      BENCH_NET_NODES (default 3), BENCH_NET_CHANGES (100)
import { existsSync } from "node:fs";
import { haveNft, programmingLatency, proxierScale } from "./lib/net-services";
import { type Row, table, writeResults } from "./lib/report";

const metrics: Record<string, number> = {};
const rows: Row[] = [];
if (!haveNft() || process.getuid?.() !== 0) {
  console.log("SKIPPED: bench networking needs nft and root");
  process.exit(0);
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
console.log(`\nwrote ${writeResults("networking", metrics)}`);
