// The Services rows of `npm run bench networking` (issue 28's speed targets):
//  - a full proxier sync of 1,000 Services x 3 endpoints into one table: compile + nft, wall
//    and CPU, beside nft loading the same table text alone (the same-run floor), and the
//    partial sync of one endpoint change at that size;
//  - Service programming: an EndpointSlice change -> the rule in every node's table, p50/p99
//    over 100 changes (nodes: edgelets on this machine, each with a table of its own, seen
//    through `nft monitor`, which prints each change as the kernel commits it);
//  - pod -> ClusterIP requests (curl in a pod) beside the same requests between two processes
//    on the machine (the floor), and the DNS lookup time inside a pod (curl's namelookup).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { groupSlices } from "../../agent/network/endpoints";
import { addBase, addServices, dedupeElements } from "../../agent/network/proxier/compile";
import { NftSession, runNft } from "../../agent/network/proxier/nft";
import { emptyRuleset, renderDiff, renderFull } from "../../agent/network/proxier/ruleset";
// @ts-expect-error plain ESM helper shared with npm start
import { startDevServer } from "../../local-engine/devserver";
import type { Row } from "./report";
import { percentile } from "./stats";

const log = (m: string) => console.log(`[networking] ${m}`);

/** CPU ms of this process's waited-for children (nft), from /proc/self/stat. */
function childrenCpuMs(): number {
  const f = readFileSync("/proc/self/stat", "utf8");
  const fields = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[13]) + Number(fields[14])) * 10; // cutime + cstime, 100 ticks/s
}

function bigCluster(n: number, eps = 3) {
  const services: any[] = [];
  const slices: any[] = [];
  for (let i = 0; i < n; i++) {
    services.push({
      metadata: { namespace: `ns${i % 20}`, name: `svc-${i}` },
      spec: {
        type: i % 10 === 0 ? "NodePort" : "ClusterIP",
        clusterIP: `10.96.${(i >> 8) + 1}.${i & 255}`,
        externalTrafficPolicy: "Cluster",
        ports: [
          { name: "http", port: 80, protocol: "TCP", ...(i % 10 === 0 ? { nodePort: 30000 + i } : {}) },
        ],
      },
    });
    slices.push({
      metadata: {
        namespace: `ns${i % 20}`,
        name: `svc-${i}-a`,
        labels: { "kubernetes.io/service-name": `svc-${i}` },
      },
      addressType: "IPv4",
      ports: [{ name: "http", port: 8080, protocol: "TCP" }],
      endpoints: Array.from({ length: eps }, (_, j) => ({
        addresses: [`10.244.${j}.${(i % 250) + 2}`],
        nodeName: `n${j}`,
        conditions: { ready: true },
      })),
    });
  }
  return { services, slices };
}

