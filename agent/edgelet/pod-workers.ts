// One serialized worker per pod uid, after the kubelet's pod workers: the
// latest desired pod is what the next step acts on, and each pod moves one
// way through sync -> terminating -> terminated. Terminating stops
// containers and sandbox; a pod deleted through the API is then finished with
// DELETE gracePeriodSeconds=0 and a uid precondition; a pod gone from the API
// is cleaned up entirely.

import { milliCPU, units } from "../../api/quantity";
import type { Pod, PodStatus } from "../lib/kube-types";
import { admitPod } from "./admission";
import { type Api, enc, errorText } from "./api";
import { type NodeContext, newPodState, type PodState } from "./context";
import { computePodStatus, isTerminalPhase } from "./pod-status";
import { cleanupPod, gracePeriod, killPod, syncPod } from "./pod-sync";
import type { StatusManager } from "./status-manager";

export type WorkerPhase = "sync" | "terminating" | "terminated";

interface Worker {
  uid: string;
  st: PodState;
  phase: WorkerPhase;
  /** Gone from the API (DELETED event or missing from a list). */
  removed: boolean;
  /** The final DELETE has been sent. */
  finished: boolean;
  busy: boolean;
  again: boolean;
  timer?: NodeJS.Timeout;
  deadlineTimer?: NodeJS.Timeout;
}

export interface PodStartRecord {
  uid: string;
  name: string;
  seenToRunningMs: number;
}

export class PodWorkers {
  private readonly workers = new Map<string, Worker>();
  readonly starts: PodStartRecord[] = [];
  private stopped = false;

  constructor(
    private readonly ctx: NodeContext,
    private readonly status: StatusManager,
    private readonly api: Api,
  ) {}

  get size(): number {
    return this.workers.size;
  }

  phaseOf(uid: string): WorkerPhase | undefined {
    return this.workers.get(uid)?.phase;
  }

  /** A new or changed pod from the pod source. */
  update(pod: Pod): void {
    if (this.stopped) return;
    const uid = pod.metadata.uid;
    this.status.observe(pod);
    let w = this.workers.get(uid);
    if (!w) {
      w = {
        uid,
        st: newPodState(pod),
        phase: "sync",
        removed: false,
        finished: false,
        busy: false,
        again: false,
      };
      this.workers.set(uid, w);
      w.st.trace?.mark("6.1", "picked up", { node: this.ctx.nodeName, via: "watch" });
      this.admit(w);
    } else w.st.pod = pod;
    this.kick(w);
  }

  /** The pod is gone from the API. */
  remove(pod: Pod): void {
    const uid = pod.metadata.uid;
    let w = this.workers.get(uid);
    if (!w) {
      // not ours any more, but the runtime may still hold it (edgelet restarted)
      w = {
        uid,
        st: newPodState(pod),
        phase: "terminating",
        removed: true,
        finished: true,
        busy: false,
        again: false,
      };
      this.workers.set(uid, w);
    }
    w.removed = true;
    this.kick(w);
  }

  /** A sync requested by the relist, a probe, or a backoff timer. */
  sync(uid: string, afterMs = 0): void {
    const w = this.workers.get(uid);
    if (!w) return;
    if (afterMs > 0) {
      clearTimeout(w.timer);
      w.timer = setTimeout(() => this.kick(w), afterMs);
      return;
    }
    this.kick(w);
  }

  /** Removes runtime leftovers of a pod uid no worker knows (orphans found at housekeeping). */
  orphan(uid: string): void {
    if (this.workers.has(uid)) return;
    const st = newPodState({ metadata: { uid, name: "", namespace: "" }, spec: { containers: [] } });
    const w: Worker = {
      uid,
      st,
      phase: "terminating",
      removed: true,
      finished: true,
      busy: false,
      again: false,
    };
    this.workers.set(uid, w);
    this.kick(w);
  }

  private activePods(except: string): Pod[] {
    const out: Pod[] = [];
    for (const w of this.workers.values()) {
      if (w.uid === except || w.phase !== "sync" || w.st.rejected) continue;
      out.push(w.st.pod);
    }
    return out;
  }

  private admit(w: Worker): void {
    const pod = w.st.pod;
    if (pod.metadata.deletionTimestamp || isTerminalPhase(pod.status?.phase)) return;
    if (pod.status?.phase === "Running" || pod.status?.startTime) return; // admitted before (edgelet restart)
    const a = this.ctx.allocatable;
    const res = admitPod(
      pod,
      this.activePods(w.uid),
      { cpuMilli: milliCPU(a.cpu), memory: units(a.memory), pods: units(a.pods) },
      this.ctx.nodeName,
    );
    if (!res.admit) {
      w.st.rejected = { reason: res.reason ?? "Rejected", message: res.message ?? "" };
      this.ctx.events(pod, "Warning", res.reason ?? "Rejected", res.message ?? "");
      w.st.trace?.failed("6.3", "node admission", `${res.reason ?? "Rejected"}: ${res.message ?? ""}`);
    } else w.st.trace?.stage("6.3", "node admission", { admitted: true });
  }

  private kick(w: Worker): void {
    w.again = true;
    if (w.busy) return;
    w.busy = true;
    void this.run(w);
  }

  private async run(w: Worker): Promise<void> {
    while (w.again && !this.stopped) {
      w.again = false;
      try {
        await this.step(w);
      } catch (e) {
        this.ctx.log(
          `pod ${w.st.pod.metadata.namespace}/${w.st.pod.metadata.name}: ${(e as Error).stack ?? e}`,
        );
        clearTimeout(w.timer);
        w.timer = setTimeout(() => this.kick(w), 2000);
      }
    }
    w.busy = false;
  }

