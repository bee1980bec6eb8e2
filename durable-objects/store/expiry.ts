// Objects that expire after their last write (Events: kube-apiserver's --event-ttl, which
// etcd enforces with leases). Every live object's last write is still a row of the change
// log (compaction keeps the newest row of each key), so that row's commit time is the
// object's age; the shard's alarm deletes what is past it, through an ordinary commit, so
// watchers see the DELETED as they would on a lease expiry.
import type { ResourceDef } from "../../api/resource";
import type { Row } from "./batch";

/** Where the shard remembers its resource across restarts, for the alarm. */
export const EXPIRY_RESOURCE_KEY = "expiry-resource";

/** The resource's time to live in ms, or undefined when its objects do not expire. */
export function ttlMs(def: ResourceDef, env: Record<string, string | undefined>): number | undefined {
  const ttl = def.strategy.ttl;
  if (!ttl) return undefined;
  const v = Number(env[ttl.variable]);
  const seconds = Number.isFinite(v) && v > 0 ? v : ttl.defaultSeconds;
  return seconds * 1000;
}

/** How often the shard looks for expired objects: a minute, or the TTL when shorter (as etcd's lease reuse). */
export const expiryStepMs = (ttl: number) => Math.min(ttl, 60_000);

type ExpiredRow = Row & Record<string, SqlStorageValue>;

/** The objects whose last write is older than `cutoff` (ms since epoch). */
export function expiredRows(sql: SqlStorage, cutoff: number): ExpiredRow[] {
  return sql
    .exec<ExpiredRow>(
      `SELECT o.namespace, o.name, o.uid, o.rv, o.labels, o.fields, o.data
         FROM changes c INDEXED BY changes_at
         JOIN objects o ON o.namespace = c.namespace AND o.name = c.name AND o.rv = c.rv
        WHERE c.at < ?`,
      cutoff,
    )
    .toArray();
}