export async function proxierScale(metrics: Record<string, number>, rows: Row[]): Promise<void> {
  const ns = `netbench${process.pid}`;
  execFileSync("ip", ["netns", "add", ns]);
  const nft = (s: string) => runNft(s, ["netns", "exec", ns, "nft", "-f", "-"], "ip");
  // partial syncs as the edgelet applies them: through one nft process kept open
  const session = new NftSession(["ip", "netns", "exec", ns, "nft"]);
  try {
    const cfg = {
      nodeName: "n0",
      clusterCIDR: "10.244.0.0/16",
      localhostNodePorts: false,
      redirects: new Map(),
    };
    const { services, slices } = bigCluster(1000);
    const compile = (sl: any[]) => {
      const rs = emptyRuleset("edgeplane");
      addBase(rs, cfg);
      addServices(rs, cfg, services, groupSlices(sl));
      dedupeElements(rs);
      return rs;
    };
    const walls: number[] = [];
    const cpus: number[] = [];
    const floors: number[] = [];
    let size = 0;
    let last = compile(slices);
    for (let i = 0; i < 5; i++) {
      const cpu0 = process.cpuUsage();
      const kids0 = childrenCpuMs();
      const t0 = performance.now();
      const rs = compile(slices);
      const text = renderFull(rs);
      const r = await nft(text);
      const wall = performance.now() - t0;
      if (!r.ok) throw new Error(`full sync failed: ${r.error}`);
      const cpu = process.cpuUsage(cpu0);
      walls.push(wall);
      cpus.push((cpu.user + cpu.system) / 1000 + (childrenCpuMs() - kids0));
      size = text.length;
      last = rs;
      // the floor: nft loading the very same text, nothing compiled
      const f0 = performance.now();
      await nft(text);
      floors.push(performance.now() - f0);
    }
    // one endpoint changes: the partial sync a watch event causes
    const diffs: number[] = [];
    for (let i = 0; i < 10; i++) {
      const changed = structuredClone(slices);
      changed[i * 7].endpoints[0].conditions.ready = false;
      const t0 = performance.now();
      const next = compile(changed);
      const r = await session.apply(renderDiff(last, next));
      if (!r.ok) throw new Error(`partial sync failed: ${r.error}`);
      diffs.push(performance.now() - t0);
      const back = compile(slices);
      await session.apply(renderDiff(next, back));
      last = back;
    }
    const med = (a: number[]) => percentile(a, 50);
    metrics.proxier_full_sync_1000x3_ms = med(walls);
    metrics.proxier_full_sync_1000x3_cpu_ms = med(cpus);
    metrics.proxier_full_sync_nft_floor_ms = med(floors);
    metrics.proxier_full_sync_vs_floor = med(walls) / med(floors);
    metrics.proxier_partial_sync_1000x3_ms = med(diffs);
    metrics.proxier_table_bytes = size;
    rows.push([
      "full proxier sync, 1,000 Services x 3 endpoints (median of 5)",
      med(walls),
      med(cpus),
      "target <= 1000 ms",
    ]);
    rows.push([
      "  floor: nft loading the same table text alone",
      med(floors),
      "",
      `ratio ${(med(walls) / med(floors)).toFixed(2)}`,
    ]);
    rows.push(["partial sync, one endpoint changed, at 1,000 Services (median of 10)", med(diffs), "", ""]);
  } finally {
    session.close();
    execFileSync("ip", ["netns", "del", ns]);
  }
}

interface Cluster {
  server: any;
  /** each node: its name, its table, and the command that runs nft in its network namespace */
  nodes: { name: string; table: string; nft: string[]; out: () => string }[];
  /** "hosts" (local-engine/hosts: a network namespace each) or "machine" (all in this one) */
  kind: string;
  k(path: string, method?: string, body?: unknown): Promise<any>;
  stop(): Promise<void>;
}

