// Lists over a store shard: selectors, limit/continue pages that all read one snapshot,
// and resourceVersion semantics (unset/0: latest; Exact: that snapshot; NotOlderThan).

import { tableDef } from "../../api/custom/definition";
import { badRequest, expired, StatusError } from "../../api/errors";
import type { ResourceDef } from "../../api/resource";
import { apiVersionOf } from "../../api/resource";
import {
  checkFieldSelector,
  matches,
  parseFieldSelector,
  parseLabelSelector,
  type Selector,
} from "../../api/selectors";
import { table as tableOf, tableRow } from "../../api/table";
import type { KubeObject } from "../../api/types";
import { supportedFields } from "./fields";
import type { ListQuery } from "./protocol";
import type { StoreShard } from "./shard";

interface Entry {
  [k: string]: SqlStorageValue;
  namespace: string;
  name: string;
  labels: string;
  fields: string;
  data: string;
}

interface ContinueToken {
  rv: number;
  start: [string, string];
}

export function encodeContinue(t: ContinueToken): string {
  return btoa(JSON.stringify({ v: "meta.k8s.io/v1", rv: t.rv, start: t.start }));
}

function decodeContinue(s: string): ContinueToken {
  try {
    const t = JSON.parse(atob(s));
    if (typeof t.rv !== "number" || !Array.isArray(t.start) || t.start.length !== 2) throw new Error();
    return { rv: t.rv, start: [String(t.start[0]), String(t.start[1])] };
  } catch {
    throw badRequest(
      "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
    );
  }
}

function parseRV(s: string, what = "resourceVersion"): number {
  if (!/^\d+$/.test(s)) throw badRequest(`invalid ${what}: ${s}`);
  return Number(s);
}

/** The object as it was at revision `snap`, or undefined if it did not exist then. */
function stateAt(shard: StoreShard, namespace: string, name: string, snap: number): Entry | undefined {
  const rows = shard.sql
    .exec<{ type: string; labels: string; fields: string; data: string }>(
      "SELECT type, labels, fields, data FROM changes WHERE namespace = ? AND name = ? AND rv <= ? ORDER BY rv DESC LIMIT 1",
      namespace,
      name,
      snap,
    )
    .toArray();
  const r = rows[0];
  if (!r || r.type === "DELETED") return undefined;
  return { namespace, name, labels: r.labels, fields: r.fields, data: r.data };
}

/**
 * Pairs of one selector checked in SQL, at most: a Durable Object's SQLite takes 100 bound
 * values and 100 KB of statement per query, and a selector of thousands of terms (a 50 KB
 * URL) passed both as a 500. The rest are matched with the whole selector after the read.
 */
const MAX_PAIR_FILTERS = 8;

/**
 * SQL conditions that keep only rows whose stored labels/fields JSON holds each `key=value`
 * a selector requires: the labels and fields columns are JSON.stringify of the maps, so an
 * exact pair appears there as the text "key":"value". Rows that pass are still matched in
 * full; this only spares reading (and copying out) the objects that cannot match.
 */
function pairFilters(column: "labels" | "fields", sel: Selector): { where: string[]; args: string[] } {
  const where: string[] = [];
  const args: string[] = [];
  for (const r of sel) {
    if (where.length === MAX_PAIR_FILTERS) break;
    if (r.op !== "=" && !(r.op === "in" && r.values.length === 1)) continue;
    where.push(`instr(${column}, ?) > 0`);
    args.push(`${JSON.stringify(r.key)}:${JSON.stringify(r.values[0])}`);
  }
  return { where, args };
}

/**
 * SQL for "after key `start`", in one namespace or across all. Within one namespace it is said
 * as name > ?: SQLite seeks the primary key by (namespace = ?, name > ?), but with the row value
 * (namespace, name) > (?, ?) beside namespace = ? it scanned the namespace from its first row,
 * so each page of a long list cost more than the one before.
 */
function afterKey(namespace: string | undefined, start: [string, string]): { where: string; args: string[] } {
  if (namespace === undefined) return { where: "(namespace, name) > (?, ?)", args: start };
  if (start[0] === namespace) return { where: "name > ?", args: [start[1]] };
  return { where: start[0] < namespace ? "1" : "0", args: [] };
}

