// The networking bench's pod-to-pod rows: request latency, requests/s and bulk throughput
// between pods on real hosts (local-engine/hosts), beside the same traffic between two
// processes on the machine over 127.0.0.1 (the floor), as ratios. One program (net-load.mjs)
// makes all of it; in a pod it runs chrooted into the host's filesystem (a read-only hostPath
// of /), so the pod's own network namespace carries its traffic while the binary is the
// machine's Node. Paths: both pods on one host (the bridge), across hosts on one subnet
// (host-gw), and across subnets (VXLAN).
import { spawn } from "node:child_process";
import { join } from "node:path";
import type { Hosts } from "../../local-engine/hosts/hosts";
import { REPO_ROOT, type Row } from "./report";
import { percentile, ratio } from "./stats";

const median = (xs: number[]) => percentile(xs, 50);

const LOAD = join(REPO_ROOT, "bench/lib/net-load.mjs");
const BUSYBOX = "127.0.0.1:5000/edgeplane/busybox:1";

export interface LoadFigures {
  p50_us: number;
  p99_us: number;
  rps: number;
  bulk_mb_s: number;
}

export interface LoadSettings {
  /** rounds of the floor and every path, alternating; figures are medians */
  rounds: number;
  requests: number;
  concurrency: number;
  seconds: number;
  bulkBytes: number;
}

export const DEFAULT_LOAD: LoadSettings = {
  rounds: Number(process.env.BENCH_NET_ROUNDS ?? 3),
  requests: Number(process.env.BENCH_NET_REQUESTS ?? 2000),
  concurrency: Number(process.env.BENCH_NET_CONCURRENCY ?? 8),
  seconds: Number(process.env.BENCH_NET_SECONDS ?? 3),
  bulkBytes: Number(process.env.BENCH_NET_BULK_MB ?? 64) * 1024 * 1024,
};

const clientArgs = (base: string, s: LoadSettings) => [
  "client",
  base,
  String(s.requests),
  String(s.concurrency),
  String(s.seconds),
  String(s.bulkBytes),
];

function parseFigures(out: string): LoadFigures {
  const line = out
    .trim()
    .split("\n")
    .reverse()
    .find((l) => l.startsWith("{"));
  if (!line) throw new Error(`no figures in: ${out.slice(-500)}`);
  return JSON.parse(line) as LoadFigures;
}

