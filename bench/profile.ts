// Where the Worker's CPU goes: runs a load against a fresh local control plane with the
// DevTools inspector on, records a V8 CPU profile of the workerd isolate (Worker and Durable
// Objects alike) and prints self time by function and by source file.
//
//   node --import tsx bench/profile.ts [create|get|status|watch|idle|list|lease] [seconds]
// PROFILE_CLIENTS (concurrent requests, default 10; 1 for watch and list), PROFILE_WATCHERS (1000),
// PROFILE_VARS (Worker variables, e.g. EDGEPLANE_TRACE=off; comma-separated NAME=value).
// status: merge patches of pods/status, as a kubelet writes them, over the warm-up's pods.
// idle: PROFILE_PODS pods (default 10000) are created first, then nothing is sent while the
// profile runs: what the control plane does on its own (cron, alarms, resyncs).
// list: PROFILE_PODS pods are created first, then the namespace's pods are listed whole, as JSON.
// lease: node leases renewed as the kubelet does (an update of the lease it holds, renewTime moved).
// Writes .edgeplane/bench/profile-<load>.cpuprofile (open it in Chrome DevTools).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { freePort, startDevServer } from "../local-engine/devserver";
import { keepAliveAgent, type LineStream, openLineStream, request, type Target } from "./lib/http";
import { type CpuProfile, selfTimes, topLines } from "./lib/inspector-profile";
import { podBody } from "./lib/pods";
import { REPO_ROOT } from "./lib/report";

/** Pods the warm-up creates first; a status load patches these. */
const WARM_PODS = 200;

function statusPatch(n: number): string {
  return JSON.stringify({
    status: {
      phase: "Running",
      podIP: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
      conditions: [{ type: "Ready", status: n % 2 ? "True" : "False", lastTransitionTime: null }],
    },
  });
}

function cdp(url: string) {
  const ws = new WebSocket(url);
  let id = 0;
  const pending = new Map<number, (v: unknown) => void>();
  ws.on("message", (m) => {
    const msg = JSON.parse(String(m));
    if (msg.id && pending.has(msg.id)) pending.get(msg.id)?.(msg.result);
  });
  const opened = new Promise((r) => ws.once("open", r));
  return {
    opened,
    send: (method: string, params: object = {}) =>
      new Promise<unknown>((res) => {
        const n = ++id;
        pending.set(n, res);
        ws.send(JSON.stringify({ id: n, method, params }));
      }),
    close: () => ws.close(),
  };
}

const load = process.argv[2] ?? "create";
if (!["create", "get", "status", "watch", "idle", "list", "lease"].includes(load))
  throw new Error(`unknown load ${load}`);
