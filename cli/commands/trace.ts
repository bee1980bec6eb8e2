// `edgeplane trace pod/<name> [-n ns] [-o json] [--kubeconfig f] [--context c]`: a pod's flow
// trace (docs/trace.md) as a terminal waterfall, one line per FLOW.md stage, a bar placed and
// scaled by its time, the slowest stage marked, a failed or waiting one with its reason.

import type { TraceStage } from "../../api/trace";
import { get, kubeconfigPath, loadConnection } from "../lib/kubeconfig";
import type { Command } from "../main";

const USAGE =
  "usage: edgeplane trace pod/<name> [-n namespace] [-o json] [--kubeconfig file] [--context name]";
const BAR_WIDTH = 40;

type Stage = TraceStage;

interface Trace {
  pod: { name: string; namespace: string; uid: string; phase: string; nodeName?: string };
  stages: Stage[];
}

interface Args {
  target?: string;
  namespace?: string;
  output?: string;
  kubeconfig?: string;
  context?: string;
}

function parseArgs(args: string[]): Args {
  const out: Args = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const value = (name: string) => {
      const eq = a.indexOf("=");
      if (eq > 0) return a.slice(eq + 1);
      const v = args[++i];
      if (v === undefined) throw new Error(`${name} needs a value\n${USAGE}`);
      return v;
    };
    if (a === "-n" || a === "--namespace" || a.startsWith("--namespace="))
      out.namespace = value("--namespace");
    else if (a === "-o" || a === "--output" || a.startsWith("--output=")) out.output = value("--output");
    else if (a === "--kubeconfig" || a.startsWith("--kubeconfig=")) out.kubeconfig = value("--kubeconfig");
    else if (a === "--context" || a.startsWith("--context=")) out.context = value("--context");
    else if (a.startsWith("-")) throw new Error(`unknown flag ${a}\n${USAGE}`);
    else if (out.target) throw new Error(`one pod at a time\n${USAGE}`);
    else out.target = a;
  }
  return out;
}

function formatMs(ms: number): string {
  if (ms < 1) return `${ms.toFixed(2)}ms`;
  if (ms < 1000) return `${ms.toFixed(ms < 10 ? 1 : 0)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)}s`;
  return `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`;
}

/** The waterfall's text. `color` adds ANSI colours (a terminal without NO_COLOR). */
export function renderWaterfall(t: Trace, color = false): string {
  const paint = (code: string, s: string) => (color ? `\x1b[${code}m${s}\x1b[0m` : s);
  const times = t.stages.map((s) => ({
    s,
    start: Date.parse(s.start),
    end: s.end ? Date.parse(s.end) : Number.NaN,
  }));
  const t0 = Math.min(...times.map((x) => x.start));
  const ends = times.map((x) => (Number.isNaN(x.end) ? x.start : x.end));
  const t1 = Math.max(...ends, t0 + 1);
  const span = t1 - t0;
  // a restart's span holds its back-off: the slowest stage is one of the pod's way to running
  const isRestart = (s: Stage) => s.step === "9.3" && typeof s.detail?.restart === "number";
  let slowest: Stage | undefined;
  for (const s of t.stages)
    if (!isRestart(s) && (s.durationMs ?? 0) > (slowest?.durationMs ?? -1)) slowest = s;
  const labels = t.stages.map((s) => `${s.step} ${s.name}`);
  const width = Math.min(44, Math.max(...labels.map((l) => l.length), 10));
  const comp = Math.min(18, Math.max(...t.stages.map((s) => s.component.length), 9));
  const lines: string[] = [];
  const p = t.pod;
  lines.push(
    `pod ${p.namespace}/${p.name}  uid ${p.uid}  phase ${p.phase}${p.nodeName ? `  node ${p.nodeName}` : ""}  total ${formatMs(span)}`,
  );
  lines.push(
    `${"stage".padEnd(width)}  ${"component".padEnd(comp)}  ${"took".padStart(9)}  |${" ".repeat(BAR_WIDTH)}|`,
  );
  times.forEach(({ s, start, end }, i) => {
    const offset = Math.min(BAR_WIDTH - 1, Math.floor(((start - t0) / span) * BAR_WIDTH));
    const waiting = Number.isNaN(end);
    const len = waiting
      ? BAR_WIDTH - offset
      : Math.max(1, Math.min(BAR_WIDTH - offset, Math.round(((end - start) / span) * BAR_WIDTH)));
    const glyph = s.state === "failed" ? "✗" : s.state === "waiting" ? "░" : "█";
    const bar = " ".repeat(offset) + glyph.repeat(len) + " ".repeat(BAR_WIDTH - offset - len);
    const took = waiting ? "…" : formatMs(s.durationMs ?? end - start);
    const shade = s.state === "failed" ? "31" : s.state === "waiting" ? "33" : s === slowest ? "35" : "32";
    let line = `${labels[i].padEnd(width)}  ${s.component.padEnd(comp)}  ${took.padStart(9)}  |${paint(shade, bar)}|`;
    if (s === slowest && s.state === "done") line += "  ◀ slowest";
    if (s.state !== "done") line += `  ${s.state}${s.reason ? `: ${s.reason}` : ""}`;
    if (isRestart(s)) line += `  ${restartNote(s.detail)}`;
    lines.push(line);
  });
  if (slowest) lines.push(`slowest: ${slowest.step} ${slowest.name} (${formatMs(slowest.durationMs ?? 0)})`);
  const restarts = t.stages.filter(isRestart);
  if (restarts.length) {
    const dropped = restarts.reduce((n, s) => n + (Number(s.detail.earlierRestartsDropped) || 0), 0);
    lines.push(
      `restarts: ${restarts.length} in the trace${dropped ? `, ${dropped} earlier not kept (the trace keeps the newest)` : ""}`,
    );
  }
  const stuck = t.stages.filter((s) => s.state !== "done");
  for (const s of stuck)
    lines.push(`${s.state === "failed" ? "failed" : "waiting"}: ${s.step} ${s.name}: ${s.reason ?? ""}`);
  return `${lines.join("\n")}\n`;
}

