// The controller manager: one Durable Object per cluster running every controller over
// shared informer caches. Store commits poke it (milliseconds); the cron trigger resyncs
// everything once a minute as the safety net; an eviction only costs a re-list.
import { DurableObject } from "cloudflare:workers";
import type { KubeObject } from "../../api/types";
import type { Apiserver } from "../apiserver";
import { clusterNameOf, objectEnv } from "../clusters";
import type { Env } from "../env";
import { httpThroughNode } from "../node-tunnel/http-request";
import { ClusterClientCA } from "./certificates/client-ca";
import { ClusterStatusPublisher } from "./cluster-status";
import { CUSTOM_OWNERS, customCrdName, garbageCollector } from "./gc/garbage-collector";
import { buildControllers } from "./index";
import { ApiClient, componentUserAgent } from "./runtime/client";
import type { Controller, ControllerContext } from "./runtime/controller";
import { Informers } from "./runtime/informers";
import { once } from "./runtime/once";
import { WorkQueue } from "./runtime/queue";
import { EventRecorder } from "./runtime/recorder";
import { stayResident } from "./runtime/resident";
import { CACHE_FILTERS, resourcesOf } from "./runtime/subscriptions";

/** the program name its requests' user agent begins with: the manager of its writes */
const PROGRAM = "kube-controller-manager";
const USER = {
  name: "system:kube-controller-manager",
  uid: "",
  groups: ["system:masters", "system:authenticated"],
};

export class ControllerManager extends DurableObject<Env> {
  /** The Worker's entry (workers/index.ts) passes the apiserver its controllers call. */
  constructor(
    ctx: DurableObjectState,
    env: Env,
    private readonly apiserver: Apiserver,
  ) {
    super(ctx, env);
    // the cluster it runs for, by its name (durable-objects/clusters.ts)
    this.env = objectEnv(ctx, env);
    const cluster = clusterNameOf(this.env);
    if (cluster) {
      this.statusPublisher = new ClusterStatusPublisher(ctx.storage, env, this.env.EDGEPLANE_CLUSTER);
      this.clientCA = new ClusterClientCA(ctx.storage, cluster);
    }
  }

  /** a cluster's own client CA, in a cluster other than the root (certificates/client-ca.ts) */
  private readonly clientCA?: ClusterClientCA;

  /**
   * The certificate (PEM) of its cluster's client CA, which the Worker checks the cluster's
   * client certificates against; made on first need. The root's is the deployment's.
   */
  async clientCACertificate(): Promise<string> {
    if (!this.clientCA) throw new Error("the root cluster's client CA is EDGEPLANE_ROOT_CA");
    return (await this.clientCA.get()).cert;
  }

  /**
   * A client certificate of its cluster for the PKCS#10 request `csrPem` (its subject as
   * requested), valid `seconds`: the cluster's admin certificate that `cluster create` asks
   * for through the root's clusters/<name>/certificate (workers/clusters/handlers.ts).
   */
  async issueClientCertificate(csrPem: string, seconds: number): Promise<string> {
    if (!this.clientCA) throw new Error("the root cluster's client CA is EDGEPLANE_ROOT_CA");
    return this.clientCA.issue(csrPem, seconds);
  }

  /** the object counts in its Cluster's status, in a cluster other than the root */
  private readonly statusPublisher?: ClusterStatusPublisher;

  /**
   * A store shard of its cluster holds `count` objects of `resource` now (store/counts.ts).
   * Published in the Cluster's status; the controllers are not started for it.
   */
  async reportCount(resource: string, count: number): Promise<void> {
    await this.statusPublisher?.report(resource, count);
  }

  private informers?: Informers;
  private contexts = new Map<string, ControllerContext>();
  private queues = new Map<string, WorkQueue>();

  private readonly start = once(() => this.init());

  private controllers: Controller[] = [];
  /** CRDs whose objects the collector looks at within a second (poke) */
  private readonly customPending = new Set<string>();

