// scheduler: the scheduler and controllers against simulated nodes.
//   1. N simulated nodes (default 1,000) join from this process; registration time.
//   2. node-leases: the control plane's CPU while those nodes only renew Leases (~60 s).
//   3. 30 Deployments of 3 replicas one after another: POST -> all 3 pods bound (by watch).
//   4. 10,000 pending pods over 5 namespaces, created by 50 clients: create rate, and pods/s
//      from first create to last bound and from last create to last bound.
// Bound means spec.nodeName seen on a pod watch (the binding, not Running): the simulated
// nodes hold pods back from Running (as scheduler_perf does) unless BENCH_SIM_RUNNING=1.
//
//   npm run bench scheduler            (or: node --import tsx bench/scheduler.ts [nodes])
// Knobs: first argument = node count (5000 writes scheduler-5000.json and skips phase 3),
// BENCH_SCHED_PODS (10000), BENCH_LEASE_WINDOW (seconds, 60), BENCH_CREATE_SECONDS (cap on the create phase, 150),
// BENCH_SIM_LEASE_SECONDS
// (lease renewal period: 10, or 30 above 1,000 nodes), BENCH_BIND_TIMEOUT (seconds, 180),
// BENCH_PROFILE=1 (a CPU profile of workerd's isolate over the pod phase, first create -> last
// bound: self and total time printed, .edgeplane/bench/profile-scheduler.cpuprofile written;
// BENCH_PROFILE=leases: over the node-leases window instead, to profile-scheduler-leases).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startSimulatedNodes } from "../agent/simulated/simnodes";
import { freePort } from "../local-engine/devserver";
import { type ApiServer, startApiServer } from "./lib/apiserver";
import { groupCpu } from "./lib/cpu";
import { expectStatus, keepAliveAgent, request } from "./lib/http";
import { type Inspector, openInspector, selfTimes, topLines, totalTimes } from "./lib/inspector-profile";
import { REPO_ROOT, type Row, table, writeResults } from "./lib/report";
import {
  boundByList,
  cores,
  deploymentBody,
  ensureNamespace,
  load1,
  loadText,
  readyNodes,
  serverCreds,
  smallPod,
} from "./lib/sched-load";
import { PodTracker, waitUntil } from "./lib/sched-watch";
import { closedLoop, summarize } from "./lib/stats";

const NODES = Number(process.argv[2] ?? 1000);
const PODS = Number(process.env.BENCH_SCHED_PODS ?? 10000);
const LEASE_WINDOW_S = Number(process.env.BENCH_LEASE_WINDOW ?? (NODES > 1000 ? 30 : 60));
// Above 1,000 nodes renew less often, but within the 40 s node-monitor grace period
// (renewals every 60 s let nodes go Ready=Unknown between two renewals).
const LEASE_SECONDS = Number(process.env.BENCH_SIM_LEASE_SECONDS ?? (NODES > 1000 ? 30 : 10));
const BIND_TIMEOUT_S = Number(process.env.BENCH_BIND_TIMEOUT ?? 180);
/** The create phase stops starting creates after this long (the run then has fewer pods). */
const CREATE_SECONDS = Number(process.env.BENCH_CREATE_SECONDS ?? 150);
const DEPLOYMENTS = NODES > 1000 ? 0 : 30;
const NAMESPACES = ["bench-s0", "bench-s1", "bench-s2", "bench-s3", "bench-s4"];
const DEPLOY_NS = "bench-d";
const NODE_PREFIX = "bsim-";
const NAME = NODES === 1000 ? "scheduler" : `scheduler-${NODES}`;

const t0 = performance.now();
const log = (s: string) =>
  console.log(`[${((performance.now() - t0) / 1000).toFixed(1)}s] ${s} (load ${loadText()})`);
const out: Record<string, number> = {};
const rows: Row[] = [];

