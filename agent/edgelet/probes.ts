// Startup, liveness and readiness probes: one timer loop per probe and
// running container, results kept per container id. A change of result asks
// for a pod sync (liveness failure -> restart; readiness -> status).
import type { CriClient } from "../cri/client";
import type { PodContainer, Probe } from "../lib/kube-types";
import { runHandler } from "./handlers";
import type { ProbeState } from "./pod-status";

export type ProbeKind = "startup" | "liveness" | "readiness";

interface Worker {
  kind: ProbeKind;
  timer?: NodeJS.Timeout;
  successes: number;
  failures: number;
  stopped: boolean;
}

interface Entry {
  uid: string;
  state: ProbeState & { liveFailed: boolean; startupFailed: boolean; message?: string };
  workers: Worker[];
}

export interface ProbeTarget {
  uid: string;
  containerId: string;
  container: PodContainer;
  podIP?: string;
  /** Seconds since the container started (for initialDelaySeconds after an edgelet restart). */
  runningForS: number;
  /** What the API last showed for this very container (kept across an edgelet restart). */
  previous?: { ready: boolean; started: boolean };
}

export class ProbeManager {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly cri: CriClient,
    private readonly onChange: (
      uid: string,
      containerId: string,
      kind: ProbeKind,
      ok: boolean,
      output: string,
    ) => void,
  ) {}

  /** Probe results of the containers of a pod, by container id. */
  states(): Map<string, ProbeState> {
    const m = new Map<string, ProbeState>();
    for (const [id, e] of this.entries) m.set(id, { started: e.state.started, ready: e.state.ready });
    return m;
  }

  get(containerId: string): Entry["state"] | undefined {
    return this.entries.get(containerId)?.state;
  }

  has(containerId: string): boolean {
    return this.entries.has(containerId);
  }

  /** Starts the probes of a running container (once per container id). */
  add(t: ProbeTarget): void {
    if (this.entries.has(t.containerId)) return;
    const c = t.container;
    const hasStartup = !!c.startupProbe;
    const entry: Entry = {
      uid: t.uid,
      state: {
        started: !hasStartup || !!t.previous?.started,
        ready: !c.readinessProbe || !!t.previous?.ready,
        liveFailed: false,
        startupFailed: false,
      },
      workers: [],
    };
    this.entries.set(t.containerId, entry);
    for (const kind of ["startup", "liveness", "readiness"] as ProbeKind[]) {
      const probe = c[`${kind}Probe` as const];
      if (!probe) continue;
      const w: Worker = { kind, successes: 0, failures: 0, stopped: false };
      entry.workers.push(w);
      const period = Math.max(1, probe.periodSeconds ?? 10) * 1000;
      const delay = Math.max(0, (probe.initialDelaySeconds ?? 0) - t.runningForS) * 1000;
      const tick = async () => {
        if (w.stopped) return;
        await this.runOnce(t, entry, w, probe);
        if (!w.stopped) w.timer = setTimeout(tick, period);
      };
      w.timer = setTimeout(tick, delay);
    }
  }

  private async runOnce(t: ProbeTarget, e: Entry, w: Worker, probe: Probe): Promise<void> {
    if (w.kind !== "startup" && !e.state.started) return; // gated by the startup probe
    if (w.kind === "startup" && e.state.started) return;
    const r = await runHandler(
      probe,
      { cri: this.cri, containerId: t.containerId, podIP: t.podIP, container: t.container },
      Math.max(1, probe.timeoutSeconds ?? 1),
    );
    if (w.stopped) return;
    const successThreshold = w.kind === "readiness" ? Math.max(1, probe.successThreshold ?? 1) : 1;
    const failureThreshold = Math.max(1, probe.failureThreshold ?? 3);
    if (r.ok) {
      w.successes++;
      w.failures = 0;
      if (w.successes < successThreshold) return;
    } else {
      w.failures++;
      w.successes = 0;
      if (w.failures < failureThreshold) return;
    }
    const s = e.state;
    let changed = false;
    if (w.kind === "startup") {
      if (r.ok && !s.started) changed = s.started = true;
      if (!r.ok && !s.startupFailed) changed = s.startupFailed = true;
    } else if (w.kind === "liveness") {
      if (!r.ok && !s.liveFailed) changed = s.liveFailed = true;
    } else if (s.ready !== r.ok) {
      s.ready = r.ok;
      changed = true;
    }
    if (!r.ok) s.message = r.output;
    if (changed || !r.ok) this.onChange(e.uid, t.containerId, w.kind, r.ok, r.output);
  }

  remove(containerId: string): void {
    const e = this.entries.get(containerId);
    if (!e) return;
    for (const w of e.workers) {
      w.stopped = true;
      clearTimeout(w.timer);
    }
    this.entries.delete(containerId);
  }

  /** Stops the probes of every container of a pod not in `keep`. */
  prune(uid: string, keep: Set<string>): void {
    for (const [id, e] of this.entries) if (e.uid === uid && !keep.has(id)) this.remove(id);
  }

  stopAll(): void {
    for (const id of [...this.entries.keys()]) this.remove(id);
  }
}
