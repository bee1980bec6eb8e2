// Which clusters exist: the root cluster's Cluster objects, read through its store shard and
// kept per isolate for a moment (a request names its cluster in every URL). A cluster being
// deleted is gone at once in the isolate deleting it, and within FRESH_MS everywhere else.
import { clusters } from "../../api/strategies/clusters";
import type { KubeObject } from "../../api/types";
import { childClusterKey, noteClusterUsage, objectLimitsOf } from "../../durable-objects/clusters";
import type { Env } from "../../durable-objects/env";
import { Store } from "../../durable-objects/store/client";

const FRESH_MS = 1000;

export interface ClusterRef {
  name: string;
  uid: string;
  /** its Durable Objects' key (durable-objects/clusters.ts) */
  key: string;
  /** spec.limits.requestsPerSecond, when set (limits.ts) */
  requestsPerSecond?: number;
}

const known = new Map<string, { ref: ClusterRef; at: number }>();
/** clusters this isolate is deleting, by name: answered as absent meanwhile */
const deleting = new Set<string>();

export function refOf(root: Env, obj: KubeObject): ClusterRef {
  const name = obj.metadata.name ?? "";
  const uid = obj.metadata.uid ?? "";
  const rate = (obj as { spec?: { limits?: { requestsPerSecond?: unknown } } }).spec?.limits
    ?.requestsPerSecond;
  return {
    name,
    uid,
    key: childClusterKey(root.EDGEPLANE_CLUSTER, name, uid),
    requestsPerSecond: typeof rate === "number" && rate > 0 ? rate : undefined,
  };
}

/** The cluster called `name`, or undefined when there is none (or it is being deleted). */
export async function findCluster(root: Env, name: string): Promise<ClusterRef | undefined> {
  if (deleting.has(name)) return undefined;
  const have = known.get(name);
  const now = Date.now();
  if (have && now - have.at < FRESH_MS) return have.ref;
  const obj = await new Store(root, clusters).find("", name);
  if (!obj || obj.metadata.deletionTimestamp || deleting.has(name)) {
    known.delete(name);
    return undefined;
  }
  const ref = refOf(root, obj);
  known.set(name, { ref, at: now });
  noteUsage(ref, obj);
  return ref;
}

/** The cluster's object limits and published counts, for its creates (limits.ts). */
function noteUsage(ref: ClusterRef, obj: KubeObject): void {
  const counts = (obj as { status?: { counts?: unknown } }).status?.counts;
  noteClusterUsage(ref.key, {
    name: ref.name,
    ...objectLimitsOf(obj),
    counts: counts && typeof counts === "object" ? (counts as Record<string, number>) : {},
  });
}

/** Marks `name` gone in this isolate while it is torn down; `done` ends that. */
export function markDeleting(name: string): () => void {
  deleting.add(name);
  known.delete(name);
  return () => {
    deleting.delete(name);
    known.delete(name);
  };
}
