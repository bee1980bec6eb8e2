// MetricsObject: one Durable Object per cluster (named by the cluster) holding the latest
// resource-usage report of every node, in memory only, as metrics-server keeps its last
// scrape: nothing is written to storage, and a restart starts empty until the nodes report
// again (every 15 s by default). A node's samples are dropped when it has not reported for
// three of its periods, as metrics-server drops a node it can no longer scrape.
//
// A report may carry only pods bound to its node: a pod the store has bound to another node
// (or to none) refuses the whole report. Which pods a node has is learnt from the pods shard
// when a report names a pod not seen on that node before, and kept while the node reports it:
// a pod's uid never moves to another node, so what was learnt stays true.
import { DurableObject } from "cloudflare:workers";
import { lookupGVR } from "../../api/registry";
import type { KubeObject } from "../../api/types";
import type { MetricsReport, PodSample, Sample } from "../../api/wire/metrics";
import { objectEnv } from "../clusters";
import type { Env } from "../env";
import { Store } from "../store/client";

/** Periods a node may miss before its samples are dropped. */
const STALE_PERIODS = 3;
/** New pods in one report looked up one by one; more, and the node's pods are listed. */
const LOOKUPS_AT_MOST = 8;

interface NodeEntry {
  sample: Sample;
  receivedAt: number;
  intervalMs: number;
  /** the uids of the pods its last report carried */
  pods: string[];
}

/** What a report was answered with: accepted, or the pods that refused it. */
export type ReportResult = { ok: true; pods: number } | { ok: false; forbidden: string[] };

export class MetricsObject extends DurableObject<Env> {
  private readonly nodes = new Map<string, NodeEntry>();
  private readonly pods = new Map<string, PodSample>();
  /** pod uids the store showed bound to each node */
  private readonly bound = new Map<string, Set<string>>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.env = objectEnv(ctx, env);
  }

  /** Takes a node's report, replacing its last one (after checking its pods are its own). */
  async report(node: string, r: MetricsReport): Promise<ReportResult> {
    const pods = await this.ownPods(node, r.pods);
    if ("forbidden" in pods) return { ok: false, forbidden: pods.forbidden };
    const old = this.nodes.get(node);
    for (const uid of old?.pods ?? []) this.pods.delete(uid);
    for (const p of pods.kept) this.pods.set(p.uid, p);
    this.nodes.set(node, {
      sample: r.node,
      receivedAt: Date.now(),
      intervalMs: r.intervalSeconds * 1000,
      pods: pods.kept.map((p) => p.uid),
    });
    return { ok: true, pods: pods.kept.length };
  }

  /** The fresh samples of the named nodes (all nodes when names is undefined). */
  nodeSamples(names?: string[]): Record<string, Sample> {
    this.dropStale();
    const out: Record<string, Sample> = {};
    for (const name of names ?? this.nodes.keys()) {
      const e = this.nodes.get(name);
      if (e) out[name] = e.sample;
    }
    return out;
  }

  /** The fresh samples of the pods with these uids. */
  podSamples(uids: string[]): Record<string, PodSample> {
    this.dropStale();
    const out: Record<string, PodSample> = {};
    for (const uid of uids) {
      const p = this.pods.get(uid);
      if (p) out[uid] = p;
    }
    return out;
  }

  /** Its cluster was deleted: everything is forgotten. */
  async destroy(): Promise<void> {
    this.nodes.clear();
    this.pods.clear();
    this.bound.clear();
  }

  private dropStale(): void {
    const now = Date.now();
    for (const [name, e] of this.nodes) {
      if (now - e.receivedAt <= e.intervalMs * STALE_PERIODS) continue;
      for (const uid of e.pods) this.pods.delete(uid);
      this.nodes.delete(name);
      this.bound.delete(name);
    }
  }

  /**
   * The report's pods that are the node's, or the ones another node (or none) holds. A pod the
   * store no longer has (deleted since the node sampled it) is left out without refusing.
   * Pods not seen on the node before are looked up one by one (a few), or by listing the
   * node's pods (many: a node's first report).
   */
  private async ownPods(
    node: string,
    pods: PodSample[],
  ): Promise<{ kept: PodSample[] } | { forbidden: string[] }> {
    let known: Set<string> = this.bound.get(node) ?? new Set();
    this.bound.set(node, known);
    const unknown = pods.filter((p) => !known.has(p.uid));
    if (unknown.length > LOOKUPS_AT_MOST) {
      known = await this.podsBoundTo(node);
      this.bound.set(node, known);
    }
    const def = lookupGVR("", "v1", "pods")!;
    const forbidden: string[] = [];
    const gone = new Set<string>();
    for (const p of unknown) {
      if (known.has(p.uid)) continue;
      const stored = await new Store(this.env, def).find(p.namespace, p.name).catch(() => undefined);
      // another pod of that name, or none: the node's own, already deleted; nothing to keep
      if (!stored || stored.metadata.uid !== p.uid) gone.add(p.uid);
      else if ((stored.spec as { nodeName?: string } | undefined)?.nodeName === node) known.add(p.uid);
      else forbidden.push(`${p.namespace}/${p.name}`);
    }
    if (forbidden.length) return { forbidden };
    // forget pods the node no longer runs
    const reported = new Set(pods.map((p) => p.uid));
    for (const uid of known) if (!reported.has(uid)) known.delete(uid);
    return { kept: pods.filter((p) => !gone.has(p.uid)) };
  }

  private async podsBoundTo(node: string): Promise<Set<string>> {
    const def = lookupGVR("", "v1", "pods")!;
    const text = await new Store(this.env, def).listText({ fieldSelector: `spec.nodeName=${node}` });
    const items = (JSON.parse(text) as { items?: KubeObject[] }).items ?? [];
    return new Set(items.map((p) => p.metadata.uid ?? "").filter(Boolean));
  }
}
