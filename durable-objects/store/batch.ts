// Group commit for a store shard. workerd commits a Durable Object's SQLite once per event
// and waits for the disk (an fsync) on the object's one thread each time, so under a
// concurrent write load most of the thread's time can go to the disk. Writes are therefore
// staged here and written together a moment later, in one transaction: one commit for every
// write that arrived meanwhile. Until then the staged rows shadow the stored ones for the
// shard's own checks (does the name exist, what is the current version), so staging does not
// change what a write sees. Nothing is answered before the batch holding it is written, and
// workerd holds the answers until that write is on disk.
import { storedCreateRecord } from "../../api/trace-record";
import type { Change } from "./watchers";

/** An object's row as stored. */
export interface Row {
  namespace: string;
  name: string;
  uid: string;
  rv: number;
  labels: string;
  fields: string;
  data: string;
}

/** One change waiting for its commit. */
export interface Staged {
  change: Change;
  uid: string;
  /** labels and selectable fields as stored (JSON) */
  labelsJson: string;
  fieldsJson: string;
  /** the row the change replaces */
  prev: Row | undefined;
  at: number;
  /** a created pod's first trace spans, as the apiserver sent them (api/trace-record.ts) */
  trace?: string;
}

const keyOf = (namespace: string, name: string) => `${namespace}\u0000${name}`;

interface Waiters {
  promise: Promise<void>;
  resolve: () => void;
  reject: (e: unknown) => void;
}

export class WriteBatch {
  private staged: Staged[] = [];
  /** the staged state of each object the batch touches; null once deleted */
  private readonly shadow = new Map<string, Row | null>();
  private waiters?: Waiters;

  constructor(private readonly write: () => void) {}

  /** The revision of the newest staged change, if any. */
  get lastRevision(): number | undefined {
    return this.staged.at(-1)?.change.rv;
  }

  /** The staged row of an object: a row, null when the batch deletes it, undefined when untouched. */
  lookup(namespace: string, name: string): Row | null | undefined {
    return this.shadow.get(keyOf(namespace, name));
  }

  add(s: Staged): void {
    const c = s.change;
    this.staged.push(s);
    this.shadow.set(
      keyOf(c.namespace, c.name),
      c.type === "DELETED"
        ? null
        : {
            namespace: c.namespace,
            name: c.name,
            uid: s.uid,
            rv: c.rv,
            labels: s.labelsJson,
            fields: s.fieldsJson,
            data: c.data,
          },
    );
  }

  /**
   * Resolves once everything staged so far is written (rejects if that write failed). The
   * first caller of a batch schedules its write: after a timer, so that the writes already
   * queued behind this one join the batch.
   */
  written(): Promise<void> {
    if (!this.staged.length) return Promise.resolve();
    if (!this.waiters) {
      let resolve!: () => void;
      let reject!: (e: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      this.waiters = { promise, resolve, reject };
      setTimeout(this.write, 0);
    }
    return this.waiters.promise;
  }

  /** Hands the staged changes to the writer and starts a new batch. */
  take(): { staged: Staged[]; done: (error?: unknown) => void } {
    const staged = this.staged;
    const waiters = this.waiters;
    this.staged = [];
    this.shadow.clear();
    this.waiters = undefined;
    return {
      staged,
      done: (error) => {
        if (!waiters) return;
        if (error === undefined) waiters.resolve();
        else waiters.reject(error);
      },
    };
  }
}

/** Durable Object SQLite binds at most 100 parameters per statement. */
const MAX_PARAMS = 100;

const OBJECT_COLUMNS = "(namespace, name, uid, rv, labels, fields, data, trace)";
const CHANGE_COLUMNS = "(rv, type, namespace, name, labels, fields, prev_labels, prev_fields, data, at)";

/**
 * Inserts rows (one value per column of `head`), as few statements as the parameter limit
 * allows: each statement is a runtime object (a cursor) the isolate frees only in a full
 * collection, and its own trip into SQLite.
 */
export function insertRows(sql: SqlStorage, head: string, rows: SqlStorageValue[][]): void {
  if (!rows.length) return;
  const width = rows[0]!.length;
  const per = Math.floor(MAX_PARAMS / width);
  for (let i = 0; i < rows.length; i += per) {
    const chunk = rows.slice(i, i + per);
    sql.exec(insertText(head, width, chunk.length), ...chunk.flat());
  }
}

/** The statement for `count` rows, the same string each time (workerd keys its statement cache by it). */
const insertTexts = new Map<string, string>();
function insertText(head: string, width: number, count: number): string {
  const key = `${head}/${count}`;
  let text = insertTexts.get(key);
  if (!text) {
    const one = `(${Array(width).fill("?").join(", ")})`;
    insertTexts.set(key, (text = `${head} VALUES ${Array(count).fill(one).join(", ")}`));
  }
  return text;
}

/**
 * Writes a batch's changes: each object's row and its change-log row. Object rows are written
 * in batch order (a run of new rows in one statement); change-log rows, each its own revision,
 * all together. A created pod's trace record goes in its row, closed at `now` (the commit).
 */
export function writeStaged(sql: SqlStorage, staged: readonly Staged[], now = Date.now()): void {
  let inserts: SqlStorageValue[][] = [];
  const insertObjects = () => {
    insertRows(sql, `INSERT OR REPLACE INTO objects ${OBJECT_COLUMNS}`, inserts);
    inserts = [];
  };
  for (const s of staged) {
    const c = s.change;
    if (c.type === "DELETED") {
      insertObjects();
      sql.exec("DELETE FROM objects WHERE namespace = ? AND name = ?", c.namespace, c.name);
    } else if (s.prev) {
      insertObjects();
      // the row is there (a change of a stored object): rewritten in place, where REPLACE
      // would delete it and insert it again, index entry included
      sql.exec(
        "UPDATE objects SET uid = ?, rv = ?, labels = ?, fields = ?, data = ? WHERE namespace = ? AND name = ?",
        s.uid,
        c.rv,
        s.labelsJson,
        s.fieldsJson,
        c.data,
        c.namespace,
        c.name,
      );
    } else
      inserts.push([
        c.namespace,
        c.name,
        s.uid,
        c.rv,
        s.labelsJson,
        s.fieldsJson,
        c.data,
        s.trace === undefined ? null : storedCreateRecord(s.trace, c.rv, now),
      ]);
  }
  insertObjects();
  insertRows(
    sql,
    `INSERT INTO changes ${CHANGE_COLUMNS}`,
    staged.map(({ change: c, labelsJson, fieldsJson, prev, at }) => [
      c.rv,
      c.type,
      c.namespace,
      c.name,
      labelsJson,
      fieldsJson,
      prev?.labels ?? null,
      prev?.fields ?? null,
      c.data,
      at,
    ]),
  );
}