function* scan(
  shard: StoreShard,
  q: ListQuery,
  start: [string, string] | null,
  snap: number,
  labelSel: Selector,
  fieldSel: Selector,
  keysOnly = false,
): Generator<Entry> {
  const where: string[] = [];
  const args: SqlStorageValue[] = [];
  // only the current state can be pre-filtered: an object changed since an older snapshot
  // is read back from the change log whatever its labels are now
  if (snap >= shard.revision) {
    for (const f of [pairFilters("labels", labelSel), pairFilters("fields", fieldSel)]) {
      where.push(...f.where);
      args.push(...f.args);
    }
  }
  if (q.namespace !== undefined) {
    where.push("namespace = ?");
    args.push(q.namespace);
  }
  if (start) {
    const after = afterKey(q.namespace, start);
    where.push(after.where);
    args.push(...after.args);
  }
  const cond = where.length ? `WHERE ${where.join(" AND ")}` : "";
  const cursor = shard.sql.exec<Entry & { rv: number }>(
    `SELECT namespace, name, rv, labels, fields${keysOnly ? ", '' AS data" : ", data"} FROM objects ${cond} ORDER BY namespace, name`,
    ...args,
  );
  if (snap >= shard.revision) {
    yield* cursor;
    return;
  }
  // An older snapshot: objects changed since read back from the change log, objects
  // deleted since merged in at their place in key order.
  const gone = shard.sql
    .exec<{ namespace: string; name: string }>(
      `SELECT DISTINCT namespace, name FROM changes WHERE rv > ? AND type = 'DELETED' ${
        q.namespace !== undefined ? "AND namespace = ?" : ""
      } ORDER BY namespace, name`,
      ...(q.namespace !== undefined ? [snap, q.namespace] : [snap]),
    )
    .toArray()
    .filter((k) => !start || k.namespace > start[0] || (k.namespace === start[0] && k.name > start[1]));
  let gi = 0;
  const before = (a: { namespace: string; name: string }, b: { namespace: string; name: string }) =>
    a.namespace < b.namespace || (a.namespace === b.namespace && a.name < b.name);
  for (const row of cursor) {
    while (gi < gone.length && before(gone[gi], row)) {
      const e = stateAt(shard, gone[gi].namespace, gone[gi].name, snap);
      gi++;
      if (e) yield e;
    }
    if (gi < gone.length && gone[gi].namespace === row.namespace && gone[gi].name === row.name) gi++;
    if (row.rv <= snap) yield row;
    else {
      const e = stateAt(shard, row.namespace, row.name, snap);
      if (e) yield e;
    }
  }
  for (; gi < gone.length; gi++) {
    const e = stateAt(shard, gone[gi].namespace, gone[gi].name, snap);
    if (e) yield e;
  }
}

/**
 * A list's JSON around its items (a Table's around its rows): `head`, then the items' JSON
 * separated by commas, then `tail`.
 */
export interface ListFrame {
  head: string;
  tail: string;
}

/** What a list reads: its snapshot, where it starts, how many items, and which. */
export interface ListPlan {
  def: ResourceDef;
  q: ListQuery;
  labelSel: Selector;
  fieldSel: Selector;
  snap: number;
  /** read the objects after this key (namespace, name) */
  start: [string, string] | null;
  limit: number;
  now: number;
  /**
   * only which objects (deletecollection): current objects are read without their data, and
   * `add` gets an empty string for each (an older snapshot's objects are read whole)
   */
  keysOnly?: boolean;
}

/** What one read of a list gave `add`. */
export interface ListRead {
  count: number;
  last?: { namespace: string; name: string };
  /** the continue token of a list cut at its limit */
  next?: string;
  /** the read stopped at its budget of characters, with more items possibly to come */
  paused: boolean;
}

/** Hands `add` each item's JSON (for a Table, each row's) with the object's namespace and name. */
export type ListAdd = (data: string, at: { namespace: string; name: string }) => void;

