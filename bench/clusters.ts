// clusters: many clusters in one deployment (docs/clusters.md).
//   CREATE: a Cluster object and its admin credential through the root cluster's API, a
//           kubeconfig written, then `kubectl get ns` through it until it succeeds: the wall
//           time from the create's start, p50/p99 over BENCH_CLUSTERS_CREATE clusters (20);
//           also create -> first GET /api/v1/namespaces over HTTP alone (no kubectl start).
//   NOISY:  cluster b's single-client GET p50/p99 (BENCH_CLUSTERS_NOISY_GETS, 300) with cluster a
//           idle, then while a takes 50 clients creating ConfigMaps as fast as it answers: the
//           ratio is what a noisy neighbour costs (target <= 2x). Twice: a's 50 clients with
//           one credential, then each with its own (50 flows of a against b's one: the front
//           door's queue takes clusters in turn before clients).
//   IDLE:   the control plane's CPU (workerd and engine, from /proc) and workerd's memory over
//           BENCH_CLUSTERS_IDLE_SECONDS (30) with 1 other cluster, then with 100 (each used
//           once, then left alone), both after the same settling time.
//
//   npm run bench clusters   (or: node --import tsx bench/clusters.ts)
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { startApiServer } from "./lib/apiserver";
import { groupCpu } from "./lib/cpu";
import { keepAliveAgent, oneShot, request, type Target } from "./lib/http";
import { type Row, table, writeResults } from "./lib/report";
import { now, ratio, type Summary, sleep, summarize } from "./lib/stats";

const run = promisify(execFile);
const KUBECTL = process.env.KUBECTL ?? "/usr/bin/kubectl";
const CREATES = Number(process.env.BENCH_CLUSTERS_CREATE ?? 20);
const IDLE_CLUSTERS = Number(process.env.BENCH_CLUSTERS_MANY ?? 100);
const IDLE_SECONDS = Number(process.env.BENCH_CLUSTERS_IDLE_SECONDS ?? 30);
const SETTLE_SECONDS = Number(process.env.BENCH_CLUSTERS_SETTLE_SECONDS ?? 20);
const NOISY_GETS = Number(process.env.BENCH_CLUSTERS_NOISY_GETS ?? 300);
const NOISY_CLIENTS = 50;
/** BENCH_CLUSTERS_ONLY=noisy runs the noisy-neighbour part alone */
const ONLY = process.env.BENCH_CLUSTERS_ONLY;
const CLUSTERS = "/apis/tenancy.edgeplane.dev/v1alpha1/clusters";

const t0 = performance.now();
const log = (s: string) => console.log(`[${((performance.now() - t0) / 1000).toFixed(1)}s] ${s}`);

function kubeconfig(server: string, caData: string, token: string): string {
  return `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: ${server}
    certificate-authority-data: ${caData}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
users:
- name: u
  user:
    token: ${token}
`;
}

/** Creates cluster `name` and its admin credential; returns the token. */
async function create(front: Target, name: string): Promise<string> {
  const body = JSON.stringify({
    apiVersion: "tenancy.edgeplane.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name },
  });
  const made = await request(front, oneShot, "POST", CLUSTERS, body);
  if (made.status !== 201) throw new Error(`create ${name}: ${made.status} ${made.body}`);
  const tr = await request(front, oneShot, "POST", `${CLUSTERS}/${name}/token`, "{}");
  if (tr.status !== 201) throw new Error(`token ${name}: ${tr.status} ${tr.body}`);
  return JSON.parse(tr.body).status.token;
}

const withToken = (front: Target, token: string): Target => ({
  ...front,
  headers: { ...front.headers, authorization: `Bearer ${token}` },
});

/**
 * Cluster b's single-client GETs with cluster a idle, then under a's 50-client create load:
 * the neighbour's cost to b, and a's own create rate meanwhile.
 */