async function deployments(api: ApiServer, tracker: PodTracker): Promise<void> {
  const d = api.front;
  const agent = keepAliveAgent(1);
  const samples: number[] = [];
  const createdAt: number[] = [];
  let timeouts = 0;
  const loadBefore = load1();
  try {
    for (let i = 0; i < DEPLOYMENTS; i++) {
      const name = `bd-${i}`;
      const bound: number[] = [];
      const seen: number[] = [];
      const off = tracker.on((key, pod, at) => {
        if (!key.startsWith(`${DEPLOY_NS}/`) || pod.metadata?.labels?.app !== name) return;
        const s = tracker.pods.get(key);
        if (s?.seen === at) seen.push(at);
        if (pod.spec?.nodeName && s?.bound === at) bound.push(at);
      });
      const start = performance.now();
      await expectStatus(
        201,
        request(
          d,
          agent,
          "POST",
          `/apis/apps/v1/namespaces/${DEPLOY_NS}/deployments`,
          deploymentBody(name, 3),
        ),
        "create deployment",
      );
      const ok = await waitUntil(() => bound.length >= 3, 30_000, 5);
      off();
      if (ok) samples.push(Math.max(...bound.slice(0, 3)) - start);
      if (ok && seen.length >= 3) createdAt.push(Math.max(...seen.slice(0, 3)) - start);
      else timeouts++;
    }
  } finally {
    agent.destroy();
  }
  const s = summarize(samples);
  const c = summarize(createdAt);
  rows.push(["deployment x3 POST -> 3 pods seen (controllers)", c.n, c.p50, c.p99, c.max, ""]);
  Object.assign(out, {
    deploy3_pods_seen_p50_ms: c.p50,
    deploy3_pods_seen_p99_ms: c.p99,
    deploy3_bound_p50_ms: s.p50,
    deploy3_bound_p99_ms: s.p99,
    deploy3_bound_max_ms: s.max,
    deploy3_n: s.n,
    deploy3_timeouts: timeouts,
    deploy3_load1: (loadBefore + load1()) / 2,
  });
  rows.push([
    "deployment x3 POST -> 3 bound, ms",
    s.n,
    s.p50,
    s.p99,
    s.max,
    `target p99<=300, t/o ${timeouts}`,
  ]);
  log(`deployments: p50 ${s.p50.toFixed(0)} ms p99 ${s.p99.toFixed(0)} ms (${timeouts} timed out)`);
}

