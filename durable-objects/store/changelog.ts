// The change log's reads and its compaction. Every commit adds one row per change (batch.ts);
// watches replay it (watch.ts) and informers catch up from it when the shard's memory of
// recent changes no longer reaches back (recent.ts). Compaction drops what falls out of the
// watch window, as etcd's does: the newest version of each key at the compaction point stays,
// so a paged list over an older snapshot still reads every object as it was.
import type { RecentChange } from "./recent";

/** Changes after revision `rv`, oldest first, at most `limit`. */
export function changesAfter(sql: SqlStorage, rv: number, limit: number): RecentChange[] {
  return sql
    .exec<RecentChange & Record<string, SqlStorageValue>>(
      "SELECT type, data FROM changes WHERE rv > ? ORDER BY rv LIMIT ?",
      rv,
      limit,
    )
    .toArray();
}

/**
 * The revision up to which the log may be compacted at `now`: older than the window's
 * seconds, or more than its number of events behind the head (the Worker variables
 * EDGEPLANE_WATCH_WINDOW_SECONDS, default 300, and EDGEPLANE_WATCH_WINDOW_EVENTS, 100,000).
 */
export function compactionPoint(
  sql: SqlStorage,
  head: number,
  settings: Record<string, string | undefined>,
  now: number,
): number {
  const seconds = Number(settings.EDGEPLANE_WATCH_WINDOW_SECONDS ?? 300);
  const events = Number(settings.EDGEPLANE_WATCH_WINDOW_EVENTS ?? 100000);
  const byTime =
    sql
      // through the time index: only rows past the window are visited (left to itself,
      // SQLite walks rv downwards over the whole log looking for an old enough row)
      .exec<{ rv: number | null }>(
        "SELECT MAX(rv) AS rv FROM changes INDEXED BY changes_at WHERE at < ?",
        now - seconds * 1000,
      )
      .one().rv ?? 0;
  return Math.max(head - events, byTime);
}

/** Drops the rows up to `point` that no snapshot needs any more, and records the point. Run it in a transaction. */
export function compactLog(sql: SqlStorage, point: number): void {
  sql.exec(
    `DELETE FROM changes WHERE rv <= ?1 AND (type = 'DELETED' OR rv < (
       SELECT MAX(c2.rv) FROM changes c2 WHERE c2.namespace = changes.namespace AND c2.name = changes.name AND c2.rv <= ?1))`,
    point,
  );
  sql.exec("INSERT OR REPLACE INTO meta (key, value) VALUES ('compacted', ?)", point);
}
