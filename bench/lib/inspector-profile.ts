// A V8 CPU profile of the workerd isolate over its DevTools inspector (the Worker and every
// Durable Object alike, as they share one isolate locally), and its self time by function/file.
import WebSocket from "ws";

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface Inspector {
  start(): Promise<void>;
  stop(): Promise<CpuProfile>;
  close(): void;
}

/** Connects to the inspector at `port` (the edgeplane isolate's target) and enables the profiler. */
export async function openInspector(port: number, intervalUs = 100): Promise<Inspector> {
  const list = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as {
    webSocketDebuggerUrl: string;
    title?: string;
  }[];
  const target = list.find((t) => t.title?.includes("edgeplane")) ?? list[0];
  if (!target) throw new Error(`no inspector target on port ${port}`);
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  let id = 0;
  const pending = new Map<number, (v: unknown) => void>();
  ws.on("message", (m) => {
    const msg = JSON.parse(String(m));
    if (msg.id && pending.has(msg.id)) pending.get(msg.id)?.(msg.result);
  });
  await new Promise((r) => ws.once("open", r));
  const send = (method: string, params: object = {}) =>
    new Promise<unknown>((res) => {
      const n = ++id;
      pending.set(n, res);
      ws.send(JSON.stringify({ id: n, method, params }));
    });
  await send("Profiler.enable");
  await send("Profiler.setSamplingInterval", { interval: intervalUs });
  return {
    start: async () => {
      await send("Profiler.start");
    },
    stop: async () => ((await send("Profiler.stop")) as { profile: CpuProfile }).profile,
    close: () => ws.close(),
  };
}

/** Self time (µs) by function and by file; `busy` leaves out (idle), (program) stays in. */
export function selfTimes(p: CpuProfile) {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  p.samples.forEach((s, i) => {
    self.set(s, (self.get(s) ?? 0) + (p.timeDeltas[i] ?? 0));
  });
  const fn = new Map<string, number>();
  const file = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [nid, us] of self) {
    const n = byId.get(nid);
    if (!n) continue;
    total += us;
    const f = n.callFrame;
    if (f.functionName === "(idle)") idle += us;
    const where = f.url.replace(/^.*\//, "") || "(native)";
    const key = `${f.functionName || "(anonymous)"} ${where}:${f.lineNumber + 1}`;
    fn.set(key, (fn.get(key) ?? 0) + us);
    file.set(where, (file.get(where) ?? 0) + us);
  }
  return { total, busy: total - idle, fn, file };
}

/** Total time (self + callees, µs) by function name: which whole stages cost the most. */
export function totalTimes(p: CpuProfile): Map<string, number> {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  p.samples.forEach((s, i) => {
    self.set(s, (self.get(s) ?? 0) + (p.timeDeltas[i] ?? 0));
  });
  const out = new Map<string, number>();
  for (const [nid, us] of self) {
    const seen = new Set<string>();
    for (let cur: number | undefined = nid; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)?.callFrame;
      if (!f || f.functionName === "(idle)") break;
      const key = `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\//, "")}:${f.lineNumber + 1}`;
      if (seen.has(key)) continue; // recursion counts once
      seen.add(key);
      out.set(key, (out.get(key) ?? 0) + us);
    }
  }
  return out;
}

export const topLines = (m: Map<string, number>, total: number, n: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(
      ([k, us]) =>
        `${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`,
    )
    .join("\n");