async function noisyNeighbour(
  front: Target,
  aName: string,
  bName: string,
  credentials: number,
): Promise<{ quiet: Summary; loaded: Summary; aPerSecond: number }> {
  const aTokens = [await create(front, aName)];
  for (let i = 1; i < credentials; i++) {
    const tr = await request(front, oneShot, "POST", `${CLUSTERS}/${aName}/token`, "{}");
    if (tr.status !== 201) throw new Error(`token ${aName}: ${tr.status} ${tr.body}`);
    aTokens.push(JSON.parse(tr.body).status.token);
  }
  const a = withToken(front, aTokens[0]!);
  const b = withToken(front, await create(front, bName));
  const bAgent = keepAliveAgent(1);
  const sample = async (n: number) => {
    const ms: number[] = [];
    for (let i = 0; i < n; i++) {
      const s = now();
      const r = await request(b, bAgent, "GET", `/clusters/${bName}/api/v1/namespaces/default`);
      if (r.status !== 200) throw new Error(`b: ${r.status} ${r.body}`);
      ms.push(now() - s);
    }
    return summarize(ms);
  };
  await sample(50); // b's first requests start its cluster
  const quiet = await sample(NOISY_GETS);
  // a's first request, so that its load is creates, not its start
  const warm = await request(a, oneShot, "GET", `/clusters/${aName}/api/v1/namespaces/default`);
  if (warm.status !== 200) throw new Error(`a: ${warm.status} ${warm.body}`);
  const aAgent = keepAliveAgent(NOISY_CLIENTS);
  let stop = false;
  let created = 0;
  let next = 0;
  const started = now();
  const loops = Array.from({ length: NOISY_CLIENTS }, async (_, client) => {
    const as = withToken(front, aTokens[client % aTokens.length]!);
    while (!stop) {
      const body = JSON.stringify({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: `noise-${next++}` },
        data: { k: "v" },
      });
      const r = await request(
        as,
        aAgent,
        "POST",
        `/clusters/${aName}/api/v1/namespaces/default/configmaps`,
        body,
        {
          "content-type": "application/json",
        },
      );
      if (r.status === 201) created++;
    }
  });
  await sleep(2000); // the load at its height
  const loaded = await sample(NOISY_GETS);
  stop = true;
  await Promise.all(loops);
  const aPerSecond = created / ((now() - started) / 1000);
  bAgent.destroy();
  aAgent.destroy();
  return { quiet, loaded, aPerSecond };
}

/** The noisy-neighbour rows of one run, whose a had `credentials` credentials. */
function noisyRows(n: { quiet: Summary; loaded: Summary; aPerSecond: number }, credentials: number): Row[] {
  const who = credentials === 1 ? "one credential" : `${credentials} credentials`;
  return [
    [`b's GET p50 / p99, a idle (ms)`, `${n.quiet.p50.toFixed(1)} / ${n.quiet.p99.toFixed(1)}`],
    [
      `b's GET p50 / p99, a under ${NOISY_CLIENTS}-client creates, ${who} (ms)`,
      `${n.loaded.p50.toFixed(1)} / ${n.loaded.p99.toFixed(1)}`,
    ],
    ["  ratio of p99 (target <= 2)", ratio(n.loaded.p99, n.quiet.p99).toFixed(2)],
    ["  a's creates/s meanwhile", n.aPerSecond.toFixed(0)],
  ];
}

/** workerd's resident memory in the group, MiB. */
function workerdRssMiB(pgid: number): number {
  let kib = 0;
  for (const pid of readdirSync("/proc").filter((e) => /^\d+$/.test(e))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      if (!stat.slice(stat.indexOf("(") + 1, close).startsWith("workerd")) continue;
      if (Number(stat.slice(close + 2).split(" ")[2]) !== pgid) continue;
      const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      kib += Number(m?.[1] ?? 0);
    } catch {}
  }
  return kib / 1024;
}

async function idleWindow(pgid: number): Promise<{ cpuMs: number; rssMiB: number }> {
  await sleep(SETTLE_SECONDS * 1000);
  const before = groupCpu(pgid);
  await sleep(IDLE_SECONDS * 1000);
  const after = groupCpu(pgid);
  const cpuMs = after.workerd + after.other - before.workerd - before.other;
  return { cpuMs, rssMiB: workerdRssMiB(pgid) };
}

