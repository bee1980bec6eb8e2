// The pod side of every simulated node: one watch over all bound pods, and for those bound
// to our nodes a tiny per-pod state machine: starting -> running (-> done, when its
// containers finish: pod-finish.ts) -> terminating -> gone.

import { contains, type IPv4Net, intToIp, netSize } from "../../api/network";
import { TRACE_SPANS_HEADER } from "../../api/trace";
import { Informer } from "../lib/informer";
import { isPod, type Pod } from "../lib/kube-types";
import { type ApiClient, sleep, withRetry } from "./client";
import {
  finishedStatusPatch,
  type LifetimeDefaults,
  lifetimeOf,
  restartedStatusPatch,
  restartSpans,
  restarts,
  runningSince,
} from "./pod-finish";
import { looksStarted, runningStatusPatch } from "./pod-status";

export interface SimNodeRef {
  index: number;
  /** its InternalIP, once its pod CIDR is allocated */
  hostIP?: string;
  /** its allocated pod CIDR (pods wait for it, as on a real node) */
  cidr?: IPv4Net;
  /** Offsets into the CIDR in use (1..size-2). */
  used: Set<number>;
  /** A dead node (stopLeases) neither starts nor finishes pods. */
  alive: boolean;
  /** The Node's annotations as last seen: defaults for its pods' lifetimes (pod-finish.ts). */
  annotations?: Record<string, string>;
}

interface PodState {
  uid: string;
  node: string;
  namespace: string;
  name: string;
  /** done: its containers finished and the pod is Succeeded or Failed, until it is deleted */
  phase: "starting" | "running" | "done" | "terminating";
  timer?: NodeJS.Timeout;
  ipOctet?: number;
  /** The latest object seen. */
  pod: Pod;
}

export interface PodStats {
  started: number;
  deleted: number;
  failures: number;
  /** Pods whose containers finished (Succeeded or Failed). */
  finished: number;
  /** Container restarts after a run ended. */
  restarts: number;
}

/** The shortest wait before containers that ended run again (the kubelet backs off 10 s and up). */
const MIN_RESTART_MS = 1000;

const MAX_PODS_PER_CIDR = 254;

export class PodSimulator {
  readonly stats: PodStats = { started: 0, deleted: 0, failures: 0, finished: 0, restarts: 0 };
  private readonly pods = new Map<string, PodState>();
  /** Latest pods seen on dead nodes, by uid: worked on if the node comes back. */
  private readonly parked = new Map<string, Pod>();
  private readonly informer: Informer;
  private stopped = false;

  constructor(
    private readonly client: ApiClient,
    private readonly nodes: Map<string, SimNodeRef>,
    private readonly startDelayMs: number,
    private readonly log: (msg: string) => void,
    private readonly lifetimes: LifetimeDefaults = {},
  ) {
    this.informer = new Informer(
      client,
      "/api/v1/pods",
      { fieldSelector: "spec.nodeName!=" },
      {
        onList: (items) => this.resync(items),
        onEvent: (type, pod) => {
          if (!isPod(pod)) return;
          if (type === "DELETED") this.forget(pod.metadata.uid);
          else this.observe(pod);
        },
      },
      log,
    );
  }