async function apiClient(server: any) {
  return async (path: string, method = "GET", body?: unknown) => {
    const r = await fetch(server.url + path, {
      method,
      headers: {
        authorization: `Bearer ${server.token}`,
        "content-type": method === "PATCH" ? "application/merge-patch+json" : "application/json",
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, json: text ? JSON.parse(text) : undefined };
  };
}

/** N real hosts (network namespaces with their own containerd and edgelet) when the machine can. */
async function startHostsCluster(nodes: number): Promise<Cluster | undefined> {
  const { hostsUnavailable, startHosts } = await import("../../local-engine/hosts/hosts");
  const why = hostsUnavailable();
  if (why) {
    log(`hosts harness unavailable (${why}): edgelets on the machine instead`);
    return undefined;
  }
  const stateDir = mkdtempSync(join(tmpdir(), "edgeplane-bench-net-"));
  const server = await startDevServer({ stateDir, quiet: true });
  const k = await apiClient(server);
  const hosts = await startHosts({
    count: nodes,
    server: { url: server.url, token: server.token },
    namePrefix: `bn${process.pid % 1000}-`,
  });
  return {
    server,
    kind: "hosts",
    nodes: hosts.hosts.map((h) => ({
      name: h.name,
      table: "edgeplane",
      nft: ["nsenter", `--net=/run/netns/${h.netns}`, "--", "nft"],
      out: () => h.edgeletLog(),
    })),
    k,
    async stop() {
      await hosts.stop();
      await server.stop();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}

async function startMachineCluster(nodes: number): Promise<Cluster> {
  const stateDir = mkdtempSync(join(tmpdir(), "edgeplane-bench-net-"));
  const server = await startDevServer({ stateDir, quiet: true });
  const k = await apiClient(server);
  const list: { name: string; table: string; child: ChildProcess; root: string; out: string[] }[] = [];
  for (let i = 1; i <= nodes; i++) {
    const name = `bench-net-${process.pid}-${i}`;
    const table = `bn${process.pid}x${i}`;
    const root = mkdtempSync(join(tmpdir(), "edgeplane-bench-net-node-"));
    const out: string[] = [];
    const child = spawn(
      process.execPath,
      [
        join(import.meta.dirname, "../../agent/bin/edgelet.mjs"),
        "join",
        "--server",
        server.url,
        "--token",
        server.token,
        "--name",
        name,
        "--root",
        root,
        "--nft-table",
        table,
        // beside each other on the machine's one containerd and bridge (as the e2e harness's)
        "--pod-cidr",
        "10.88.0.0/16",
        "--cni-ipam-dir",
        "/var/lib/edgeplane/cni/networks",
        "--pod-network",
        "none",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    child.stdout?.on("data", (d) => out.push(String(d)));
    child.stderr?.on("data", (d) => out.push(String(d)));
    list.push({ name, table, child, root, out });
  }
  for (const n of list)
    for (let i = 0; ; i++) {
      const r = await k(`/api/v1/nodes/${n.name}`);
      if (
        r.json?.status?.conditions?.some((c: any) => c.type === "NetworkRulesApplied" && c.status === "True")
      )
        break;
      if (i > 240) throw new Error(`node ${n.name} not ready:\n${n.out.join("").slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  return {
    server,
    kind: "machine",
    nodes: list.map((n) => ({ name: n.name, table: n.table, nft: ["nft"], out: () => n.out.join("") })),
    k,
    async stop() {
      for (const n of list) {
        const done = new Promise((r) => n.child.once("exit", r));
        n.child.kill("SIGTERM");
        await Promise.race([done, new Promise((r) => setTimeout(r, 15_000))]);
        rmSync(n.root, { recursive: true, force: true });
      }
      await server.stop();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}

/** EndpointSlice change -> every node's table has the new rule, over `changes` changes. */
export async function programmingLatency(
  metrics: Record<string, number>,
  rows: Row[],
  nodes = 3,
  changes = 100,
): Promise<void> {
  log(`starting a control plane and ${nodes} nodes`);
  const c = (await startHostsCluster(nodes)) ?? (await startMachineCluster(nodes));
  log(`${c.nodes.length} nodes (${c.kind}) Ready`);
  // one `nft monitor` per node: it prints each change as the kernel commits it
  const seen = new Map<string, Map<string, number>>(); // endpoint ip -> node -> time
  const monitors = c.nodes.map((n) => {
    const m = spawn(n.nft[0]!, [...n.nft.slice(1), "monitor", "rules"], {
      stdio: ["ignore", "pipe", "ignore"],
    });
    let buf = "";
    m.stdout.setEncoding("utf8");
    m.stdout.on("data", (d: string) => {
      const t = performance.now();
      buf += d;
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const hit = / ip (\S+) svc-bench\/lat\/.*dnat to (10\.250\.\d+\.\d+):/.exec(line);
        if (hit && hit[1] === n.table) {
          let per = seen.get(hit[2]!);
          if (!per) seen.set(hit[2]!, (per = new Map()));
          if (!per.has(n.name)) per.set(n.name, t);
        }
      }
    });
    return m;
  });
  try {
    await c.k("/api/v1/namespaces", "POST", { metadata: { name: "bench" } });
    const svc = await c.k("/api/v1/namespaces/bench/services", "POST", {
      metadata: { name: "lat" },
      spec: { ports: [{ name: "http", port: 80, protocol: "TCP" }] },
    });
    if (svc.status !== 201) throw new Error(`service: ${svc.status} ${JSON.stringify(svc.json)}`);
    const sl = (ip: string) => ({
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { name: "lat-1", labels: { "kubernetes.io/service-name": "lat" } },
      addressType: "IPv4",
      ports: [{ name: "http", port: 8080, protocol: "TCP" }],
      endpoints: [{ addresses: [ip], conditions: { ready: true } }],
    });
    await c.k("/apis/discovery.k8s.io/v1/namespaces/bench/endpointslices", "POST", sl("10.250.0.1"));
    await new Promise((r) => setTimeout(r, 1000));
    const tables = new Set(c.nodes.map((n) => n.name));
    const lat: number[] = [];
    const patchMs: number[] = [];
    for (let i = 1; i <= changes; i++) {
      const ip = `10.250.${1 + (i >> 8)}.${i & 255}`;
      const t0 = performance.now();
      const r = await c.k("/apis/discovery.k8s.io/v1/namespaces/bench/endpointslices/lat-1", "PATCH", {
        endpoints: [{ addresses: [ip], conditions: { ready: true } }],
      });
      if (r.status !== 200) throw new Error(`patch: ${r.status}`);
      patchMs.push(performance.now() - t0);
      const end = Date.now() + 5000;
      while ([...tables].some((t) => !seen.get(ip)?.has(t)) && Date.now() < end)
        await new Promise((r) => setTimeout(r, 2));
      const per = seen.get(ip);
      if (!per || per.size < tables.size) throw new Error(`change ${i} did not reach every node within 5 s`);
      lat.push(Math.max(...[...per.values()]) - t0);
      await new Promise((r) => setTimeout(r, 20));
    }
    if (process.env.BENCH_NET_DEBUG) log(`latencies ${lat.map((x) => x.toFixed(0)).join(" ")}`);
    metrics.service_programming_nodes = nodes;
    metrics.service_programming_p50_ms = percentile(lat, 50);
    metrics.service_programming_p99_ms = percentile(lat, 99);
    rows.push([
      `EndpointSlice change -> rule on all ${c.nodes.length} nodes (${c.kind}, ${changes} changes)`,
      percentile(lat, 50),
      percentile(lat, 99),
      "target p99 <= 100 ms",
    ]);
    metrics.endpointslice_patch_p50_ms = percentile(patchMs, 50);
    metrics.endpointslice_patch_p99_ms = percentile(patchMs, 99);
    rows.push([
      "  of which: the PATCH answered (same run)",
      percentile(patchMs, 50),
      percentile(patchMs, 99),
      "",
    ]);

    for (const m of monitors) m.kill();
    await podTraffic(c, metrics, rows);
  } finally {
    for (const m of monitors) m.kill();
    if (process.env.BENCH_NET_DEBUG)
      for (const n of c.nodes)
        log(
          `${n.name}:\n${n
            .out()
            .split("\n")
            .filter((l) => /slow|fail/i.test(l))
            .slice(-15)
            .join("\n")}`,
        );
    await c.stop();
  }
}

const TOOLS = "127.0.0.1:5000/edgeplane/tools:1";
const BUSYBOX = "127.0.0.1:5000/edgeplane/busybox:1";

/** Requests pod -> ClusterIP and DNS lookups inside a pod, beside two processes on the machine. */
async function podTraffic(c: Cluster, metrics: Record<string, number>, rows: Row[]): Promise<void> {
  const node = c.nodes[0]!.name;
  const sleeper = ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"];
  const www =
    "mkdir -p /www && echo hello > /www/index.html && dd if=/dev/zero of=/www/big bs=1M count=20 2>/dev/null";
  await c.k("/api/v1/namespaces/bench/pods", "POST", {
    metadata: { name: "web", labels: { app: "web" } },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 0,
      containers: [
        {
          name: "c",
          image: BUSYBOX,
          command: ["sh", "-c", `${www} && exec httpd -f -p 8080 -h /www`],
          readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
        },
      ],
    },
  });
  await c.k("/api/v1/namespaces/bench/pods", "POST", {
    metadata: { name: "client" },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 0,
      containers: [{ name: "c", image: TOOLS, command: sleeper }],
    },
  });
  const svc = await c.k("/api/v1/namespaces/bench/services", "POST", {
    metadata: { name: "web" },
    spec: { selector: { app: "web" }, ports: [{ port: 80, targetPort: 8080, protocol: "TCP" }] },
  });
  const ip = svc.json.spec.clusterIP;
  for (let i = 0; ; i++) {
    const pods = (await c.k("/api/v1/namespaces/bench/pods")).json.items;
    const ready = pods.filter((p: any) =>
      p.status?.conditions?.some((x: any) => x.type === "Ready" && x.status === "True"),
    );
    if (ready.length === 2) break;
    if (i > 240) throw new Error("bench pods not ready");
    await new Promise((r) => setTimeout(r, 250));
  }
  const kube = (args: string[]) =>
    execFileSync("kubectl", ["--kubeconfig", c.server.kubeconfigPath, "-n", "bench", ...args], {
      encoding: "utf8",
      maxBuffer: 16 << 20,
    });
  const N = 200;
  const loop = (url: string, fmt: string) =>
    `for i in $(seq ${N}); do curl -s -o /dev/null -w '${fmt}\n' ${url}; done`;
  // wait for the Service to answer, then measure
  for (let i = 0; i < 100; i++) {
    try {
      if (kube(["exec", "client", "--", "curl", "-s", "-m", "2", `http://${ip}/`]).includes("hello")) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 200));
  }
  const parse = (out: string) =>
    out
      .trim()
      .split("\n")
      .map((l) => l.split(" ").map((x) => Number(x) * 1000));
  const inPod = parse(kube(["exec", "client", "--", "sh", "-c", loop(`http://${ip}/`, "%{time_total}")])).map(
    (r) => r[0]!,
  );
  const dns = parse(
    kube(["exec", "client", "--", "sh", "-c", loop("http://web/", "%{time_namelookup}")]),
  ).map((r) => r[0]!);
  const podBps = Number(
    kube([
      "exec",
      "client",
      "--",
      "curl",
      "-s",
      "-o",
      "/dev/null",
      "-w",
      "%{speed_download}",
      `http://${ip}/big`,
    ]),
  );
  // the floor: the same client and server as two processes on this machine
  const dir = mkdtempSync(join(tmpdir(), "edgeplane-bench-www-"));
  execFileSync("sh", [
    "-c",
    `cd ${dir} && echo hello > index.html && dd if=/dev/zero of=big bs=1M count=20 2>/dev/null`,
  ]);
  const port = 20000 + (process.pid % 20000);
  const httpd = spawn("busybox", ["httpd", "-f", "-p", `127.0.0.1:${port}`, "-h", dir], { stdio: "ignore" });
  try {
    await new Promise((r) => setTimeout(r, 300));
    const host = parse(
      execFileSync("sh", ["-c", loop(`http://127.0.0.1:${port}/`, "%{time_total}")], { encoding: "utf8" }),
    ).map((r) => r[0]!);
    const hostBps = Number(
      execFileSync(
        "curl",
        ["-s", "-o", "/dev/null", "-w", "%{speed_download}", `http://127.0.0.1:${port}/big`],
        { encoding: "utf8" },
      ),
    );
    const p = (a: number[], q: number) => percentile(a, q);
    metrics.pod_to_clusterip_request_p50_ms = p(inPod, 50);
    metrics.pod_to_clusterip_request_p99_ms = p(inPod, 99);
    metrics.host_to_host_request_p50_ms = p(host, 50);
    metrics.pod_to_clusterip_vs_host_p50 = p(inPod, 50) / p(host, 50);
    metrics.pod_to_clusterip_mbps = (podBps * 8) / 1e6;
    metrics.host_to_host_mbps = (hostBps * 8) / 1e6;
    metrics.pod_to_clusterip_vs_host_throughput = podBps / hostBps;
    metrics.dns_lookup_in_pod_p50_ms = p(dns, 50);
    metrics.dns_lookup_in_pod_p99_ms = p(dns, 99);
    rows.push([
      `pod -> ClusterIP HTTP request (${N}, curl time_total)`,
      p(inPod, 50),
      p(inPod, 99),
      `x${(p(inPod, 50) / p(host, 50)).toFixed(2)} of floor`,
    ]);
    rows.push(["  floor: two processes on the machine (127.0.0.1)", p(host, 50), p(host, 99), ""]);
    rows.push([
      "pod -> ClusterIP 20 MB download, Mbit/s",
      (podBps * 8) / 1e6,
      "",
      `x${(podBps / hostBps).toFixed(2)} of floor`,
    ]);
    rows.push(["  floor: two processes on the machine, Mbit/s", (hostBps * 8) / 1e6, "", ""]);
    rows.push([
      `DNS lookup inside a pod ("web", curl time_namelookup, ${N})`,
      p(dns, 50),
      p(dns, 99),
      "target p99 <= 5 ms",
    ]);
  } finally {
    httpd.kill();
    rmSync(dir, { recursive: true, force: true });
    for (const name of ["web", "client"])
      await c.k(`/api/v1/namespaces/bench/pods/${name}?gracePeriodSeconds=0`, "DELETE");
    for (let i = 0; i < 120; i++) {
      if (!(await c.k("/api/v1/namespaces/bench/pods")).json.items.length) break;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

export function haveNft(): boolean {
  return existsSync("/usr/sbin/nft") || existsSync("/usr/bin/nft");
}
