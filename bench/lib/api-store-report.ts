// The api-store benchmark's report: its tables, and the flat metrics (ratios and target
// checks included) written to .edgeplane/bench/api-store.json.
import type { GroupCpu } from "./cpu";
import type { EtcdBaseline } from "./etcd-bench";
import { GROUP_LABEL } from "./pods";
import { type Row, table } from "./report";
import { type LoadResult, ratio, type Summary } from "./stats";
import type { WatchResult } from "./watch-latency";

export const CLIENTS = [1, 50] as const;

/** CPU ms per operation: the server's processes, and this benchmark client. */
export interface PerOp extends GroupCpu {
  client: number;
}

export const perOp = (cpu: GroupCpu, clientMs: number, n: number): PerOp => ({
  workerd: cpu.workerd / n,
  proxy: cpu.proxy / n,
  other: cpu.other / n,
  client: clientMs / n,
});

export interface Ours {
  /** Sequential requests: latency, and the server's CPU ms per request (workerd, the rest). */
  profile: { label: string; s: Summary; cpu: PerOp }[];
  /** Server (workerd / engine's Node) and benchmark-client CPU ms per operation, per phase. */
  cpu: { label: string; cpu: PerOp }[];
  creates: Record<number, LoadResult>;
  /** the same creates at the engine's own port (no front door) */
  engineCreates: Record<number, LoadResult>;
  /** the most requests of a shape the engine answers per second at 50 clients (api-store.ts CEILINGS) */
  ceilings: { key: string; label: string; r: LoadResult }[];
  fill: LoadResult;
  /** 50-client creates from a fresh start (the warm-up): not the steady state the targets are about */
  cold: LoadResult;
  podBytes: number;
  /** one stored bench pod, as the API returns it (the floor's events carry the same bytes) */
  podJson: string;
  stored: number;
  get: Summary;
  listAll: Summary & { bytes: number };
  /** the same list as a Table, as kubectl get asks for it */
  listTable: Summary & { bytes: number };
  /** one pod read every 5 ms by a second client while the whole lists above ran */
  getDuringLists: Summary;
  listAllItems: number;
  listSelector: Summary;
  listSelectorItems: number;
  page: Summary;
  walk: Summary;
  walkItems: number;
  watches: WatchResult[];
  /** 50-client creates and 1,000 watchers straight to the Worker's workerd (no wrangler proxy). */
  workerCreates?: LoadResult;
  workerWatch?: WatchResult;
  /** 1,000 watches as streams of one HTTP/2 connection (the rows above: a connection each) */
  h2Watch?: WatchResult;
}

