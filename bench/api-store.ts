// api-store: the apiserver + store path against a raw etcd 3.4 on the same machine.
//   pod creates (1 and 50 clients), get/list with 10,000 pods stored, watch delivery with
//   1/100/1,000 watchers, a per-request floor profile, then etcd puts/watches with the same
//   client counts, the same watches from a bare Node server (the fan-out floor), and
//   ours/etcd and ours/floor ratios. Prints tables; writes .edgeplane/bench/api-store.json.
//
//   npm run bench api-store   (or: node --import tsx bench/api-store.ts)
// Knobs: BENCH_PODS (pods stored for reads, default 10000), BENCH_FILL_SECONDS (cap on the
// fill, default 90), BENCH_SCHEDULE=1 (pods go to default-scheduler), BENCH_ETCD_CLIENT=gateway,
// BENCH_WORKER_PORT=1 (extra figures straight to the Worker's workerd), BENCH_LIVE_TREE=1
// (run the live source tree instead of a snapshot), EDGEPLANE_RELAY=off (each watch a stream of
// its own from workerd, not relayed by the front door). Server CPU per operation is read from
// /proc, so the figures say where time goes even on a busy machine.
import { cpus, loadavg } from "node:os";
import { pathToFileURL } from "node:url";
import { CLIENTS, type Ours, perOp, report } from "./lib/api-store-report";
import {
  apiWatchLatency,
  createNamespace,
  createPods,
  pagedWalks,
  probeDuring,
  requestCeiling,
  sequential,
  startApiServer,
} from "./lib/apiserver";
import { withGroupCpu } from "./lib/cpu";
import { runEtcdBaseline } from "./lib/etcd-bench";
import { runFanoutFloor } from "./lib/fanout-floor";
import { oneShot, request } from "./lib/http";
import { GROUP_LABEL, podBody, SCHEDULER_NAME } from "./lib/pods";
import { writeResults } from "./lib/report";
import type { LoadResult } from "./lib/stats";
import type { WatchResult } from "./lib/watch-latency";

const NS = "default";
const WATCH_NS = "bench-watch";
const WARM_NS = "bench-warm";
// Each phase is capped in time as well as count, so a slow build still ends in ~5 minutes.
const CREATES: Record<number, { count: number; seconds: number }> = {
  1: { count: 300, seconds: 20 },
  50: { count: 5000, seconds: 40 },
};
/**
 * Load before anything is measured, on both sides: 50 clients for this long. workerd's
 * isolate needs seconds of load to reach its pace (measured, 50-client creates from a fresh
 * start: ~900/s in the first second, ~2,000/s from the fifth on), a server's figures are its
 * steady state, and the warm-up's own rate is reported as the cold start.
 */
const WARM_UP_SECONDS = Number(process.env.BENCH_WARM_UP_SECONDS ?? 6);
const ENGINE_CREATES: Record<number, { count: number; seconds: number }> = {
  1: { count: 100, seconds: 10 },
  50: { count: 500, seconds: 15 },
};
const FILL_SECONDS = Number(process.env.BENCH_FILL_SECONDS ?? 90);
/**
 * Requests a create cannot do without, each at 50 clients at the engine port: what this
 * machine's workerd answers per second at most, to set beside the creates and etcd's puts.
 * A create is one such request, plus its shard's commit, plus the controllers' pulls.
 */
const CEILINGS = [
  { key: "version", label: "GET /version (workerd + router only)", status: 200, path: () => "/version" },
  {
    key: "get_missing",
    label: "GET missing pod (+ authn, authz, one shard call)",
    status: 404,
    path: (i: number) => `/api/v1/namespaces/${NS}/pods/none-${i}`,
  },
];
const CEILING_SECONDS = Number(process.env.BENCH_CEILING_SECONDS ?? 6);
// A p99 over (event, watcher) pairs is set by the slowest 1% of events once each event
// reaches every watcher at about the same moment: with 20 events, one event held up by a
// pause decided the figure. 100 events make it a property of the run, not of one event.
const WATCHES = [
  { watchers: 1, events: 100, seconds: 15 },
  { watchers: 100, events: 100, seconds: 20 },
  { watchers: 1000, events: 100, seconds: 30 },
];

