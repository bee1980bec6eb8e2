// The change log's reads and its compaction. Every commit adds one row per change (batch.ts);
// watches replay it (watch.ts) and informers catch up from it when the shard's memory of
// recent changes no longer reaches back (recent.ts). Compaction drops what falls out of the
// watch window, as etcd's does: the newest version of each key at the compaction point stays,
// so a paged list over an older snapshot still reads every object as it was.
import type { RecentChange } from "./recent";

/**
 * JSON characters of changes one read gives at most (past its first change). The answer
 * crosses to the puller as one call's, which workerd caps at 32 MiB: 2,000 changes of pods
 * with large annotations can be more, and such a read would fail on every retry.
 */
export const CHANGES_MAX_CHARS = 8 << 20;

/**
 * Changes after revision `rv`, oldest first: at most `limit`, and past the first at most
 * `maxChars` of JSON. `last` is the revision of the last one given; `complete` when none
 * after it was left out.
 */
export function changesAfter(
  sql: SqlStorage,
  rv: number,
  limit: number,
  maxChars = CHANGES_MAX_CHARS,
): { events: RecentChange[]; last: number; complete: boolean } {
  const events: RecentChange[] = [];
  let last = rv;
  let chars = 0;
  const rows = sql.exec<{ rv: number; type: string; data: string }>(
    "SELECT rv, type, data FROM changes WHERE rv > ? ORDER BY rv LIMIT ?",
    rv,
    limit,
  );
  for (const row of rows) {
    chars += row.data.length;
    if (events.length && chars > maxChars) return { events, last, complete: false };
    events.push({ type: row.type, data: row.data });
    last = row.rv;
  }
  return { events, last, complete: events.length < limit };
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