  private async init(): Promise<void> {
    const num = (v: string | undefined) => (v ? Number(v) : undefined);
    // another cluster's CSRs are signed with its own CA, never the root's (whose key it lacks)
    const own = this.clientCA ? await this.clientCA.get() : undefined;
    this.controllers = buildControllers({
      nodeMonitorGraceSeconds: num(this.env.EDGEPLANE_NODE_MONITOR_GRACE_SECONDS),
      defaultTolerationSeconds: num(this.env.EDGEPLANE_DEFAULT_TOLERATION_SECONDS),
      hpaSyncPeriodSeconds: num(this.env.EDGEPLANE_HPA_SYNC_PERIOD_SECONDS),
      hpaDownscaleStabilizationSeconds: num(this.env.EDGEPLANE_HPA_DOWNSCALE_STABILIZATION_SECONDS),
      rootCA: this.env.EDGEPLANE_ROOT_CA || undefined,
      certificateSigner: own
        ? {
            caCert: own.cert,
            caKey: own.key,
            signingSeconds: num(this.env.EDGEPLANE_CLUSTER_SIGNING_DURATION_SECONDS),
          }
        : this.env.EDGEPLANE_ROOT_CA && this.env.EDGEPLANE_CA_KEY
          ? {
              caCert: this.env.EDGEPLANE_ROOT_CA,
              caKey: this.env.EDGEPLANE_CA_KEY,
              signingSeconds: num(this.env.EDGEPLANE_CLUSTER_SIGNING_DURATION_SECONDS),
            }
          : undefined,
      clusterCIDR: this.env.EDGEPLANE_CLUSTER_CIDR,
      nodeCIDRMaskSize: this.env.EDGEPLANE_NODE_CIDR_MASK_SIZE,
      // the apiserver's own key (EDGEPLANE_SA_SIGNING_KEY or the one kept in kube-system)
      legacyToken: (sa, secretName) => this.apiserver.legacyToken(this.env, sa, secretName),
      nodeHttp: (node, req) => httpThroughNode(this.env, node, req),
    });
    const CONTROLLERS = this.controllers;
    const informers = new Informers(this.env, resourcesOf("controllers"), CACHE_FILTERS);
    const api = new ApiClient(
      this.apiserver,
      this.env,
      USER,
      componentUserAgent(PROGRAM, PROGRAM),
      (res, obj, deleted) => informers.observe(res, obj, deleted),
    );
    for (const c of CONTROLLERS) {
      // each controller's requests carry its name, as upstream's per-controller clients do
      const own = api.withUserAgent(componentUserAgent(PROGRAM, c.name));
      const queue = new WorkQueue(c.name, (key) => c.sync(key, ctx), c.workers ?? 4);
      const ctx: ControllerContext = {
        informers,
        api: own,
        recorder: new EventRecorder(own, c.name),
        enqueue: (key, afterMs) => (afterMs ? queue.addAfter(key, afterMs) : queue.add(key)),
        now: () => Date.now(),
      };
      this.contexts.set(c.name, ctx);
      this.queues.set(c.name, queue);
    }
    for (const c of CONTROLLERS) c.setup?.(this.contexts.get(c.name)!);
    informers.onChange((res, _type, obj, old) => this.dispatch(res, obj, old));
    await informers.startAll();
    this.informers = informers;
    console.log(`controllers: caches filled (${informers.keys("/pods").length} pods)`);
    // the root's caches stay in memory; another cluster's object is let go when idle (its
    // next poke re-lists: small clusters, cheap), so an idle cluster holds no memory
    if (!clusterNameOf(this.env)) stayResident();
    this.resyncAll();
  }

  private dispatch(res: string, obj: KubeObject, old: KubeObject | undefined): void {
    for (const c of this.controllers) {
      const fn = c.watches[res];
      if (!fn) continue;
      const ctx = this.contexts.get(c.name)!;
      for (const key of fn(obj, old, ctx)) this.queues.get(c.name)!.add(key);
    }
  }

  private resyncAll(): void {
    for (const c of this.controllers) {
      const ctx = this.contexts.get(c.name)!;
      for (const key of c.resync(ctx)) this.queues.get(c.name)!.add(key);
    }
  }

  /** A store shard committed a change of `res`: pull it (and everything before it). */
  /** `shard`: which of a spread resource's shards committed (store/shard-plan.ts) */
  async poke(res: string, _rv: number, shard?: number): Promise<void> {
    await this.start();
    if (res.includes("#")) {
      // a custom resource's objects changed: the collector looks for ones deleted in the
      // foreground or orphaning (once a second at most: the key waits in its queue)
      const crd = customCrdName(res);
      if (crd && !this.customPending.has(crd)) {
        this.customPending.add(crd);
        setTimeout(() => {
          this.customPending.delete(crd);
          this.queues.get(garbageCollector.name)?.add(`${CUSTOM_OWNERS}${crd}`);
        }, 1000);
      }
      return;
    }
    // answered once the pull is done: a shard sends no further poke meanwhile (it keeps one
    // pending), so under a write load each pull takes a batch instead of one change per poke
    await this.informers!.pull(res, shard).catch((e) => console.error(`pull ${res} failed`, e));
  }

  /** The cron trigger: catch up on every resource and look at every key again. */
  async resync(): Promise<void> {
    await this.start();
    await Promise.all(this.informers!.resources.map((r) => this.informers!.pull(r)));
    this.resyncAll();
    // The root cluster's safety net runs every minute. Another cluster's runs only while it
    // has something time passes for (nodes, CronJobs): an idle cluster sets no alarm at all
    // (docs/clusters.md); its next request or commit wakes it.
    if (!clusterNameOf(this.env) || this.timeMatters()) await this.ctx.storage.setAlarm(Date.now() + 60_000);
    else await this.ctx.storage.deleteAlarm();
  }

  private timeMatters(): boolean {
    const has = (res: string) =>
      this.informers!.resources.includes(res) && this.informers!.keys(res).length > 0;
    return has("/nodes") || has("batch/cronjobs");
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

  /** Test hook: resolves when every queue is empty. */
  async settled(): Promise<void> {
    await this.start();
    for (const q of this.queues.values()) await q.idle();
  }
}
