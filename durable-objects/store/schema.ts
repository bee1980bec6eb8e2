// The store shard's tables. drizzle-kit generates migrations/ from this file
// (`npm run db:generate`); each shard applies them when it starts.
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Current objects of one resource; namespace is "" for cluster-scoped resources. */
export const objects = sqliteTable(
  "objects",
  {
    namespace: text("namespace").notNull(),
    name: text("name").notNull(),
    uid: text("uid").notNull(),
    rv: integer("rv").notNull(),
    /** JSON of metadata.labels, read without parsing the whole object for label selectors */
    labels: text("labels").notNull(),
    /** JSON of the strategy's selectable fields, for field selectors */
    fields: text("fields").notNull(),
    /** the object, as JSON */
    data: text("data").notNull(),
    /**
     * a pod's first flow-trace spans, the apiserver's of its create, as one compact record
     * (api/trace-record.ts), written with the pod; null in every other resource's shard
     */
    trace: text("trace"),
  },
  (t) => [primaryKey({ columns: [t.namespace, t.name] })],
);

/** The change log: one row per committed change, replayed to watches from a resourceVersion. */
export const changes = sqliteTable(
  "changes",
  {
    rv: integer("rv").primaryKey(),
    type: text("type", { enum: ["ADDED", "MODIFIED", "DELETED"] }).notNull(),
    namespace: text("namespace").notNull(),
    name: text("name").notNull(),
    labels: text("labels").notNull(),
    fields: text("fields").notNull(),
    /** labels and fields before the change (null for ADDED), so a filtered replay knows transitions */
    prevLabels: text("prev_labels"),
    prevFields: text("prev_fields"),
    data: text("data").notNull(),
    /** commit time, ms since epoch, for time-based compaction */
    at: integer("at").notNull(),
  },
  (t) => [index("changes_at").on(t.at), index("changes_key").on(t.namespace, t.name, t.rv)],
);

/**
 * Counters: "compacted" (oldest replayable rv - 1) and, from shards written before the head was
 * derived from the change log, "revision".
 */
export const meta = sqliteTable("meta", {
  key: text("key").primaryKey(),
  value: integer("value").notNull(),
});

/**
 * Pods' flow traces (api/trace.ts), kept beside the pods in their shard: one row per write of
 * spans after the create (a JSON array), removed with the pod. Empty in every other resource's shard.
 */
export const traces = sqliteTable(
  "traces",
  {
    /** the rowid: rows of one pod read in the order they were written */
    id: integer("id").primaryKey(),
    uid: text("uid").notNull(),
    /** JSON of TraceSpan[] */
    spans: text("spans").notNull(),
    /**
     * how many spans the row holds, so the bound per pod is a sum, not a parse; 0 marks a row
     * of one container restart's span, kept in a window of its own (store/traces.ts)
     */
    count: integer("count").notNull(),
  },
  (t) => [index("traces_uid").on(t.uid)],
);