export function report(ours: Ours, etcd: EtcdBaseline, floor: WatchResult[]): Record<string, number> {
  const m: Record<string, number> = {};
  const lat = (s: Summary): (string | number)[] => [s.n, s.p50, s.p99, s.max];
  const load = (r: LoadResult): (string | number)[] => [...lat(r.latency), r.longestStallMs, r.errors];
  const rows: Row[] = [];
  for (const c of CLIENTS) {
    const o = ours.creates[c] as LoadResult;
    const f = ours.engineCreates[c] as LoadResult;
    const e = etcd.puts[c] as LoadResult;
    rows.push([`pod create, ${c} client(s), front door`, o.perSecond, ...load(o)]);
    rows.push([`pod create, ${c} client(s), engine port`, f.perSecond, ...load(f)]);
    rows.push([`etcd put ${ours.podBytes} B, ${c} client(s)`, e.perSecond, ...load(e)]);
    Object.assign(m, {
      [`create_c${c}_per_s`]: o.perSecond,
      [`create_c${c}_p50_ms`]: o.latency.p50,
      [`create_c${c}_p99_ms`]: o.latency.p99,
      [`create_c${c}_errors`]: o.errors,
      [`create_c${c}_longest_stall_ms`]: o.longestStallMs,
      [`create_engine_c${c}_per_s`]: f.perSecond,
      [`create_engine_c${c}_p50_ms`]: f.latency.p50,
      [`create_engine_c${c}_p99_ms`]: f.latency.p99,
      [`etcd_put_c${c}_per_s`]: e.perSecond,
      [`etcd_put_c${c}_p50_ms`]: e.latency.p50,
      [`etcd_put_c${c}_p99_ms`]: e.latency.p99,
      [`etcd_put_c${c}_longest_stall_ms`]: e.longestStallMs,
      [`ratio_create_vs_etcd_put_c${c}_per_s`]: ratio(o.perSecond, e.perSecond),
      [`ratio_create_vs_etcd_put_c${c}_p50`]: ratio(o.latency.p50, e.latency.p50),
      [`ratio_create_vs_etcd_put_c${c}_p99`]: ratio(o.latency.p99, e.latency.p99),
    });
  }
  const e50 = etcd.puts[50] as LoadResult;
  for (const { key, label, r } of ours.ceilings) {
    rows.push([`ceiling: ${label}, 50 clients, engine port`, r.perSecond, ...load(r)]);
    m[`ceiling_${key}_c50_per_s`] = r.perSecond;
    m[`ratio_ceiling_${key}_vs_etcd_put_c50_per_s`] = ratio(r.perSecond, e50.perSecond);
  }
  rows.push([`fill toward ${ours.stored} pods, 50 clients`, ours.fill.perSecond, ...load(ours.fill)]);
  rows.push(["pod create, 50 clients, cold (warm-up)", ours.cold.perSecond, ...load(ours.cold)]);
  rows.push(["etcd put, 50 clients, cold (warm-up)", etcd.cold.perSecond, ...load(etcd.cold)]);
  Object.assign(m, {
    create_cold_c50_per_s: ours.cold.perSecond,
    create_cold_c50_p99_ms: ours.cold.latency.p99,
    etcd_put_cold_c50_per_s: etcd.cold.perSecond,
  });
  const wc = ours.workerCreates;
  if (wc) {
    rows.push(["pod create, 50 clients, Worker's workerd", wc.perSecond, ...load(wc)]);
    Object.assign(m, {
      create_worker_c50_per_s: wc.perSecond,
      create_worker_c50_p50_ms: wc.latency.p50,
      create_worker_c50_p99_ms: wc.latency.p99,
    });
  }
  const failed = [
    ...CLIENTS.map((c) => [`create c${c}`, ours.creates[c]] as const),
    ...CLIENTS.map((c) => [`create engine c${c}`, ours.engineCreates[c]] as const),
    ["fill", ours.fill] as const,
    ...ours.ceilings.map((c) => [`ceiling ${c.key}`, c.r] as const),
    ["create worker c50", wc] as const,
  ].filter(([, r]) => r && r.errors > 0);
  for (const [label, r] of failed) console.log(`errors in ${label}: ${r?.errors}, first: ${r?.firstError}`);
  m.fill_c50_per_s = ours.fill.perSecond;
  m.pod_bytes = ours.podBytes;
  console.log(
    table(
      "Writes (ms; ops/s over the whole run; front door = the port clients use; engine port = workerd's own socket;\n" +
        "stall = the longest stretch with no completion, e.g. a full GC in workerd: its mark plus the finalizers of\n" +
        "every request's runtime objects since the last one, all on the one thread)",
      ["", "ops/s", "n", "p50", "p99", "max", "stall", "errors"],
      rows,
    ),
  );

  m.stored_pods = ours.stored;
  const reads: Row[] = [
    ["get one pod", ...lat(ours.get), 1],
    ["list all pods", ...lat(ours.listAll), ours.listAllItems],
    ["list all pods as a Table (kubectl get)", ...lat(ours.listTable), ours.listAllItems],
    ["get one pod, while those lists run", ...lat(ours.getDuringLists), 1],
    [`list ${GROUP_LABEL}=gN selector`, ...lat(ours.listSelector), ours.listSelectorItems],
    ["list limit=500, per page", ...lat(ours.page), 500],
    ["list limit=500, whole walk", ...lat(ours.walk), ours.walkItems],
  ];
  console.log(
    table(
      `Reads with ${ours.stored} pods stored (ms, 1 client)`,
      ["", "n", "p50", "p99", "max", "items"],
      reads,
    ),
  );
  Object.assign(m, {
    get_p50_ms: ours.get.p50,
    get_p99_ms: ours.get.p99,
    list_all_p50_ms: ours.listAll.p50,
    list_all_p99_ms: ours.listAll.p99,
    list_all_items: ours.listAllItems,
    list_all_bytes: ours.listAll.bytes,
    list_table_p50_ms: ours.listTable.p50,
    list_table_p99_ms: ours.listTable.p99,
    get_during_lists_p99_ms: ours.getDuringLists.p99,
    get_during_lists_max_ms: ours.getDuringLists.max,
    list_selector_p50_ms: ours.listSelector.p50,
    list_selector_p99_ms: ours.listSelector.p99,
    list_selector_items: ours.listSelectorItems,
    list_page500_p50_ms: ours.page.p50,
    list_page500_p99_ms: ours.page.p99,
    list_paged_walk_p50_ms: ours.walk.p50,
    list_paged_walk_items: ours.walkItems,
  });

  const wrows: Row[] = [];
  const watchRow = (label: string, r: WatchResult): Row => [
    label,
    r.events,
    r.latency.n,
    r.latency.p50,
    r.latency.p99,
    r.latency.max,
    r.missed,
  ];
  for (const o of ours.watches) {
    const e = etcd.watches.find((x) => x.watchers === o.watchers);
    const f = floor.find((x) => x.watchers === o.watchers);
    const w = o.watchers;
    wrows.push(watchRow(`${w} watcher(s), ours`, o));
    if (e) wrows.push(watchRow(`${w} watcher(s), etcd`, e));
    if (f) wrows.push(watchRow(`${w} watcher(s), floor: a bare Node server`, f));
    Object.assign(m, {
      [`floor_watch_w${w}_p50_ms`]: f?.latency.p50 ?? Number.NaN,
      [`floor_watch_w${w}_p99_ms`]: f?.latency.p99 ?? Number.NaN,
      [`ratio_watch_vs_floor_w${w}_p99`]: ratio(o.latency.p99, f?.latency.p99 ?? Number.NaN),
      [`watch_w${w}_p50_ms`]: o.latency.p50,
      [`watch_w${w}_p99_ms`]: o.latency.p99,
      [`watch_w${w}_missed`]: o.missed,
      [`etcd_watch_w${w}_p50_ms`]: e?.latency.p50 ?? Number.NaN,
      [`etcd_watch_w${w}_p99_ms`]: e?.latency.p99 ?? Number.NaN,
      [`ratio_watch_vs_etcd_w${w}_p50`]: ratio(o.latency.p50, e?.latency.p50 ?? Number.NaN),
      [`ratio_watch_vs_etcd_w${w}_p99`]: ratio(o.latency.p99, e?.latency.p99 ?? Number.NaN),
    });
  }
  const extra = (label: string, key: string, r: WatchResult | undefined) => {
    if (!r) return;
    wrows.push(watchRow(label, r));
    Object.assign(m, {
      [`${key}_p50_ms`]: r.latency.p50,
      [`${key}_p99_ms`]: r.latency.p99,
      [`${key}_missed`]: r.missed,
    });
  };
  extra("1000 watchers, ours, on one HTTP/2 connection", "watch_h2_w1000", ours.h2Watch);
  extra("1000 watchers, ours, Worker's workerd", "watch_worker_w1000", ours.workerWatch);
  console.log(
    table(
      "Watch delivery: write sent -> event at each watcher (ms; floor = the same client and event bytes from a\n" +
        "bare Node server that writes each event to every connection: this machine's cost of the fan-out alone)",
      ["", "events", "samples", "p50", "p99", "max", "missed"],
      wrows,
    ),
  );

  const prows: Row[] = ours.profile.map(({ label, s, cpu }) => [
    label,
    s.n,
    s.p50,
    s.p99,
    cpu.workerd,
    cpu.proxy,
  ]);
  const c1 = ours.creates[1] as LoadResult;
  const c1cpu = ours.cpu.find((x) => x.label === "create c1");
  prows.push([
    "POST pod (full create, committed)",
    c1.latency.n,
    c1.latency.p50,
    c1.latency.p99,
    c1cpu?.cpu.workerd ?? Number.NaN,
    c1cpu?.cpu.proxy ?? Number.NaN,
  ]);
  console.log(
    table(
      "Where a create's time goes (1 client, sequential; each row adds a stage; CPU = server ms per request)",
      ["", "n", "p50", "p99", "worker CPU", "proxy CPU"],
      prows,
    ),
  );
  const keys = [
    "floor_healthz",
    "floor_engine_healthz",
    "floor_discovery",
    "floor_get_missing",
    "floor_create_dry_run",
  ];
  ours.profile.forEach(({ s, cpu }, i) => {
    m[`${keys[i]}_p50_ms`] = s.p50;
    m[`${keys[i]}_p99_ms`] = s.p99;
    m[`${keys[i]}_worker_cpu_ms`] = cpu.workerd;
    m[`${keys[i]}_proxy_cpu_ms`] = cpu.proxy;
  });
  console.log(
    table(
      "CPU ms per operation by phase (worker = workerd running the Worker + Durable Objects; proxy = wrangler's proxy workerd, only with EDGEPLANE_DEV_ENGINE=wrangler; node = the engine's Node; client = this benchmark)",
      ["", "worker", "proxy", "node", "client"],
      ours.cpu.map((x) => [x.label, x.cpu.workerd, x.cpu.proxy, x.cpu.other, x.cpu.client]),
    ),
  );
  for (const x of ours.cpu) {
    const k = x.label.replaceAll(" ", "_");
    m[`cpu_${k}_worker_ms`] = x.cpu.workerd;
    m[`cpu_${k}_proxy_ms`] = x.cpu.proxy;
    m[`cpu_${k}_node_ms`] = x.cpu.other;
    m[`cpu_${k}_client_ms`] = x.cpu.client;
  }

  const w1000 = ours.watches.find((w) => w.watchers === 1000);
  const c50 = ours.creates[50] as LoadResult;
  m.target_create_c50_p99_le_50ms = c50.latency.p99 <= 50 ? 1 : 0;
  const within50 = (w: WatchResult | undefined) => (w && w.latency.p99 <= 50 && w.missed === 0 ? 1 : 0);
  m.target_watch_w1000_p99_le_50ms = within50(w1000);
  const h2 = ours.h2Watch;
  if (h2) m.target_watch_h2_w1000_p99_le_50ms = within50(h2);
  m.target_create_c50_per_s_ge_etcd_put = c50.perSecond >= e50.perSecond ? 1 : 0;
  const yes = (x: number | undefined) => (x === 1 ? "met" : "NOT met");
  console.log(
    table(
      `Targets (etcd ${etcd.version}, ${etcd.client} client)`,
      ["", "ours", "target", ""],
      [
        ["p99 create at 50 clients (ms)", c50.latency.p99, "<= 50", yes(m.target_create_c50_p99_le_50ms)],
        [
          "watch p99 at 1,000 watchers (ms)",
          w1000?.latency.p99 ?? Number.NaN,
          "<= 50",
          yes(m.target_watch_w1000_p99_le_50ms),
        ],
        // as etcd's 1,000 watchers share one gRPC channel
        ...(h2
          ? [
              [
                "  the same on one HTTP/2 connection",
                h2.latency.p99,
                "<= 50",
                yes(m.target_watch_h2_w1000_p99_le_50ms),
              ] as Row,
            ]
          : []),
        [
          "creates/s at 50 clients",
          c50.perSecond,
          `>= ${Math.round(e50.perSecond)}`,
          yes(m.target_create_c50_per_s_ge_etcd_put),
        ],
      ],
    ),
  );
  return m;
}