  private report(w: Worker, terminating = false): PodStatus {
    const st = w.st;
    const pod = { ...st.pod, status: this.status.known(w.uid) ?? st.pod.status };
    const rt = this.ctx.cache.get(w.uid);
    const status = computePodStatus({
      pod,
      runtime: rt,
      sandboxId: st.sandboxId,
      podIP: st.podIP,
      hostIP: this.ctx.hostIP,
      startTime: st.startTime,
      waiting: st.waiting,
      probes: this.ctx.probes.states(),
      rejected: st.rejected,
      terminating,
    });
    if (st.trace && !st.trace.finished) traceStatus(st, status);
    if (!w.removed) this.status.set(st.pod, status, st.trace?.take());
    if (status.phase === "Running" && !st.runningAt) {
      st.runningAt = Date.now();
      this.starts.push({
        uid: w.uid,
        name: `${st.pod.metadata.namespace}/${st.pod.metadata.name}`,
        seenToRunningMs: st.runningAt - st.seenAt,
      });
      this.ctx.log(
        `pod ${st.pod.metadata.namespace}/${st.pod.metadata.name} Running ${st.runningAt - st.seenAt} ms after edgelet saw it: ${st.timeline.map(([s, t]) => `${s}@${t}`).join(" ")}`,
      );
      if (this.starts.length > 1000) this.starts.shift();
    }
    return status;
  }

  /** activeDeadlineSeconds: past it the pod fails with DeadlineExceeded; before it, a sync is set for it. */
  private checkDeadline(w: Worker): void {
    const st = w.st;
    const deadline = st.pod.spec?.activeDeadlineSeconds;
    const start = st.startTime ?? st.pod.status?.startTime;
    if (!deadline || !start || st.rejected) return;
    const left = Date.parse(start) + deadline * 1000 - Date.now();
    if (left <= 0) {
      st.rejected = {
        reason: "DeadlineExceeded",
        message: "Pod was active on the node longer than the specified deadline",
      };
      this.ctx.events(st.pod, "Normal", "DeadlineExceeded", st.rejected.message);
    } else if (!w.deadlineTimer)
      w.deadlineTimer = setTimeout(() => {
        w.deadlineTimer = undefined;
        this.kick(w);
      }, left + 10);
  }

  private async step(w: Worker): Promise<void> {
    const st = w.st;
    const pod = st.pod;
    if (w.phase === "sync") {
      this.checkDeadline(w);
      if (w.removed || pod.metadata.deletionTimestamp) w.phase = "terminating";
      else if (st.rejected) {
        this.report(w);
        w.phase = "terminating";
      } else {
        const res = await syncPod(this.ctx, st);
        const status = this.report(w);
        if (isTerminalPhase(status.phase)) w.phase = "terminating";
        else {
          if (res.requeueMs !== undefined) this.sync(w.uid, Math.max(1, res.requeueMs));
          return;
        }
      }
    }
    if (w.phase === "terminating") {
      const grace = w.removed ? Math.min(gracePeriod(pod), 2) : gracePeriod(pod);
      if (this.ctx.cache.get(w.uid).sandboxes.length || this.ctx.cache.get(w.uid).containers.length) {
        await killPod(this.ctx, st, grace);
      }
      if (!w.removed) this.report(w, true);
      w.phase = "terminated";
    }
    // terminated
    if (w.removed) {
      await cleanupPod(this.ctx, w.uid, pod.metadata.name ? pod : undefined);
      clearTimeout(w.timer);
      clearTimeout(w.deadlineTimer);
      this.workers.delete(w.uid);
      this.status.forget(w.uid);
      return;
    }
    if (st.pod.metadata.deletionTimestamp && !w.finished) {
      await this.status.flush(w.uid);
      // StopPodSandbox happened in killPod; RemovePodSandbox before the API object goes
      await cleanupPod(this.ctx, w.uid, pod);
      const r = await this.api.request(
        "DELETE",
        `/api/v1/namespaces/${enc(pod.metadata.namespace)}/pods/${enc(pod.metadata.name)}`,
        {
          apiVersion: "v1",
          kind: "DeleteOptions",
          gracePeriodSeconds: 0,
          preconditions: { uid: w.uid },
        },
      );
      if (r.status === 200 || r.status === 202 || r.status === 404 || r.status === 409) {
        w.finished = true;
        if (r.status === 404) w.removed = true;
        if (w.removed) this.kick(w);
      } else throw new Error(`final delete: ${errorText(r)}`);
    }
  }

  /** Stops taking work; waits (up to timeoutMs) for steps in flight, so a teardown is not cut in half. */
  async stop(timeoutMs = 5000): Promise<void> {
    this.stopped = true;
    const until = Date.now() + timeoutMs;
    while ([...this.workers.values()].some((w) => w.busy) && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
    }
    for (const w of this.workers.values()) {
      clearTimeout(w.timer);
      clearTimeout(w.deadlineTimer);
    }
  }
}

/** From the status the worker reports: Ready ends the first start's trace (6.2, the status manager). */
function traceStatus(st: PodState, status: PodStatus): void {
  const ready = (status.conditions ?? []).find((c) => c.type === "Ready");
  if (ready?.status === "True") {
    const probed = (st.pod.spec?.containers ?? []).filter((c) => c.readinessProbe).map((c) => c.name);
    st.trace!.stage("6.2", "ready", { phase: status.phase, readinessProbes: probed, podIP: status.podIP });
    st.trace!.finished = true;
  } else if (status.phase === "Failed" || status.phase === "Succeeded") {
    st.trace!.failed(
      "6.2",
      "ready",
      `${status.phase}: ${status.reason ?? ""} ${status.message ?? ""}`.trim(),
    );
    st.trace!.finished = true;
  }
}
