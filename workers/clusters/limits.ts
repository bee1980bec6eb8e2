// A cluster's limits (docs/clusters.md). spec.limits.requestsPerSecond: a token bucket per
// cluster and isolate, one second of requests deep; past it a request gets upstream's 429
// TooManyRequests with Retry-After, as the apiserver's max-in-flight filter answers, before
// it reaches the cluster's objects. spec.limits.objects: what a create brings to its shard,
// which refuses it (403, as upstream's ResourceQuota admission) when its own count plus the
// other shards' published counts reach the limit (store/counts.ts). spec.limits'
// count/<resource>[.<group>]: the same for one resource's objects, which its own shard counts
// exactly.
import { StatusError } from "../../api/errors";
import { lookupKey } from "../../api/registry";
import type { ResourceDef } from "../../api/resource";
import { clusterNameOf, clusterUsage } from "../../durable-objects/clusters";
import type { Env } from "../../durable-objects/env";
import { resourcePlan } from "../../durable-objects/store/client";
import { countName } from "../../durable-objects/store/counts";
import type { ObjectLimit } from "../../durable-objects/store/protocol";

/** The object limits a create of `def` in `env`'s cluster is held to; undefined when it has none. */
export function objectLimit(env: Env, def: ResourceDef): ObjectLimit | undefined {
  if (!clusterNameOf(env)) return undefined;
  const u = clusterUsage(env.EDGEPLANE_CLUSTER);
  if (!u) return undefined;
  // a resource kept in another's shard is counted as that one
  const stored = def.storedIn ? lookupKey(def.storedIn.key) : def;
  const own = countName(stored);
  const perResource = u.perResource?.[own];
  if (!u.objects && perResource === undefined) return undefined;
  let others = 0;
  for (const [k, n] of Object.entries(u.counts)) if (k !== own && typeof n === "number") others += n;
  return {
    cluster: u.name,
    objects: u.objects,
    others,
    resource: perResource === undefined ? undefined : { name: own, limit: perResource },
    // a resource over several shards: each shard sees the others' part in the published count
    ownPublished: resourcePlan(env, def).count > 1 ? (u.counts[own] ?? 0) : undefined,
  };
}

interface Bucket {
  rate: number;
  tokens: number;
  at: number;
}

const buckets = new Map<string, Bucket>();

/** Takes one request from cluster `key`'s bucket; throws 429 when it is empty. */
export function takeRequest(key: string, rate: number | undefined, now = Date.now()): void {
  if (!rate || rate <= 0) {
    buckets.delete(key);
    return;
  }
  let b = buckets.get(key);
  if (!b || b.rate !== rate) buckets.set(key, (b = { rate, tokens: rate, at: now }));
  b.tokens = Math.min(rate, b.tokens + ((now - b.at) / 1000) * rate);
  b.at = now;
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return;
  }
  throw new StatusError(429, "TooManyRequests", "Too many requests, please try again later.", {
    retryAfterSeconds: 1,
  });
}