/** What a restart's line adds: why the previous run ended and the back-off waited. */
function restartNote(d: Record<string, unknown>): string {
  const parts: string[] = [];
  if (typeof d.exitCode === "number") parts.push(`exit ${d.exitCode}${d.reason ? ` (${d.reason})` : ""}`);
  if (typeof d.cause === "string" && d.cause !== "exited") parts.push(d.cause);
  if (typeof d.backOffMs === "number")
    parts.push(d.backOffMs ? `back-off ${formatMs(d.backOffMs)}` : "no back-off");
  if (typeof d.earlierRestartsDropped === "number")
    parts.push(`${d.earlierRestartsDropped} earlier restarts not kept`);
  return parts.join(", ");
}

export const command: Command = {
  summary: "a pod's flow trace as a terminal waterfall (trace pod/<name> [-n ns] [-o json])",
  async run(argv: string[]): Promise<number> {
    let args: Args;
    try {
      args = parseArgs(argv);
    } catch (e) {
      console.error(`edgeplane trace: ${(e as Error).message}`);
      return 2;
    }
    const target = args.target ?? "";
    const name =
      /^(?:pods?|po)\/(.+)$/.exec(target)?.[1] ?? (target && !target.includes("/") ? target : undefined);
    if (!name) {
      console.error(`edgeplane trace: name a pod, e.g. pod/web-0\n${USAGE}`);
      return 2;
    }
    if (args.output && args.output !== "json" && args.output !== "wide") {
      console.error(`edgeplane trace: unknown output format "${args.output}" (json)`);
      return 2;
    }
    const conn = loadConnection(kubeconfigPath(args.kubeconfig), args.context);
    const namespace = args.namespace ?? "default";
    const r = await get(
      conn,
      `/apis/trace.edgeplane.dev/v1alpha1/namespaces/${encodeURIComponent(namespace)}/podtraces/${encodeURIComponent(name)}`,
    );
    if (r.status !== 200) {
      let message = r.text.trim();
      try {
        const status = JSON.parse(r.text);
        if (status?.kind === "Status") message = `${status.message} (${status.reason || r.status})`;
      } catch {
        // not a Status: its text as it came
      }
      console.error(`Error from server: ${message}`);
      return 1;
    }
    if (args.output === "json") {
      process.stdout.write(`${JSON.stringify(JSON.parse(r.text), null, 2)}\n`);
      return 0;
    }
    const color = !!process.stdout.isTTY && !process.env.NO_COLOR;
    process.stdout.write(renderWaterfall(JSON.parse(r.text) as Trace, color));
    return 0;
  },
};