/** Checks a list request and settles its snapshot and starting point. */
export function planList(shard: StoreShard, def: ResourceDef, q: ListQuery): ListPlan {
  const labelSel = parseLabelSelector(q.labelSelector);
  const fieldSel = parseFieldSelector(q.fieldSelector);
  checkFieldSelector(fieldSel, supportedFields(def));

  let snap = shard.revision;
  let start: [string, string] | null = null;
  if (q.continue) {
    const t = decodeContinue(q.continue);
    if (t.rv <= shard.compacted)
      throw expired(
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
      );
    snap = t.rv;
    start = t.start;
  } else if (q.resourceVersion && q.resourceVersion !== "0") {
    const want = parseRV(q.resourceVersion);
    if (want > shard.revision)
      throw new StatusError(
        504,
        "Timeout",
        `Too large resource version: ${want}, current: ${shard.revision}`,
        {
          causes: [{ type: "ResourceVersionTooLarge", message: "Too large resource version" }],
          retryAfterSeconds: 1,
        },
      );
    if (q.resourceVersionMatch === "Exact") {
      if (want <= shard.compacted) throw expired(`too old resource version: ${want} (${shard.compacted})`);
      snap = want;
    }
  } else if (q.resourceVersionMatch) {
    throw badRequest(`resourceVersionMatch is forbidden unless resourceVersion is provided`);
  }
  const limit = q.limit && q.limit > 0 ? q.limit : Number.POSITIVE_INFINITY;
  return { def, q, labelSel, fieldSel, snap, start, limit, now: Date.now() };
}

/**
 * Reads the plan's items from its start, up to its limit, or until objects of about `budget`
 * characters were read (then `paused`: a later read goes on from plan.start, moved past the
 * last). The budget counts the objects read, not what `add` gets: a Table row is small, but
 * making it parses the object.
 */
export function readList(
  shard: StoreShard,
  plan: ListPlan,
  add: ListAdd,
  budget = Number.POSITIVE_INFINITY,
): ListRead {
  const { def, q, labelSel, fieldSel, snap, limit } = plan;
  const table = q.table;
  let count = 0;
  let chars = 0;
  let last: Entry | undefined;
  let next: string | undefined;
  let paused = false;
  const useFields = fieldSel.length > 0;
  const useLabels = labelSel.length > 0;
  for (const e of scan(shard, q, plan.start, snap, labelSel, fieldSel, plan.keysOnly)) {
    if (count >= limit && last) {
      next = encodeContinue({ rv: snap, start: [last.namespace, last.name] });
      break;
    }
    if (chars >= budget) {
      paused = true;
      break;
    }
    if (useLabels && !matches(labelSel, JSON.parse(e.labels))) continue;
    if (useFields && !matches(fieldSel, JSON.parse(e.fields))) continue;
    count++;
    last = e;
    chars += e.data.length;
    add(
      table
        ? JSON.stringify(
            tableRow(tableDef(def, table.columns), JSON.parse(e.data) as KubeObject, table.include, plan.now),
          )
        : e.data,
      e,
    );
  }
  if (last) plan.start = [last.namespace, last.name];
  return { count, last, next, paused };
}

/** What goes around a list's items, once `read` settled its continue token. */
export function listFrame(shard: StoreShard, plan: ListPlan, read: ListRead): ListFrame {
  const { def, q, snap } = plan;
  const { last, next } = read;
  // How many more a client would page through: only without selectors (upstream leaves it out
  // then, as the count would be unknown), and an estimate, counted over the current objects.
  let remaining: number | undefined;
  if (next && last && plan.labelSel.length === 0 && plan.fieldSel.length === 0) {
    const after = afterKey(q.namespace, [last.namespace, last.name]);
    const inNs = q.namespace !== undefined ? " AND namespace = ?" : "";
    remaining = shard.sql
      .exec<{ n: number }>(
        `SELECT COUNT(*) AS n FROM objects WHERE ${after.where}${inNs}`,
        ...after.args,
        ...(q.namespace !== undefined ? [q.namespace] : []),
      )
      .one().n;
  }

  if (q.table) {
    // the Table with no rows, opened where they go
    const shell = JSON.stringify(
      tableOf(tableDef(def, q.table.columns), [], {
        include: q.table.include,
        headers: true,
        resourceVersion: String(snap),
        continue: next,
        remainingItemCount: remaining,
      }),
    );
    return { head: shell.slice(0, -2), tail: "]}" };
  }
  const more = remaining === undefined ? "" : `,"remainingItemCount":${remaining}`;
  const meta = next
    ? `{"resourceVersion":"${snap}","continue":"${next}"${more}}`
    : `{"resourceVersion":"${snap}"}`;
  return {
    head: `{"kind":"${def.listKind}","apiVersion":"${apiVersionOf(def)}","metadata":${meta},"items":[`,
    tail: "]}",
  };
}