  start(): Promise<void> {
    this.informer.start();
    return this.informer.synced;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const p of this.pods.values()) clearTimeout(p.timer);
    await this.informer.stop();
  }

  /** The pods running on a node (its metrics report's pods: simulated/metrics.ts). */
  runningPods(node: string): Pod[] {
    const out: Pod[] = [];
    for (const p of this.pods.values()) if (p.node === node && p.phase === "running") out.push(p.pod);
    return out;
  }

  /** Pods this simulator currently tracks, by node. */
  count(node?: string): number {
    let n = 0;
    for (const p of this.pods.values()) if (!node || p.node === node) n++;
    return n;
  }

  private resync(items: unknown[]): void {
    const seen = new Set<string>();
    for (const pod of items) {
      if (!isPod(pod)) continue;
      seen.add(pod.metadata.uid);
      this.observe(pod);
    }
    for (const uid of [...this.pods.keys()]) if (!seen.has(uid)) this.forget(uid);
    for (const uid of [...this.parked.keys()]) if (!seen.has(uid)) this.parked.delete(uid);
  }

  /** A node came back to life: act on what happened to its pods meanwhile. */
  revive(node: string): void {
    for (const [uid, pod] of [...this.parked]) {
      if (pod.spec?.nodeName !== node) continue;
      this.parked.delete(uid);
      this.observe(pod);
    }
  }

  private observe(pod: Pod): void {
    const uid = pod.metadata.uid;
    const nodeName = pod.spec?.nodeName;
    if (!uid || !nodeName || this.stopped) return;
    const node = this.nodes.get(nodeName);
    if (!node) return;
    // a dead node, or one without its pod CIDR yet, starts nothing (it finishes deletions,
    // which need no address)
    if (!node.alive || (!node.cidr && !pod.metadata.deletionTimestamp && !this.pods.has(uid))) {
      this.parked.set(uid, pod);
      return;
    }
    let st = this.pods.get(uid);
    if (st) st.pod = pod;
    if (pod.metadata.deletionTimestamp) {
      if (!st) {
        st = this.track(pod, nodeName);
      }
      if (st.phase !== "terminating") this.terminate(st, pod);
      return;
    }
    if (st) return;
    const phase = pod.status?.phase;
    if (phase === "Succeeded" || phase === "Failed") return;
    st = this.track(pod, nodeName);
    if (looksStarted(pod)) {
      // started earlier (by a previous run): keep its address reserved
      st.phase = "running";
      const ip = pod.status.podIP;
      if (node.cidr && ip !== node.hostIP && contains(node.cidr, ip)) {
        st.ipOctet = ((ip.split(".").reduce((n, o) => n * 256 + Number(o), 0) >>> 0) - node.cidr.base) >>> 0;
        node.used.add(st.ipOctet);
      }
      this.scheduleEnd(st, node, runningSince(pod));
      return;
    }
    st.ipOctet = pod.spec?.hostNetwork ? undefined : allocate(node);
    if (!pod.spec?.hostNetwork && st.ipOctet === undefined) {
      // every address of the node's CIDR is taken: it waits, as a real pod's sandbox would
      this.pods.delete(uid);
      this.parked.set(uid, pod);
      return;
    }
    const s = st;
    s.timer = setTimeout(() => void this.run(s, pod, node), this.startDelayMs);
  }

  private track(pod: Pod, node: string): PodState {
    const st: PodState = {
      uid: pod.metadata.uid,
      node,
      namespace: pod.metadata.namespace,
      name: pod.metadata.name,
      phase: "starting",
      pod,
    };
    this.pods.set(st.uid, st);
    return st;
  }

  private async run(st: PodState, pod: Pod, node: SimNodeRef): Promise<void> {
    st.timer = undefined;
    if (this.stopped || st.phase !== "starting" || this.pods.get(st.uid) !== st) return;
    if (this.parkIfDead(st)) return;
    const hostIP = node.hostIP ?? "";
    const podIP = st.ipOctet === undefined || !node.cidr ? hostIP : intToIp(node.cidr.base + st.ipOctet);
    const patch = runningStatusPatch(st.pod ?? pod, { hostIP, podIP });
    patch.metadata = { uid: st.uid };
    const path = `/api/v1/namespaces/${st.namespace}/pods/${st.name}/status`;
    try {
      const r = await withRetry(
        () => this.client.request("PATCH", path, patch, "application/merge-patch+json"),
        {
          stopped: () => this.stopped || st.phase !== "starting",
        },
      );
      if (r.status === 200) {
        if (st.phase === "starting") {
          st.phase = "running";
          if (isPod(r.json)) st.pod = r.json;
          this.scheduleEnd(st, node, Date.now());
        }
        this.stats.started++;
        return;
      }
      if (r.status === 404 || r.status === 409) return; // gone, or a new pod with that name
      this.stats.failures++;
      this.log(`pod ${st.namespace}/${st.name}: status ${r.status} ${r.json?.message ?? ""}`);
    } catch (e) {
      this.stats.failures++;
      if (!this.stopped) this.log(`pod ${st.namespace}/${st.name}: ${(e as Error).message}`);
    }
    // try again a little later, unless it was deleted meanwhile
    if (this.pods.get(st.uid) === st && st.phase === "starting" && !this.stopped)
      st.timer = setTimeout(() => void this.run(st, pod, node), 5000);
  }

  /** Sets the timer for the end of the containers' run (started at `since`), if they end. */
  private scheduleEnd(st: PodState, node: SimNodeRef, since = Date.now(), minMs = 0): void {
    const life = lifetimeOf(st.pod, node.annotations, this.lifetimes);
    if (!life) return;
    const wait = Math.max(minMs, since + life.runMs - Date.now());
    clearTimeout(st.timer);
    st.timer = setTimeout(() => void this.end(st, node), wait);
  }

  /** The containers' run ended: the pod finishes, or they start again, as its restart policy says. */
  private async end(st: PodState, node: SimNodeRef): Promise<void> {
    st.timer = undefined;
    if (this.stopped || st.phase !== "running" || this.pods.get(st.uid) !== st) return;
    if (this.parkIfDead(st)) return;
    // asked again: the pod (or its node) may have been annotated since it started
    const life = lifetimeOf(st.pod, node.annotations, this.lifetimes);
    if (!life) return;
    const again = restarts(st.pod, life.exitCode);
    const patch: { status: object; metadata?: { uid: string } } = again
      ? restartedStatusPatch(st.pod, life.exitCode)
      : finishedStatusPatch(st.pod, life.exitCode);
    patch.metadata = { uid: st.uid };
    // a restart's spans go with its status write, as a node agent's do (api/trace.ts)
    const spans = again ? restartSpans(st.pod, life.exitCode) : [];
    const headers = spans.length ? { [TRACE_SPANS_HEADER]: JSON.stringify(spans) } : undefined;
    const path = `/api/v1/namespaces/${st.namespace}/pods/${st.name}/status`;
    try {
      const r = await withRetry(
        () => this.client.request("PATCH", path, patch, "application/merge-patch+json", "normal", headers),
        { stopped: () => this.stopped || st.phase !== "running" },
      );
      if (r.status === 200) {
        if (st.phase !== "running") return; // deleted meanwhile
        if (isPod(r.json)) st.pod = r.json;
        if (again) {
          this.stats.restarts++;
          this.scheduleEnd(st, node, Date.now(), MIN_RESTART_MS);
        } else {
          this.stats.finished++;
          st.phase = "done";
          // the sandbox is gone: its address is free again
          if (st.ipOctet !== undefined) node.used.delete(st.ipOctet);
          st.ipOctet = undefined;
        }
        return;
      }
      if (r.status === 404 || r.status === 409) return;
      this.stats.failures++;
      this.log(`pod ${st.namespace}/${st.name}: status ${r.status} ${r.json?.message ?? ""}`);
    } catch (e) {
      this.stats.failures++;
      if (!this.stopped) this.log(`pod ${st.namespace}/${st.name}: ${(e as Error).message}`);
    }
    if (this.pods.get(st.uid) === st && st.phase === "running" && !this.stopped)
      st.timer = setTimeout(() => void this.end(st, node), 5000);
  }

  private terminate(st: PodState, pod: Pod): void {
    st.phase = "terminating";
    clearTimeout(st.timer);
    const grace = Number(
      pod.metadata.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30,
    );
    const waitMs = Math.max(0, Math.min(Number.isFinite(grace) ? grace : 30, 1)) * 1000;
    st.timer = setTimeout(() => void this.finish(st), waitMs);
  }

  private async finish(st: PodState): Promise<void> {
    st.timer = undefined;
    if (this.parkIfDead(st)) return;
    const path = `/api/v1/namespaces/${st.namespace}/pods/${st.name}`;
    const body = {
      apiVersion: "v1",
      kind: "DeleteOptions",
      gracePeriodSeconds: 0,
      preconditions: { uid: st.uid },
    };
    for (let attempt = 0; !this.stopped && this.pods.get(st.uid) === st; attempt++) {
      try {
        const r = await withRetry(() => this.client.request("DELETE", path, body), {
          stopped: () => this.stopped,
        });
        if (r.status === 200 || r.status === 202 || r.status === 404 || r.status === 409) {
          if (r.status < 300) this.stats.deleted++;
          // the DELETED event forgets it; a 404/409 means it is already gone
          if (r.status >= 400) this.forget(st.uid);
          return;
        }
        this.log(`pod ${st.namespace}/${st.name}: delete ${r.status} ${r.json?.message ?? ""}`);
      } catch (e) {
        if (!this.stopped) this.log(`pod ${st.namespace}/${st.name}: delete: ${(e as Error).message}`);
      }
      this.stats.failures++;
      await sleep(Math.min(500 * 2 ** attempt, 10_000));
    }
  }

  /** The node died while this pod waited on a timer: leave the pod for its revival. */
  private parkIfDead(st: PodState): boolean {
    if (this.nodes.get(st.node)?.alive !== false) return false;
    this.forget(st.uid);
    this.parked.set(st.uid, st.pod);
    return true;
  }

  private forget(uid: string | undefined): void {
    if (!uid) return;
    this.parked.delete(uid);
    const st = this.pods.get(uid);
    if (!st) return;
    clearTimeout(st.timer);
    this.pods.delete(uid);
    if (st.ipOctet !== undefined) {
      const node = this.nodes.get(st.node);
      node?.used.delete(st.ipOctet);
      // a pod waiting for an address may have one now
      if (node && [...this.parked.values()].some((p) => p.spec?.nodeName === st.node)) this.revive(st.node);
    }
  }
}

function allocate(node: SimNodeRef): number | undefined {
  const last = node.cidr ? netSize(node.cidr) - 2 : 0;
  for (let i = 1; i <= last; i++) {
    if (!node.used.has(i)) {
      node.used.add(i);
      return i;
    }
  }
  return undefined; // full
}