/** The floor: the same client and server as two processes on the machine, over 127.0.0.1. */
export async function machineFloor(
  s: LoadSettings,
  port = 18_000 + Math.floor(Math.random() * 2000),
): Promise<LoadFigures> {
  const server = spawn(process.execPath, [LOAD, "server", String(port)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    await new Promise<void>((res, rej) => {
      server.stdout.on("data", (d) => String(d).includes("listening") && res());
      server.once("exit", (c) => rej(new Error(`floor server exited (${c})`)));
    });
    const client = spawn(process.execPath, [LOAD, ...clientArgs(`http://127.0.0.1:${port}`, s)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    client.stdout.on("data", (d) => (out += d));
    await new Promise((r) => client.once("exit", r));
    return parseFigures(out);
  } finally {
    server.kill("SIGTERM");
  }
}

type Api = (
  method: string,
  path: string,
  body?: unknown,
) => Promise<{ status: number; json: any; text: string }>;

function apiOf(url: string, token: string): Api {
  return async (method, path, body) => {
    const r = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {}
    return { status: r.status, json, text };
  };
}

/** A pod running net-load.mjs with the host's filesystem (and Node) and the pod's network. */
function loadPod(name: string, node: string, args: string[], once: boolean): any {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, labels: { app: "netbench" } },
    spec: {
      nodeName: node,
      restartPolicy: once ? "Never" : "Always",
      terminationGracePeriodSeconds: 0,
      volumes: [{ name: "host", hostPath: { path: "/", type: "Directory" } }],
      containers: [
        {
          name: "load",
          image: BUSYBOX,
          command: ["chroot", "/host", process.execPath, LOAD, ...args],
          volumeMounts: [{ name: "host", mountPath: "/host", readOnly: true }],
        },
      ],
    },
  };
}

async function waitPod(
  api: Api,
  ns: string,
  name: string,
  pred: (p: any) => boolean,
  ms: number,
): Promise<any> {
  const until = Date.now() + ms;
  let last: any;
  for (;;) {
    last = (await api("GET", `/api/v1/namespaces/${ns}/pods/${name}`)).json;
    if (last && pred(last)) return last;
    if (Date.now() > until) throw new Error(`pod ${name}: timed out; status ${JSON.stringify(last?.status)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export interface PodNetFigures {
  rows: Row[];
  metrics: Record<string, number>;
}

/**
 * Measures pod-to-pod traffic over `hosts` (host-1, host-2 and host-3; host-2 on another subnet
 * than the other two, as startHosts({count: 3, subnets: 2}) lays them out).
 */
export async function podNetworkFigures(o: {
  url: string;
  token: string;
  hosts: Hosts;
  settings?: LoadSettings;
  log?: (m: string) => void;
}): Promise<PodNetFigures> {
  const s = o.settings ?? DEFAULT_LOAD;
  const log = o.log ?? (() => {});
  const api = apiOf(o.url, o.token);
  const ns = `netbench-${Math.random().toString(36).slice(2, 7)}`;
  const made = await api("POST", "/api/v1/namespaces", {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: ns },
  });
  if (made.status !== 201) throw new Error(`namespace: ${made.status} ${made.text}`);
  try {
    const r = await api(
      "POST",
      `/api/v1/namespaces/${ns}/pods`,
      loadPod("server", "host-1", ["server", "8080"], false),
    );
    if (r.status !== 201) throw new Error(`server pod: ${r.status} ${r.text}`);
    const server = await waitPod(
      api,
      ns,
      "server",
      (p) => p.status?.phase === "Running" && !!p.status.podIP,
      90_000,
    );
    const paths: [key: string, label: string, node: string][] = [
      ["same_host", "pod to pod, one host (bridge)", "host-1"],
      ["host_gw", "pod to pod, two hosts, one subnet (host-gw)", "host-3"],
      ["vxlan", "pod to pod, two hosts, two subnets (VXLAN)", "host-2"],
    ];
    // rounds alternate the floor and every path, so the machine's other load hits them alike;
    // each figure is the median of its rounds
    const samples = new Map<string, LoadFigures[]>();
    const add = (k: string, f: LoadFigures) => samples.set(k, [...(samples.get(k) ?? []), f]);
    for (let round = 1; round <= s.rounds; round++) {
      log(`round ${round}/${s.rounds}: floor (two processes on the machine over 127.0.0.1)`);
      add("floor", await machineFloor(s));
      for (const [key, label, node] of paths) {
        log(`round ${round}/${s.rounds}: ${label}`);
        const name = `client-${key.replace("_", "-")}-${round}`;
        const c = await api(
          "POST",
          `/api/v1/namespaces/${ns}/pods`,
          loadPod(name, node, clientArgs(`http://${server.status.podIP}:8080`, s), true),
        );
        if (c.status !== 201) throw new Error(`client pod: ${c.status} ${c.text}`);
        const done = await waitPod(
          api,
          ns,
          name,
          (p) => p.status?.phase === "Succeeded" || p.status?.phase === "Failed",
          180_000,
        );
        const out = (await api("GET", `/api/v1/namespaces/${ns}/pods/${name}/log`)).text;
        if (done.status.phase !== "Succeeded") throw new Error(`${name} failed: ${out.slice(-1000)}`);
        add(key, parseFigures(out));
        await api("DELETE", `/api/v1/namespaces/${ns}/pods/${name}`);
      }
    }
    const med = (k: string, f: keyof LoadFigures) => median((samples.get(k) ?? []).map((x) => x[f]));
    const floor: LoadFigures = {
      p50_us: med("floor", "p50_us"),
      p99_us: med("floor", "p99_us"),
      rps: med("floor", "rps"),
      bulk_mb_s: med("floor", "bulk_mb_s"),
    };
    const metrics: Record<string, number> = {
      rounds: s.rounds,
      floor_p50_us: floor.p50_us,
      floor_p99_us: floor.p99_us,
      floor_rps: floor.rps,
      floor_bulk_mb_s: floor.bulk_mb_s,
    };
    const rows: Row[] = [
      [
        "two processes on the machine (floor)",
        floor.p50_us,
        floor.p99_us,
        floor.rps,
        floor.bulk_mb_s,
        "1",
        "1",
        "1",
      ],
    ];
    for (const [key, label] of paths) {
      const f: LoadFigures = {
        p50_us: med(key, "p50_us"),
        p99_us: med(key, "p99_us"),
        rps: med(key, "rps"),
        bulk_mb_s: med(key, "bulk_mb_s"),
      };
      const r50 = ratio(f.p50_us, floor.p50_us);
      const rRps = ratio(f.rps, floor.rps);
      const rBulk = ratio(f.bulk_mb_s, floor.bulk_mb_s);
      Object.assign(metrics, {
        [`pod_${key}_p50_us`]: f.p50_us,
        [`pod_${key}_p99_us`]: f.p99_us,
        [`pod_${key}_rps`]: f.rps,
        [`pod_${key}_bulk_mb_s`]: f.bulk_mb_s,
        [`pod_${key}_p50_ratio`]: r50,
        [`pod_${key}_rps_ratio`]: rRps,
        [`pod_${key}_bulk_ratio`]: rBulk,
      });
      rows.push([label, f.p50_us, f.p99_us, f.rps, f.bulk_mb_s, `${r50}`, `${rRps}`, `${rBulk}`]);
    }
    return { rows, metrics };
  } finally {
    await api("DELETE", `/api/v1/namespaces/${ns}`);
  }
}

export const POD_NET_HEADER = [
  "path",
  "p50 µs",
  "p99 µs",
  "req/s",
  "bulk MB/s",
  "p50 ×floor",
  "req/s ×floor",
  "MB/s ×floor",
];
