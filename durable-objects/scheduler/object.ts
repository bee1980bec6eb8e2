// The scheduler's Durable Object: pod and node caches fed like the controllers' (pokes from
// the store shards, pulls of their change logs), scheduling cycles run as soon as a pod
// is pending, Bindings posted through the apiserver (pods/binding), events as upstream.
import { DurableObject } from "cloudflare:workers";
import { lookupGVR } from "../../api/registry";
import { TRACE_SPANS_HEADER } from "../../api/trace";
import type { KubeObject } from "../../api/types";
import type { Apiserver } from "../apiserver";
import { clusterNameOf, objectEnv } from "../clusters";
import { ApiClient, componentUserAgent, isNotFound, pathFor } from "../controllers/runtime/client";
import { Informers } from "../controllers/runtime/informers";
import { once } from "../controllers/runtime/once";
import { EventRecorder } from "../controllers/runtime/recorder";
import { stayResident } from "../controllers/runtime/resident";
import { resourcesOf } from "../controllers/runtime/subscriptions";
import { CLASSES, PVCS, PVS } from "../controllers/volume/persistentvolume-binder";
import type { Env } from "../env";
import { type SchedulingAction, SchedulingLoop } from "./loop";
import type { Pod } from "./podinfo";
import { recordsAttempt, schedulingSpan, TraceSink } from "./trace";
import { claimsBound, volumeLister, writeVolumeDecision } from "./volume-prebind";

const USER = { name: "system:kube-scheduler", uid: "", groups: ["system:masters", "system:authenticated"] };
const MAX_INFLIGHT = 64;
/** How long PreBind waits for a pod's claims to be bound (upstream's bindTimeoutSeconds is 600). */
const BIND_TIMEOUT_MS = 600_000;
const STORAGE = new Set([PVCS, PVS, CLASSES]);

export class SchedulerObject extends DurableObject<Env> {
  /** The Worker's entry (workers/index.ts) passes the apiserver the scheduler binds through. */
  constructor(
    ctx: DurableObjectState,
    env: Env,
    private readonly apiserver: Apiserver,
  ) {
    super(ctx, env);
    // the cluster it runs for, by its name (durable-objects/clusters.ts)
    this.env = objectEnv(ctx, env);
    // made here, after the line above: a field initializer would run before it, with the
    // Worker's (the root's) environment, and send another cluster's spans to the root
    this.traces = new TraceSink(this.env);
  }

  private informers?: Informers;
  private loop = new SchedulingLoop();
  private api?: ApiClient;
  private recorder?: EventRecorder;
  private running = false;
  private again = false;
  /** the pods' flow-trace spans of a pass (trace.ts), sent in one call */
  private readonly traces: TraceSink;

  private readonly start = once(() => this.init());

  private async init(): Promise<void> {
    this.loop = new SchedulingLoop();
    const informers = new Informers(this.env, resourcesOf("scheduler"));
    // its own writes (a claim's selected node, a volume's claimRef) are seen at once, as the controllers' are
    // upstream's scheduler client says kube-scheduler/<version> .../scheduler: its status
    // writes are recorded under the manager kube-scheduler
    const agent = componentUserAgent("kube-scheduler", "scheduler");
    this.api = new ApiClient(this.apiserver, this.env, USER, agent, (res, obj, deleted) => {
      if (STORAGE.has(res)) informers.observe(res, obj, deleted);
    });
    // events through the recorder: a pod retried every few seconds counts up one event
    this.recorder = new EventRecorder(this.api, "default-scheduler");
    informers.onChange((res, type, obj) => {
      const now = Date.now();
      if (res === "/nodes") this.loop.onNode(type, obj, now);
      else if (res === "/pods") this.loop.onPod(type, obj as Pod, now);
      else if (STORAGE.has(res)) this.loop.onStorage(now);
      this.kick();
    });
    this.loop.scheduler.snapshot.volumes = volumeLister(informers);
    await informers.startAll();
    this.informers = informers;
    console.log(`scheduler: caches filled (${informers.keys("/pods").length} pods)`);
    // and a pass every 30 s, as upstream's periodic look at pods left unschedulable
    // (the root's; another cluster's scheduler is let go when idle: docs/clusters.md, and
    // pods it left unschedulable are looked at again on its alarm)
    if (!clusterNameOf(this.env)) stayResident(() => this.kick());
  }

  /** `shard`: which of a spread resource's shards committed (store/shard-plan.ts) */
  async poke(res: string, _rv: number, shard?: number): Promise<void> {
    await this.start();
    // answered once the pull is done: a shard sends no further poke meanwhile (it keeps one
    // pending), so under a write load each pull takes a batch instead of one change per poke
    await this.informers!.pull(res, shard).catch((e) => console.error(`scheduler pull ${res} failed`, e));
  }

  async resync(): Promise<void> {
    await this.start();
    await Promise.all(this.informers!.resources.map((r) => this.informers!.pull(r)));
    this.kick();
  }

  override async alarm(): Promise<void> {
    await this.resync();
  }

  /**
   * Its cluster was deleted (workers/clusters/teardown.ts): storage and alarm gone, and the
   * object reset, so no timer of it runs on.
   */
  async destroy(): Promise<void> {
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.ctx.abort("cluster deleted");
  }

