// `npm run bench [name]`: runs every benchmark, or the named one, each in its own Node
// process (a benchmark's servers and sockets cannot disturb the next one's figures).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "./lib/report";

/** name -> file under bench/, and its arguments. Order is the order of a full run. */
export const BENCHMARKS: Record<string, { file: string; args?: string[] }> = {
  "api-store": { file: "api-store.ts" },
  "cri-raw": { file: "cri-raw.ts" },
  scheduler: { file: "scheduler.ts" },
  "pod-startup": { file: "pod-startup.ts" },
  "authz-chain": { file: "authz-chain.ts" },
  "slow-headers": { file: "slow-headers.ts" },
  networking: { file: "networking.ts" },
  "client-cert-tls": { file: "client-cert-tls.ts" },
  clusters: { file: "clusters.ts" },
  trace: { file: "trace.ts" },
  dashboard: { file: "dashboard.ts" },
  leases: { file: "leases.ts" },
  "engine-processes": { file: "engine-processes.ts" },
};

function runOne(name: string): boolean {
  const b = BENCHMARKS[name];
  if (!b) throw new Error(`unknown benchmark ${name}; known: ${Object.keys(BENCHMARKS).join(", ")}`);
  const file = join(REPO_ROOT, "bench", b.file);
  if (!existsSync(file)) {
    console.error(`bench ${name}: ${file} is missing`);
    return false;
  }
  console.log(`\n=== bench ${name} ===`);
  const r = spawnSync(process.execPath, ["--import", "tsx", file, ...(b.args ?? [])], {
    stdio: "inherit",
    cwd: REPO_ROOT,
  });
  if (r.status !== 0) console.error(`bench ${name}: failed (exit ${r.status ?? r.signal})`);
  return r.status === 0;
}

const wanted = process.argv.slice(2);
const names = wanted.length > 0 ? wanted : Object.keys(BENCHMARKS);
const failed = names.filter((n) => !runOne(n));
if (failed.length > 0) {
  console.error(`\nfailed: ${failed.join(", ")}`);
  process.exit(1);
}
