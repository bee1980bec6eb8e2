// Object counts of a shard in a cluster other than the root (docs/clusters.md): the shard
// keeps how many objects it holds (counted once, then kept by its commits), refuses a create
// past its cluster's object limit, and reports its count to its cluster's controller manager
// after commits that changed it (one report in flight, the newest count after it). The
// manager publishes the counts in the Cluster's status. Nothing here runs for the root
// cluster, nor without commits: an idle cluster reports nothing.
import { StatusError } from "../../api/errors";
import type { ResourceDef } from "../../api/resource";
import { clusterNameOf } from "../clusters";
import type { ControllerManager } from "../controllers/manager";
import type { Env } from "../env";
import type { ObjectLimit } from "./protocol";

/** How a resource is named in a Cluster's status.counts: "pods", "deployments.apps". */
export function countName(def: Pick<ResourceDef, "group" | "resource">): string {
  return def.group ? `${def.resource}.${def.group}` : def.resource;
}

/**
 * The 403 a create past a limit (`what`: "objects", "count/pods") gets, worded as upstream's
 * ResourceQuota admission words it.
 */
export function exceededLimit(
  def: ResourceDef,
  name: string,
  cluster: string,
  what: string,
  used: number,
  limited: number,
): StatusError {
  const resource = def.group ? `${def.resource}.${def.group}` : def.resource;
  return new StatusError(
    403,
    "Forbidden",
    `${resource} "${name}" is forbidden: exceeded quota: ${cluster}, requested: ${what}=1, used: ${what}=${used}, limited: ${what}=${limited}`,
    { name, group: def.group || undefined, kind: def.resource },
  );
}

export class ShardCount {
  /** objects stored and staged; undefined until first counted (or after a failed commit) */
  private n?: number;
  private reported?: number;
  private inflight = false;
  private readonly child: boolean;

  constructor(
    private readonly env: Env,
    /** counts the stored rows */
    private readonly countRows: () => number,
    /** writes what is staged */
    private readonly flush: () => void,
    /** a spread resource's shard number (shard-plan.ts): shards past the first report as "pods#2" */
    private readonly shardNo: () => number,
  ) {
    this.child = clusterNameOf(env) !== undefined;
  }

  get value(): number {
    if (this.n === undefined) {
      this.flush();
      this.n = this.countRows();
    }
    return this.n;
  }

  /** A change was staged. */
  staged(type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | string): void {
    if (this.n === undefined) return;
    if (type === "ADDED") this.n++;
    else if (type === "DELETED") this.n--;
  }

  /** A commit failed: nothing staged is stored, count again when asked. */
  forget(): void {
    this.n = undefined;
  }

  /**
   * Refuses a create when one of the cluster's limits is reached: its shard's resource's own
   * (our count alone, exact) or all objects' (others' published counts + ours).
   */
  check(def: ResourceDef, name: string, limit: ObjectLimit | undefined): void {
    if (!limit) return;
    // a resource over several shards: the others' part as last published, and ours as it is
    const own =
      limit.ownPublished === undefined
        ? this.value
        : Math.max(0, limit.ownPublished - (this.reported ?? 0)) + this.value;
    if (limit.resource && own >= limit.resource.limit)
      throw exceededLimit(
        def,
        name,
        limit.cluster,
        `count/${limit.resource.name}`,
        own,
        limit.resource.limit,
      );
    const used = limit.others + own;
    if (limit.objects !== undefined && used >= limit.objects)
      throw exceededLimit(def, name, limit.cluster, "objects", used, limit.objects);
  }

  /** After a commit of `def`'s shard: report the count when it changed. */
  committed(def: ResourceDef): void {
    if (!this.child) return;
    // called at the end of a commit: everything staged is stored
    if (this.n === undefined) this.n = this.countRows();
    const n = this.n;
    if (n === this.reported || this.inflight) return;
    this.inflight = true;
    const stub = this.env.CONTROLLERS.get(
      this.env.CONTROLLERS.idFromName(this.env.EDGEPLANE_CLUSTER),
    ) as unknown as DurableObjectStub<ControllerManager>;
    stub
      .reportCount(this.shardNo() ? `${countName(def)}#${this.shardNo()}` : countName(def), n)
      .then(() => (this.reported = n))
      .catch((e: unknown) => console.error("count report failed", e))
      .finally(() => {
        this.inflight = false;
        if (this.n !== undefined && this.n !== this.reported && this.reported === n) this.committed(def);
      });
  }
}
