// The object and node counts in a Cluster's status (docs/clusters.md): each store shard of a
// cluster other than the root reports its count after commits that changed it
// (store/counts.ts); the cluster's controller manager keeps the newest count of each resource
// (in its storage, so an eviction loses none) and writes them into the root's Cluster
// object, at most once per PUBLISH_MS. Nothing runs without commits, so an idle cluster
// publishes nothing and sets no alarm. After each publish it also notes the cluster's limit
// and counts in this isolate (clusters.ts), for the creates its controllers make.
import { clusters } from "../../api/strategies/clusters";
import type { KubeObject } from "../../api/types";
import { noteClusterUsage, objectLimitsOf } from "../clusters";
import type { Env } from "../env";
import { Store } from "../store/client";

const PUBLISH_MS = 500;
const KEY = "cluster-counts";

export interface ClusterCounts {
  /** all objects of the cluster */
  objects: number;
  nodes: number;
  /** per resource, as countName() names them ("pods", "deployments.apps") */
  counts: Record<string, number>;
}

export function summarize(counts: Record<string, number>): ClusterCounts {
  const sorted: Record<string, number> = {};
  let objects = 0;
  for (const k of Object.keys(counts).sort()) {
    if (!counts[k]) continue;
    // a resource spread over shards reports per shard ("pods", "pods#1", ...): one sum
    const name = k.includes("#") ? k.slice(0, k.indexOf("#")) : k;
    sorted[name] = (sorted[name] ?? 0) + counts[k];
    objects += counts[k];
  }
  return { objects, nodes: counts.nodes ?? 0, counts: sorted };
}

export class ClusterStatusPublisher {
  private counts?: Record<string, number>;
  private timer?: ReturnType<typeof setTimeout>;
  private publishing?: Promise<void>;

  constructor(
    private readonly storage: DurableObjectStorage,
    /** the root cluster's environment: the Cluster object is kept there */
    private readonly root: Env,
    /** this cluster's key "<root>@<name>@<uid>" */
    private readonly key: string,
  ) {}

  async report(resource: string, count: number): Promise<void> {
    this.counts ??= (await this.storage.get<Record<string, number>>(KEY)) ?? {};
    if (this.counts[resource] === count) return;
    this.counts[resource] = count;
    await this.storage.put(KEY, this.counts);
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.publishing = (this.publishing ?? Promise.resolve()).then(() =>
        this.publish().catch((e: unknown) => console.error("cluster status publish failed", e)),
      );
    }, PUBLISH_MS);
  }

  private async publish(): Promise<void> {
    const [, name, uid] = this.key.split("@");
    const store = new Store(this.root, clusters);
    for (let attempt = 0; attempt < 3; attempt++) {
      const obj = await store.find("", name);
      if (!obj || obj.metadata.uid !== uid || obj.metadata.deletionTimestamp) {
        // the cluster is gone (a report raced its teardown): keep nothing of it
        await this.storage.delete(KEY);
        return;
      }
      const sum = summarize(this.counts ?? {});
      noteClusterUsage(this.key, { name, ...objectLimitsOf(obj), counts: sum.counts });
      const status = (obj as { status?: Record<string, unknown> }).status ?? {};
      if (
        status.objects === sum.objects &&
        status.nodes === sum.nodes &&
        JSON.stringify(status.counts) === JSON.stringify(sum.counts)
      )
        return;
      const next = { ...obj, status: { ...status, ...sum } } as KubeObject;
      try {
        await store.update(next, { expectRV: obj.metadata.resourceVersion }, obj);
        return;
      } catch (e) {
        if ((e as { code?: number }).code !== 409) throw e;
      }
    }
  }
}