/** Stops the inspector's profile, writes it to .edgeplane/bench/<file>.cpuprofile and prints where the time went. */
async function reportProfile(inspector: Inspector, file: string, what: string): Promise<void> {
  const profile = await inspector.stop();
  const dir = join(REPO_ROOT, ".edgeplane/bench");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${file}.cpuprofile`), JSON.stringify(profile));
  const st = selfTimes(profile);
  console.log(`isolate busy ${(st.busy / 1000).toFixed(0)} ms over ${what}`);
  console.log(`\nself time by function:\n${topLines(st.fn, st.busy, 50)}`);
  console.log(`\ntotal time by function:\n${topLines(totalTimes(profile), st.busy, 80)}`);
}

async function podFlood(api: ApiServer, tracker: PodTracker, inspector?: Inspector): Promise<void> {
  const d = api.front;
  await inspector?.start();
  const agent = keepAliveAgent(50);
  const keys: string[] = [];
  const cpu0 = groupCpu(api.pgid);
  const client0 = process.cpuUsage();
  const loadBefore = load1();
  const firstCreate = performance.now();
  let lastCreate = 0;
  const created = await closedLoop(
    PODS,
    50,
    async (i) => {
      const ns = NAMESPACES[i % NAMESPACES.length] as string;
      const name = `sp-${i}`;
      await expectStatus(
        201,
        request(d, agent, "POST", `/api/v1/namespaces/${ns}/pods`, smallPod(name)),
        "create pod",
      );
      keys.push(`${ns}/${name}`);
      lastCreate = performance.now();
    },
    CREATE_SECONDS,
  );
  agent.destroy();
  const boundAtLastCreate = keys.filter((k) => tracker.pods.get(k)?.bound !== undefined).length;
  log(
    `created ${created.done} pods at ${created.perSecond.toFixed(0)}/s (${created.errors} errors); ${boundAtLastCreate} bound so far`,
  );
  if (created.firstError) log(`first create error: ${created.firstError.slice(0, 300)}`);
  // wait for every created pod to be seen bound, or no progress for 60 s, or the timeout
  let lastCount = -1;
  let lastProgress = performance.now();
  const allBound = await waitUntil(
    () => {
      const c = keys.reduce((a, k) => a + (tracker.pods.get(k)?.bound !== undefined ? 1 : 0), 0);
      if (c !== lastCount) {
        lastCount = c;
        lastProgress = performance.now();
      }
      return c === keys.length || performance.now() - lastProgress > 60_000;
    },
    BIND_TIMEOUT_S * 1000,
    250,
  );
  const end = performance.now();
  const cpu = groupCpu(api.pgid);
  if (inspector) await reportProfile(inspector, "profile-scheduler", "the pod phase");
  const client = process.cpuUsage(client0);
  const bounds = keys.map((k) => tracker.pods.get(k)?.bound).filter((b): b is number => b !== undefined);
  const lastBound = Math.max(...bounds);
  const firstBound = Math.min(...bounds);
  const perSecond = new Map<number, number>();
  for (const b of bounds) perSecond.set(Math.floor(b / 1000), (perSecond.get(Math.floor(b / 1000)) ?? 0) + 1);
  const peak = Math.max(...perSecond.values());
  let listed = 0;
  for (const ns of NAMESPACES) listed += (await boundByList(d, ns)).bound;
  const serverMs = cpu.workerd + cpu.proxy + cpu.other - (cpu0.workerd + cpu0.proxy + cpu0.other);
  const wall = end - firstCreate;
  const rate = bounds.length / ((lastBound - firstCreate) / 1000);
  const tailS = (lastBound - lastCreate) / 1000;
  const tailRate = (bounds.length - boundAtLastCreate) / Math.max(tailS, 1e-3);
  Object.assign(out, {
    pods_created: created.done,
    pods_create_errors: created.errors,
    pods_create_per_s: created.perSecond,
    pods_create_p50_ms: created.latency.p50,
    pods_create_p99_ms: created.latency.p99,
    pods_bound_watch: bounds.length,
    pods_bound_list: listed,
    pods_all_bound: allBound && bounds.length === keys.length ? 1 : 0,
    sched_first_create_to_last_bound_s: (lastBound - firstCreate) / 1000,
    sched_pods_per_s_first_create_to_last_bound: rate,
    sched_last_create_to_last_bound_s: tailS,
    sched_bound_at_last_create: boundAtLastCreate,
    sched_pods_per_s_after_last_create: tailRate,
    sched_pods_per_s_first_bound_to_last_bound: bounds.length / ((lastBound - firstBound) / 1000),
    sched_peak_bound_per_s: peak,
    flood_server_cores: cores(serverMs, wall),
    flood_server_workerd_cpu_ms_per_pod: (cpu.workerd - cpu0.workerd) / Math.max(1, bounds.length),
    flood_client_cores: cores((client.user + client.system) / 1000, wall),
    flood_load1: (loadBefore + load1()) / 2,
  });
  rows.push([
    "pod creates, 50 clients, per s",
    created.done,
    created.perSecond,
    created.latency.p99,
    "",
    `${created.errors} errors`,
  ]);
  rows.push(["pods/s first create -> last bound", bounds.length, rate, "", "", "target >= 700"]);
  rows.push([
    "pods/s last create -> last bound",
    bounds.length - boundAtLastCreate,
    tailRate,
    tailS,
    "",
    "tail seconds in col 4",
  ]);
  rows.push(["peak pods bound in one second", "", peak, "", "", ""]);
  log(
    `bound ${bounds.length}/${keys.length} (list says ${listed}); ${rate.toFixed(0)} pods/s first create -> last bound; tail ${tailS.toFixed(1)} s`,
  );
}

async function main(): Promise<void> {
  log(`starting the control plane; ${NODES} nodes, ${PODS} pods`);
  // a /24 per node out of 10.128.0.0/9 (32,768 nodes): every simulated node gets its pod CIDR,
  // as a cluster of this size would be configured (the default /16 holds 256 nodes)
  const inspectorPort = process.env.BENCH_PROFILE ? await freePort() : undefined;
  const api = await startApiServer({ vars: { EDGEPLANE_CLUSTER_CIDR: "10.128.0.0/9" }, inspectorPort });
  const inspector = inspectorPort ? await openInspector(inspectorPort) : undefined;
  const profileLeases = process.env.BENCH_PROFILE === "leases";
  const { url, token } = serverCreds(api.front);
  let tracker: PodTracker | undefined;
  let sim: Awaited<ReturnType<typeof startSimulatedNodes>> | undefined;
  const simLog: string[] = [];
  let unknownReports = 0;
  try {
    for (const ns of [...NAMESPACES, DEPLOY_NS]) await ensureNamespace(api.front, ns);
    tracker = new PodTracker(api.front, "/api/v1/pods");
    await tracker.start();

    log(`registering ${NODES} simulated nodes (lease every ${LEASE_SECONDS} s)`);
    const regStart = performance.now();
    sim = await startSimulatedNodes({
      server: url,
      token,
      count: NODES,
      namePrefix: NODE_PREFIX,
      leaseSeconds: LEASE_SECONDS,
      podStartDelayMs: process.env.BENCH_SIM_RUNNING === "1" ? 0 : 3_600_000,
      capacity: { cpu: "32", memory: "256Gi", pods: "110" },
      log: (m) => {
        if (m.includes("Ready=Unknown")) unknownReports++;
        else if (simLog.length < 20) simLog.push(m);
      },
    });
    const registered = performance.now();
    let ready = 0;
    for (const end = performance.now() + 120_000; performance.now() < end; ) {
      ready = await readyNodes(api.front, NODE_PREFIX);
      if (ready >= NODES) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    const regS = (registered - regStart) / 1000;
    out.nodes = NODES;
    out.nodes_ready = ready;
    out.nodes_register_s = regS;
    out.nodes_ready_s = (performance.now() - regStart) / 1000;
    out.nodes_register_load1 = load1();
    rows.push(["nodes registered, s", ready, regS, out.nodes_ready_s, "", `${NODES} asked`]);
    log(`${ready}/${NODES} nodes Ready; registration took ${regS.toFixed(1)} s`);

    // node-leases: the control plane's CPU while the nodes only heartbeat
    await new Promise((r) => setTimeout(r, 3000));
    const c0 = groupCpu(api.pgid);
    const s0 = sim.stats();
    const cl0 = process.cpuUsage();
    const w0 = performance.now();
    const loadBefore = load1();
    if (profileLeases) await inspector?.start();
    await new Promise((r) => setTimeout(r, LEASE_WINDOW_S * 1000));
    if (profileLeases && inspector)
      await reportProfile(inspector, "profile-scheduler-leases", "the leases window");
    const wall = performance.now() - w0;
    const c1 = groupCpu(api.pgid);
    const s1 = sim.stats();
    const cl = process.cpuUsage(cl0);
    const serverMs = c1.workerd + c1.proxy + c1.other - (c0.workerd + c0.proxy + c0.other);
    const reqs = s1.client.requests - s0.client.requests;
    Object.assign(out, {
      leases_window_s: wall / 1000,
      leases_requests_per_s: reqs / (wall / 1000),
      leases_failures: s1.client.failures - s0.client.failures,
      leases_server_cores: cores(serverMs, wall),
      leases_server_workerd_cores: cores(c1.workerd - c0.workerd, wall),
      leases_server_proxy_cores: cores(c1.proxy - c0.proxy, wall),
      leases_server_cpu_ms_per_request: serverMs / Math.max(1, reqs),
      leases_simulator_cores: cores((cl.user + cl.system) / 1000, wall),
      leases_load1: (loadBefore + load1()) / 2,
    });
    rows.push([
      "node leases: server cores",
      reqs,
      out.leases_server_cores as number,
      out.leases_requests_per_s as number,
      out.leases_simulator_cores as number,
      "target < 1 core; col3 req/s, col4 sim cores",
    ]);
    log(
      `leases: ${(reqs / (wall / 1000)).toFixed(0)} req/s, server ${(out.leases_server_cores as number).toFixed(2)} cores (workerd ${(out.leases_server_workerd_cores as number).toFixed(2)}), simulator ${(out.leases_simulator_cores as number).toFixed(2)} cores`,
    );

    if (DEPLOYMENTS > 0) {
      log(`${DEPLOYMENTS} deployments of 3 replicas, one after another`);
      await deployments(api, tracker);
    }
    log(`${PODS} pods, 50 clients, ${NAMESPACES.length} namespaces`);
    await podFlood(api, tracker, profileLeases ? undefined : inspector);
    out.watch_reopens = tracker.reopens;
    const st = sim.stats();
    out.sim_client_failures = st.client.failures;
    out.sim_ready_unknown_reports = unknownReports;
    if (st.client.lastFailure) log(`simulator last failure: ${st.client.lastFailure}`);
  } finally {
    tracker?.close();
    inspector?.close();
    await sim?.stop().catch(() => undefined);
    await api.stop();
    if (simLog.length > 0) console.log(`simulator log (first ${simLog.length}):\n  ${simLog.join("\n  ")}`);
  }
  console.log(
    table(
      `scheduler, ${NODES} simulated nodes`,
      ["measure", "n", "value", "p99/extra", "max/extra", "note"],
      rows,
    ),
  );
  console.log(`wrote ${writeResults(NAME, out)}`);
}

await main();