const seconds = Number(process.argv[3] ?? 10);
const dir = mkdtempSync(join(tmpdir(), "edgeplane-profile-"));
const inspectorPort = await freePort();
const vars = Object.fromEntries(
  (process.env.PROFILE_VARS ?? "")
    .split(",")
    .filter((v) => v.includes("="))
    .map((v) => [v.slice(0, v.indexOf("=")), v.slice(v.indexOf("=") + 1)]),
);
const s = await startDevServer({ stateDir: dir, quiet: true, inspectorPort, vars });
try {
  const list = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json()) as {
    webSocketDebuggerUrl: string;
    title?: string;
  }[];
  const target = list.find((t) => t.title?.includes("edgeplane")) ?? list[0];
  const c = cdp(target.webSocketDebuggerUrl);
  await c.opened;
  await c.send("Profiler.enable");
  await c.send("Profiler.setSamplingInterval", { interval: 100 });
  const t: Target = {
    host: "127.0.0.1",
    port: s.port, // the front door, as clients connect (its queue keeps workerd fair under load)
    headers: {
      authorization: `Bearer ${s.token}`,
      "content-type": "application/json",
      accept: "application/json",
    },
  };
  const clients = Number(process.env.PROFILE_CLIENTS ?? (load === "watch" || load === "list" ? 1 : 10));
  // the watch load: PROFILE_WATCHERS watches on the namespace, and one client creating pods
  const streams: LineStream[] = [];
  if (load === "watch") {
    const n = Number(process.env.PROFILE_WATCHERS ?? 1000);
    for (let k = 0; k < n; k++)
      streams.push(
        await openLineStream(t, "GET", "/api/v1/namespaces/default/pods?watch=1", undefined, () => {}),
      );
  }
  const agent = keepAliveAgent(clients);
  // the lease load: one lease per warm-up slot, each renewed from the copy its last answer gave
  const leases = new Map<number, string>();
  const leasePath = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
  const renew = async (k: number) => {
    const held = leases.get(k);
    const now = new Date().toISOString().replace("Z", "000Z");
    if (!held) {
      const body = {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: `node-${k}` },
        spec: { holderIdentity: `node-${k}`, leaseDurationSeconds: 40, renewTime: now },
      };
      const r = await request(t, agent, "POST", leasePath, JSON.stringify(body));
      leases.set(k, r.body);
      return;
    }
    const lease = JSON.parse(held);
    lease.spec.renewTime = now;
    const r = await request(t, agent, "PUT", `${leasePath}/node-${k}`, JSON.stringify(lease));
    if (r.status === 200) leases.set(k, r.body);
  };
  let i = 0;
  let ops = 0;
  const run = async (stopAt: number) => {
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (performance.now() < stopAt) {
          const n = i++;
          if (load === "list") await request(t, agent, "GET", "/api/v1/namespaces/default/pods");
          else if (load === "lease") await renew(n % WARM_PODS);
          else if (load === "get")
            await request(t, agent, "GET", `/api/v1/namespaces/default/pods/p-${n % WARM_PODS}`);
          else if (load === "status" && n >= WARM_PODS)
            // a kubelet-like status write: each one a change (the IP moves on every time)
            await request(
              t,
              agent,
              "PATCH",
              `/api/v1/namespaces/default/pods/p-${n % WARM_PODS}/status`,
              statusPatch(n),
              {
                "content-type": "application/merge-patch+json",
              },
            );
          else await request(t, agent, "POST", "/api/v1/namespaces/default/pods", podBody(`p-${n}`, n));
          ops++;
        }
      }),
    );
  };
  if (load === "idle" || load === "list") {
    const total = Number(process.env.PROFILE_PODS ?? 10000);
    const fill = keepAliveAgent(50);
    await Promise.all(
      Array.from({ length: 50 }, async (_, k) => {
        for (let n = k; n < total; n += 50)
          await request(t, fill, "POST", "/api/v1/namespaces/default/pods", podBody(`p-${n}`, n));
      }),
    );
    fill.destroy();
  }
  if (load !== "idle") await run(performance.now() + 2000); // warm up (and the pods a get or status load reads)
  ops = 0;
  await c.send("Profiler.start");
  const t0 = performance.now();
  if (load === "idle") await new Promise((r) => setTimeout(r, seconds * 1000));
  else await run(t0 + seconds * 1000);
  const ms = performance.now() - t0;
  const { profile } = (await c.send("Profiler.stop")) as { profile: CpuProfile };
  // the isolate's heap after the load: a full collection's pause grows with what is live
  const heap = (await c.send("Runtime.getHeapUsage")) as { usedSize: number; totalSize: number };
  console.log(
    `heap: ${(heap.usedSize / 2 ** 20).toFixed(1)} MiB used of ${(heap.totalSize / 2 ** 20).toFixed(1)} MiB`,
  );
  c.close();
  agent.destroy();
  for (const st of streams) st.close();
  const out = join(REPO_ROOT, ".edgeplane/bench");
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, `profile-${load}.cpuprofile`), JSON.stringify(profile));
  const st = selfTimes(profile);
  const idle = [...st.fn].filter(([k]) => k.startsWith("(idle)")).reduce((a, [, v]) => a + v, 0);
  console.log(
    `${load}: ${ops} ops in ${(ms / 1000).toFixed(1)} s = ${((ops * 1000) / ms).toFixed(0)}/s; isolate busy ${((st.total - idle) / 1000).toFixed(0)} ms in all, ${((st.total - idle) / 1000 / ops).toFixed(3)} ms per op`,
  );
  console.log("\nself time by file:\n" + topLines(st.file, st.total, 20));
  console.log(
    "\nself time by function:\n" + topLines(st.fn, st.total, Number(process.env.PROFILE_TOP ?? 45)),
  );
} finally {
  await s.stop();
  rmSync(dir, { recursive: true, force: true });
}