const t0 = performance.now();
const log = (s: string) => console.log(`[${((performance.now() - t0) / 1000).toFixed(1)}s] ${s}`);

async function measureOurs(podCount: number): Promise<Ours> {
  log("apiserver: starting the control plane");
  const api = await startApiServer();
  try {
    // Every figure is taken through the front door, the port `npm start` serves and kubectl
    // uses; the engine's own port (workerd's socket, never exposed to clients) is a second row.
    const d = api.front;
    await createNamespace(d, WATCH_NS);
    log("profile: per-request floors (1 client, sequential)");
    const profile: Ours["profile"] = [];
    const probe = async (label: string, ...args: Parameters<typeof sequential>) => {
      const { result, cpu, clientMs } = await withGroupCpu(api.pgid, () => sequential(...args));
      profile.push({ label, s: result, cpu: perOp(cpu, clientMs, result.n + 5) });
    };
    const cpuOf = async (label: string, run: () => Promise<LoadResult>): Promise<LoadResult> => {
      const { result, cpu, clientMs } = await withGroupCpu(api.pgid, run);
      const n = Math.max(1, result.done + result.errors);
      cpuUse.push({ label, cpu: perOp(cpu, clientMs, n) });
      return result;
    };
    await probe("GET /healthz (HTTP + workerd + router)", d, 200, 200, "GET", () => "/healthz");
    await probe("GET /healthz at the engine port", api.direct, 200, 200, "GET", () => "/healthz");
    await probe("GET /api/v1 (+ authn, discovery)", d, 200, 200, "GET", () => "/api/v1");
    await probe(
      "GET missing pod (+ authz, store read)",
      d,
      200,
      404,
      "GET",
      (i) => `/api/v1/namespaces/${NS}/pods/none-${i}`,
    );
    const dry = await request(
      d,
      oneShot,
      "POST",
      `/api/v1/namespaces/${NS}/pods?dryRun=All`,
      podBody("dry-x", 0),
    );
    if (dry.status === 201)
      await probe(
        "POST pod dryRun=All (+ decode, default, admit)",
        d,
        200,
        201,
        "POST",
        () => `/api/v1/namespaces/${NS}/pods?dryRun=All`,
        (i) => podBody(`dry-${i}`, i),
      );
    else log(`profile: dryRun=All unsupported (HTTP ${dry.status}), skipped`);
    const cpuUse: Ours["cpu"] = [];
    log(`warm-up: ${WARM_UP_SECONDS}s of creates, 50 clients (reported as the cold start)`);
    await createNamespace(d, WARM_NS);
    const cold = await createPods(d, WARM_NS, "warm", 0, 100_000, 50, WARM_UP_SECONDS);
    let next = 0;
    const creates: Ours["creates"] = {};
    for (const c of CLIENTS) {
      const { count, seconds } = CREATES[c] as { count: number; seconds: number };
      log(`creates: ${count} pods (or ${seconds}s), ${c} client(s), through the front door`);
      creates[c] = await cpuOf(`create c${c}`, () => createPods(d, NS, "bench", next, count, c, seconds));
      next += count;
    }
    const engineCreates: Ours["engineCreates"] = {};
    for (const c of CLIENTS) {
      const { count, seconds } = ENGINE_CREATES[c] as { count: number; seconds: number };
      log(`creates: ${count} pods (or ${seconds}s), ${c} client(s), at the engine port`);
      engineCreates[c] = await cpuOf(`create engine c${c}`, () =>
        createPods(api.direct, NS, "bench", next, count, c, seconds),
      );
      next += count;
    }
    const one = await request(d, oneShot, "GET", `/api/v1/namespaces/${NS}/pods/bench-0`);
    const podBytes = one.body.length;
    const podJson = one.body;
    const have = [...Object.values(creates), ...Object.values(engineCreates)].reduce((a, r) => a + r.done, 0);
    log(
      `fill: up to ${Math.max(0, podCount - have)} more pods (50 clients, at most ${FILL_SECONDS}s) toward ${podCount}`,
    );
    const fill = await cpuOf("fill c50", () =>
      createPods(d, NS, "bench", next, Math.max(0, podCount - have), 50, FILL_SECONDS),
    );
    next += Math.max(0, podCount - have);
    const all = await request(d, oneShot, "GET", `/api/v1/namespaces/${NS}/pods`);
    const names = (JSON.parse(all.body) as { items: { metadata: { name: string } }[] }).items.map(
      (p) => p.metadata.name,
    );
    const listAllItems = names.length;
    const stored = names.length;
    log(`reads with ${stored} pods stored`);
    const get = await sequential(
      d,
      300,
      200,
      "GET",
      (i) => `/api/v1/namespaces/${NS}/pods/${names[(i * 7919) % stored]}`,
    );
    // a second client reads one pod every 5 ms meanwhile: how long a small read waits for a big one
    const { result: lists, probe: getDuringLists } = await probeDuring(
      d,
      `/api/v1/namespaces/${NS}/pods/${names[0]}`,
      async () => ({
        listAll: await sequential(d, 5, 200, "GET", () => `/api/v1/namespaces/${NS}/pods`),
        // what `kubectl get pods --chunk-size=0` asks for
        listTable: await sequential(d, 5, 200, "GET", () => `/api/v1/namespaces/${NS}/pods`, undefined, {
          accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        }),
      }),
    );
    const { listAll, listTable } = lists;
    const sel = (i: number) => `/api/v1/namespaces/${NS}/pods?labelSelector=${GROUP_LABEL}%3Dg${i % 100}`;
    const listSelector = await sequential(d, 30, 200, "GET", sel);
    const selBody = await request(d, oneShot, "GET", sel(7));
    const listSelectorItems = (JSON.parse(selBody.body) as { items: unknown[] }).items.length;
    const paged = await pagedWalks(d, NS, 500, 3);
    const watches: WatchResult[] = [];
    for (const w of WATCHES) {
      log(`watch: ${w.watchers} watcher(s) x ${w.events} creates`);
      const { result, cpu, clientMs } = await withGroupCpu(api.pgid, () =>
        apiWatchLatency(d, WATCH_NS, w.watchers, w.events, w.seconds),
      );
      watches.push(result);
      const n = result.events + 1;
      cpuUse.push({ label: `watch w${w.watchers}`, cpu: perOp(cpu, clientMs, n) });
    }
    // as client-go watches (and as the etcd rows' gRPC watches share one channel)
    log("watch: 1000 watchers as streams of one HTTP/2 connection x 100 creates");
    const h2 = await withGroupCpu(api.pgid, () =>
      apiWatchLatency(d, WATCH_NS, 1000, 100, 30, "bwh1000", "h2"),
    );
    cpuUse.push({ label: "watch h2 w1000", cpu: perOp(h2.cpu, h2.clientMs, h2.result.events + 1) });
    // last: tens of thousands of requests in a few seconds leave the isolate a collection to
    // make, which slowed the creates after them by a third when they ran first
    log(`ceilings: requests answered per second, 50 clients, ${CEILING_SECONDS}s each, at the engine port`);
    const ceilings: Ours["ceilings"] = [];
    for (const c of CEILINGS) {
      const r = await cpuOf(`ceiling ${c.key}`, () =>
        requestCeiling(api.direct, c.status, c.path, 50, CEILING_SECONDS),
      );
      ceilings.push({ ...c, r });
    }
    // Opt-in (BENCH_WORKER_PORT=1 with EDGEPLANE_DEV_ENGINE=wrangler): the same again straight
    // to the workerd running the Worker, skipping wrangler's proxy workerd. The default engine
    // has no proxy: its port is the Worker's workerd already.
    let workerCreates: LoadResult | undefined;
    let workerWatch: WatchResult | undefined;
    if (api.worker && process.env.BENCH_WORKER_PORT === "1") {
      const wt = api.worker;
      log("creates: 1000 pods (or 15s), 50 clients, straight to the Worker's workerd");
      workerCreates = await cpuOf("create worker c50", () => createPods(wt, NS, "bench", next, 1000, 50, 15));
      next += 1000;
      log("watch: 1000 watchers x 100 creates, straight to the Worker's workerd");
      const { result, cpu, clientMs } = await withGroupCpu(api.pgid, () =>
        apiWatchLatency(wt, WATCH_NS, 1000, 100, 30, "bwk1000"),
      );
      workerWatch = result;
      cpuUse.push({ label: "watch worker w1000", cpu: perOp(cpu, clientMs, result.events + 1) });
    } else if (process.env.BENCH_WORKER_PORT === "1") log("the Worker's own workerd port was not found");
    return {
      workerCreates,
      workerWatch,
      h2Watch: h2.result,
      profile,
      creates,
      engineCreates,
      ceilings,
      cold,
      fill,
      podBytes,
      podJson,
      stored,
      get,
      listAll,
      listTable,
      getDuringLists,
      listAllItems,
      listSelector,
      listSelectorItems,
      page: paged.page,
      walk: paged.walk,
      walkItems: paged.items,
      watches,
      cpu: cpuUse,
    };
  } finally {
    log("apiserver: stopping");
    await api.stop();
  }
}

