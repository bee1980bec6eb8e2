// `npm run chaos`: the chaos suite's full form (test/chaos/harness.ts). Bounded in time.
//   npm run chaos [-- --faults 55 --watches 100 --deadline-minutes 40 --no-real-node
//                    --kinds workerd,engine-host,npm-start,edgelet,containerd,tunnel]
// A real node (edgelet over a private containerd) joins when containerd is set up here
// (npm run setup:containerd); without it, edgelet faults hit the simulated nodes' process and
// the containerd and tunnel faults are left out (said so in the output).
// Prints each fault and its recovery, then the figures; exit code 1 unless every fault was
// survived with 0 lost writes, 0 watch violations, 0 duplicate pods, every Deployment converged
// and nothing left behind.
import { existsSync } from "node:fs";
import { parseArgs } from "node:util";
import { ALL_FAULTS, type ChaosResult, type FaultKind, runChaos } from "./harness";

const { values } = parseArgs({
  options: {
    faults: { type: "string", default: "55" },
    watches: { type: "string", default: "100" },
    "deadline-minutes": { type: "string", default: "40" },
    "no-real-node": { type: "boolean", default: false },
    kinds: { type: "string" },
  },
});

const containerd = existsSync("/usr/bin/containerd") && existsSync("/run/edgeplane/containerd.sock");
const realNode = containerd && !values["no-real-node"];
if (!realNode)
  console.log(
    `chaos: no real node (${values["no-real-node"] ? "--no-real-node" : "containerd is not set up: npm run setup:containerd"}): containerd and tunnel faults are left out`,
  );
const t0 = Date.now();
const result = await runChaos({
  faults: Number(values.faults),
  watches: Number(values.watches),
  realNode,
  kinds: values.kinds
    ? (values.kinds.split(",").filter((k) => ALL_FAULTS.includes(k as FaultKind)) as FaultKind[])
    : undefined,
  deadlineMs: Number(values["deadline-minutes"]) * 60_000,
  log: (line) => console.log(`[${((Date.now() - t0) / 1000).toFixed(0)}s] ${line}`),
});
report(result);
process.exit(passed(result) ? 0 : 1);

export function passed(r: ChaosResult): boolean {
  return (
    r.faults.every((f) => f.survived) &&
    r.writes.lost.length === 0 &&
    r.watches.violations.length === 0 &&
    r.pods.duplicates.length === 0 &&
    r.deployments.unconverged.length === 0 &&
    r.leftBehind.length === 0
  );
}

function report(r: ChaosResult) {
  const byKind = new Map<string, { n: number; ok: number; ms: number[] }>();
  for (const f of r.faults) {
    const k = byKind.get(f.kind) ?? { n: 0, ok: 0, ms: [] };
    k.n++;
    if (f.survived) {
      k.ok++;
      k.ms.push(f.recoveredMs);
    }
    byKind.set(f.kind, k);
  }
  console.log("\nfaults injected / survived (recovery ms: median, max)");
  for (const [kind, k] of byKind) {
    const sorted = [...k.ms].sort((a, b) => a - b);
    console.log(
      `  ${kind.padEnd(12)} ${k.n} / ${k.ok}   ${sorted[Math.floor(sorted.length / 2)] ?? "-"}, ${sorted.at(-1) ?? "-"}`,
    );
  }
  const survived = r.faults.filter((f) => f.survived).length;
  console.log(`  ${"total".padEnd(12)} ${r.faults.length} / ${survived}`);
  console.log(
    `writes acknowledged: ${r.writes.acked} (unanswered during faults: ${r.writes.unanswered}); lost: ${r.writes.lost.length}`,
  );
  console.log(
    `watches: ${r.watches.count}, re-opened ${r.watches.reopened} times; violations: ${r.watches.violations.length}`,
  );
  console.log(`pods churned: ${r.pods.churned}; duplicate pods: ${r.pods.duplicates.length}`);
  console.log(
    `deployments: ${r.deployments.count}, rolled ${r.deployments.rolled} times, scaled ${r.deployments.scaled}; converged: ${r.deployments.count - r.deployments.unconverged.length}/${r.deployments.count}`,
  );
  console.log(`left behind: ${r.leftBehind.length ? r.leftBehind.join("; ") : "nothing"}`);
  if (r.containerdOrphans.length)
    console.log(
      `containerd's own orphans (shims of sandboxes it lost when killed mid-start; ended by this run as its supervisor): ${r.containerdOrphans.join("; ")}`,
    );
  for (const [what, list] of [
    ["lost", r.writes.lost],
    ["watch", r.watches.violations],
    ["duplicate", r.pods.duplicates],
    ["unconverged", r.deployments.unconverged],
    ["fault", r.faults.filter((f) => !f.survived).map((f) => `${f.target}: ${f.error}`)],
  ] as const)
    for (const line of list.slice(0, 10)) console.log(`  ${what}: ${line}`);
  console.log(`${passed(r) ? "PASSED" : "FAILED"} in ${r.seconds} s`);
}