async function main(): Promise<void> {
  const server = await startApiServer();
  const dir = mkdtempSync(join(tmpdir(), "edgeplane-bench-clusters-"));
  const front = server.front;
  // kubectl goes the way users' does: the front door's TLS side, the local CA
  const rootConfig = readFileSync(server.kubeconfigPath, "utf8");
  const base = /server: (\S+)/.exec(rootConfig)![1].replace(/\/+$/, "");
  const caData = /certificate-authority-data: (\S+)/.exec(rootConfig)![1];
  try {
    if (ONLY === "noisy") {
      const rows: Row[] = [];
      for (const credentials of [1, NOISY_CLIENTS]) {
        log(`noisy neighbour, a's clients with ${credentials} credential(s)`);
        const n = await noisyNeighbour(front, `noisy-a${credentials}`, `noisy-b${credentials}`, credentials);
        rows.push(...noisyRows(n, credentials));
      }
      console.log(table("clusters (noisy neighbour)", ["figure", "value"], rows));
      return;
    }
    log(`create -> first kubectl get ns, ${CREATES} clusters`);
    const kubectlMs: number[] = [];
    const httpMs: number[] = [];
    for (let i = 0; i < CREATES; i++) {
      // over HTTP alone
      const h0 = performance.now();
      const ht = await create(front, `h${i}`);
      for (let attempt = 0; ; attempt++) {
        const r = await request(
          { ...front, headers: { ...front.headers, authorization: `Bearer ${ht}` } },
          oneShot,
          "GET",
          `/clusters/h${i}/api/v1/namespaces`,
        );
        if (r.status === 200) break;
        if (attempt > 50) throw new Error(`h${i}: ${r.status} ${r.body}`);
      }
      httpMs.push(performance.now() - h0);
      // through kubectl
      const k0 = performance.now();
      const token = await create(front, `k${i}`);
      const file = join(dir, `k${i}`);
      writeFileSync(file, kubeconfig(`${base}/clusters/k${i}`, caData, token));
      for (let attempt = 0; ; attempt++) {
        try {
          await run(KUBECTL, ["--kubeconfig", file, "--cache-dir", join(dir, "cache"), "get", "ns"]);
          break;
        } catch (e) {
          if (attempt > 20) throw new Error(`kubectl k${i}: ${(e as { stderr?: string }).stderr ?? e}`);
        }
      }
      kubectlMs.push(performance.now() - k0);
    }
    const k = summarize(kubectlMs);
    const h = summarize(httpMs);

    log(`noisy neighbour: b's ${NOISY_GETS} GETs, a idle, then a under ${NOISY_CLIENTS}-client creates`);
    const noisy = await noisyNeighbour(front, "noisy-a", "noisy-b", 1);
    log(`noisy neighbour again, each of a's ${NOISY_CLIENTS} clients with its own credential`);
    const noisyMany = await noisyNeighbour(front, "noisy-am", "noisy-bm", NOISY_CLIENTS);

    // idle: the 2*CREATES clusters above exist and were used; bring the count to 1 first
    // by measuring a fresh server would cost a restart: instead, measure 1 vs many on this one
    // only after deleting all but one
    log("idle with 1 cluster");
    for (let i = 0; i < CREATES; i++) {
      await request(front, oneShot, "DELETE", `${CLUSTERS}/h${i}`);
      if (i > 0) await request(front, oneShot, "DELETE", `${CLUSTERS}/k${i}`);
    }
    for (const name of ["noisy-a", "noisy-b", "noisy-am", "noisy-bm"])
      await request(front, oneShot, "DELETE", `${CLUSTERS}/${name}`);
    const one = await idleWindow(server.pgid);
    log(`idle with ${IDLE_CLUSTERS} clusters (each used once)`);
    for (let i = 1; i < IDLE_CLUSTERS; i++) {
      const token = await create(front, `idle${i}`);
      const r = await request(
        { ...front, headers: { ...front.headers, authorization: `Bearer ${token}` } },
        oneShot,
        "GET",
        `/clusters/idle${i}/api/v1/namespaces`,
      );
      if (r.status !== 200) throw new Error(`idle${i}: ${r.status} ${r.body}`);
    }
    const many = await idleWindow(server.pgid);

    const rows: Row[] = [
      ["create -> kubectl get ns p50 (ms)", k.p50.toFixed(0)],
      ["create -> kubectl get ns p99 (ms)", k.p99.toFixed(0)],
      ["create -> first GET over HTTP p50 (ms)", h.p50.toFixed(0)],
      ["create -> first GET over HTTP p99 (ms)", h.p99.toFixed(0)],
      ...noisyRows(noisy, 1),
      ...noisyRows(noisyMany, NOISY_CLIENTS),
      [`idle CPU, 1 cluster (ms per ${IDLE_SECONDS} s)`, one.cpuMs.toFixed(0)],
      [`idle CPU, ${IDLE_CLUSTERS} clusters (ms per ${IDLE_SECONDS} s)`, many.cpuMs.toFixed(0)],
      ["workerd RSS, 1 cluster (MiB)", one.rssMiB.toFixed(0)],
      [`workerd RSS, ${IDLE_CLUSTERS} clusters (MiB)`, many.rssMiB.toFixed(0)],
    ];
    console.log(table("clusters", ["figure", "value"], rows));
    const file = writeResults("clusters", {
      create_kubectl_p50_ms: k.p50,
      create_kubectl_p99_ms: k.p99,
      create_http_p50_ms: h.p50,
      create_http_p99_ms: h.p99,
      noisy_b_get_p50_quiet_ms: noisy.quiet.p50,
      noisy_b_get_p99_quiet_ms: noisy.quiet.p99,
      noisy_b_get_p50_loaded_ms: noisy.loaded.p50,
      noisy_b_get_p99_loaded_ms: noisy.loaded.p99,
      noisy_p99_ratio: ratio(noisy.loaded.p99, noisy.quiet.p99),
      noisy_a_creates_per_s: noisy.aPerSecond,
      noisy_many_b_get_p99_quiet_ms: noisyMany.quiet.p99,
      noisy_many_b_get_p99_loaded_ms: noisyMany.loaded.p99,
      noisy_many_p99_ratio: ratio(noisyMany.loaded.p99, noisyMany.quiet.p99),
      noisy_many_a_creates_per_s: noisyMany.aPerSecond,
      idle_cpu_ms_1: one.cpuMs,
      idle_cpu_ms_many: many.cpuMs,
      idle_cpu_ratio: ratio(many.cpuMs, one.cpuMs),
      idle_rss_mib_1: one.rssMiB,
      idle_rss_mib_many: many.rssMiB,
      idle_rss_ratio: ratio(many.rssMiB, one.rssMiB),
      idle_clusters: IDLE_CLUSTERS,
      idle_seconds: IDLE_SECONDS,
    });
    log(`wrote ${file}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await server.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