export async function runApiStore(): Promise<Record<string, number>> {
  const podCount = Number(process.env.BENCH_PODS ?? 10000);
  const loadBefore = loadavg()[0] as number;
  const ours = await measureOurs(podCount);
  const etcd = await runEtcdBaseline({
    valueBytes: ours.podBytes,
    puts: CLIENTS.map((c) => ({ clients: c, count: c === 1 ? 1000 : 5000 })),
    warmUpSeconds: WARM_UP_SECONDS,
    watches: WATCHES,
    log,
  });
  const pod = JSON.parse(ours.podJson) as { metadata: Record<string, unknown> };
  const floor = await runFanoutFloor({
    watches: WATCHES,
    // the line an apiserver watch carries for a pod named id
    eventFor: (id) =>
      `${JSON.stringify({ type: "ADDED", object: { ...pod, metadata: { ...pod.metadata, name: id } } })}\n`,
    log,
  });
  const metrics = report(ours, etcd, floor);
  metrics.bench_seconds = (performance.now() - t0) / 1000;
  // Other work on the machine skews every figure: the 1-minute load average before and after.
  metrics.machine_load1_before = loadBefore;
  metrics.machine_load1_after = loadavg()[0] as number;
  metrics.machine_cpus = cpus().length;
  metrics.pods_to_default_scheduler = SCHEDULER_NAME === "default-scheduler" ? 1 : 0;
  console.log(`pods: spec.schedulerName=${SCHEDULER_NAME} (BENCH_SCHEDULE=1 for default-scheduler)`);
  // the front door relays watches unless told not to (local-engine/watch-relay.ts)
  metrics.watch_relay = process.env.EDGEPLANE_RELAY === "off" ? 0 : 1;
  console.log(
    `watches: ${metrics.watch_relay ? "relayed by the front door (EDGEPLANE_RELAY=off for a stream each)" : "a stream each from workerd (EDGEPLANE_RELAY=off)"}`,
  );
  console.log(
    `\nmachine: ${cpus().length} CPUs, load average ${loadBefore.toFixed(1)} before, ${metrics.machine_load1_after.toFixed(1)} after`,
  );
  const file = writeResults("api-store", metrics);
  log(`wrote ${file}`);
  return metrics;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runApiStore();
}