  /** componentstatuses' probe: "ok" once the caches are filled (upstream's /healthz body). */
  async healthz(): Promise<string> {
    await this.start();
    return "ok";
  }

  /** Runs scheduling cycles until nothing is ready; calls made meanwhile run one more pass. */
  private kick(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    queueMicrotask(() => void this.run());
  }

  private async run(): Promise<void> {
    try {
      do {
        this.again = false;
        for (;;) {
          const actions = this.loop.runCycles(Date.now(), { maxPods: MAX_INFLIGHT, budgetMs: 50 });
          if (actions.length === 0) break;
          await Promise.all(actions.map((a) => this.act(a)));
          await this.traces.flush();
        }
      } while (this.again);
      const wake = this.loop.nextWakeAt(Date.now());
      if (wake !== undefined) await this.ctx.storage.setAlarm(wake);
    } catch (e) {
      console.error("scheduling pass failed", e);
    } finally {
      this.running = false;
    }
  }

  private async act(a: SchedulingAction): Promise<void> {
    const api = this.api!;
    const pods = lookupGVR("", "v1", "pods")!;
    const ns = a.pod.metadata.namespace;
    if (a.kind === "bind") {
      // claims to bind or provision first: written, then waited for, off the scheduling pass
      if (a.volumes && (a.volumes.bind.length || a.volumes.provision.length)) {
        void this.bindAfterVolumes(a);
        return;
      }
      try {
        await this.postBinding(a);
        this.loop.bindingResult(a.key, true, Date.now());
        void this.record(a.pod, a.event);
      } catch (e) {
        this.loop.bindingResult(a.key, false, Date.now());
        if (!isNotFound(e)) console.warn(`binding ${a.key} failed: ${e instanceof Error ? e.message : e}`);
      }
      return;
    }
    if (recordsAttempt(a.trace.attempts)) this.traces.add(a.pod, [schedulingSpan(a.trace)]);
    for (const v of a.victims) {
      void api.remove(pods, v.pod.metadata.namespace, v.pod.metadata.name!).catch(() => {});
      void this.record(v.pod, v.event);
    }
    if (a.status) {
      await api
        .patch(pods, ns, a.pod.metadata.name!, { status: a.status }, "application/merge-patch+json", "status")
        .catch(() => {});
    }
    void this.record(a.pod, a.event);
  }

  /**
   * VolumeBinding's PreBind: each chosen volume gets its claimRef, each claim to provision the
   * selected node; once every claim of the pod is bound, the Binding is written. A failure (or
   * BIND_TIMEOUT_MS without binding) gives the pod back to the queue.
   */
  private async bindAfterVolumes(a: Extract<SchedulingAction, { kind: "bind" }>): Promise<void> {
    const api = this.api!;
    const d = a.volumes!;
    try {
      await writeVolumeDecision(api, d);
      const deadline = Date.now() + BIND_TIMEOUT_MS;
      const podKey = `${a.pod.metadata.namespace}/${a.pod.metadata.name}`;
      for (;;) {
        const now = this.informers!.get("/pods", podKey);
        if (!now || now.metadata.uid !== a.pod.metadata.uid || now.metadata.deletionTimestamp) {
          // nothing to bind any more: not retried
          this.loop.bindingResult(a.key, false, Date.now());
          this.loop.queue.delete(a.key);
          this.kick();
          return;
        }
        const why = claimsBound(this.informers!, d);
        if (why === true) break;
        if (why) throw new Error(why);
        if (Date.now() > deadline) throw new Error("timed out waiting for the condition");
        await new Promise((r) => setTimeout(r, 200));
      }
      await this.postBinding(a);
      this.loop.bindingResult(a.key, true, Date.now());
      void this.record(a.pod, a.event);
    } catch (e) {
      this.loop.bindingResult(a.key, false, Date.now());
      const message = `running PreBind plugin "VolumeBinding": binding volumes: ${e instanceof Error ? e.message : e}`;
      void this.record(a.pod, {
        type: "Warning",
        reason: "FailedScheduling",
        note: message,
      } as unknown as KubeObject);
    }
    this.kick();
  }

  /**
   * The Binding, with the decision's span (5.1) in TRACE_SPANS_HEADER: the apiserver keeps it
   * in the pod's update (workers/trace/status.ts), no trace call and commit of its own.
   */
  private postBinding(a: Extract<SchedulingAction, { kind: "bind" }>): Promise<unknown> {
    const pods = lookupGVR("", "v1", "pods")!;
    const headers = this.traces.enabled
      ? { [TRACE_SPANS_HEADER]: JSON.stringify([schedulingSpan(a.trace)]) }
      : undefined;
    return this.api!.request(
      "POST",
      pathFor(pods, a.pod.metadata.namespace, a.pod.metadata.name, "binding"),
      a.binding,
      "application/json",
      headers,
    );
  }

  /** An events.k8s.io-shaped event from the scheduling loop, recorded (and deduplicated) as core/v1. */
  private record(pod: KubeObject, ev: KubeObject): Promise<void> {
    const obj = { apiVersion: "v1", kind: "Pod", ...pod };
    return this.recorder!.event(obj, ev.type === "Warning" ? "Warning" : "Normal", ev.reason, ev.note ?? "");
  }
}
