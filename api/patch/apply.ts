// Server-side apply (PATCH with application/apply-patch+yaml): merges an
// applied configuration into the live object, prunes what the manager
// stopped applying, detects conflicts with other managers and records
// ownership in metadata.managedFields.

import { badRequest, StatusError } from "../errors";
import { wireTime } from "../time";
import type { KubeObject } from "../types";
import { appliedFieldSet, compareObjects, itemKey, listType, ValueSet } from "./field-walk";
import {
  difference,
  type FieldNode,
  type FieldPath,
  intersection,
  isEmpty,
  keyPE,
  lookup,
  members,
  newNode,
  pathString,
  union,
  valuePE,
  withoutSubtrees,
} from "./fieldset";
import { allowedConflicts, isAllowed, KUBECTL_MANAGER, syncLastApplied } from "./last-applied";
import {
  BEFORE_FIRST_APPLY_MANAGER,
  capUpdateManagers,
  decodeManagedFields,
  encodeManagedFields,
  entryId,
  type ManagerEntry,
  managedFieldsAside,
  stripIgnored,
} from "./managed-fields";
import { type FieldDef, fieldDef, rootSchema, type Schema, schemaOf } from "./patch-meta";
import { clone, deepEqual, isObject, type JsonObject } from "./util";

export interface ApplyOptions {
  /** Field manager (?fieldManager=, required for apply; kubectl sends "kubectl"). */
  manager: string;
  /** ?force=true: take ownership of conflicting fields. */
  force: boolean;
  kind: string;
  /** Current time, RFC 3339. */
  now: string;
  subresource?: string;
  /** The group/version the endpoint serves ("apps/v1"); a different apiVersion in the body is 400. */
  expectedApiVersion?: string;
  /**
   * The kind's defaulting (its strategy's): the last client-side applied configuration is
   * defaulted before it is compared with the live object, as upstream's lastAppliedManager does.
   */
  defaults?: (obj: KubeObject) => void;
}

/**
 * Applies `applied` (a full or partial object) to `live` (undefined when the
 * object does not exist yet) and returns the new object with managedFields.
 * Neither argument is modified. Throws 409 Conflict when the configuration
 * changes fields other managers own, unless `force`.
 */
export function applyPatch(
  live: KubeObject | undefined,
  applied: KubeObject,
  opts: ApplyOptions,
): KubeObject {
  let result: KubeObject;
  try {
    result = applyOnce(live, applied, opts, opts.force);
  } catch (e) {
    if (!(e instanceof ApplyConflicts)) throw e;
    const allowed =
      opts.manager === KUBECTL_MANAGER && live
        ? allowedConflicts(live, rootSchema(opts.kind), opts.subresource, opts.defaults)
        : undefined;
    const remaining = allowed ? e.conflicts.filter((c) => !isAllowed(allowed, c.path)) : e.conflicts;
    if (remaining.length > 0) throw applyConflict(remaining);
    result = applyOnce(live, applied, opts, true);
  }
  if (opts.manager === KUBECTL_MANAGER) syncLastApplied(result, applied);
  return result;
}

type Conflict = { entry: ManagerEntry; path: FieldPath };

class ApplyConflicts extends Error {
  constructor(readonly conflicts: Conflict[]) {
    super("apply conflicts");
  }
}

function applyOnce(
  live: KubeObject | undefined,
  applied: KubeObject,
  opts: ApplyOptions,
  force: boolean,
): KubeObject {
  if (!isObject(applied)) throw badRequest("apply patch must be an object");
  const appliedMeta = (applied as JsonObject).metadata;
  if (isObject(appliedMeta) && appliedMeta.managedFields != null) {
    throw badRequest("metadata.managedFields must be nil");
  }
  if (opts.expectedApiVersion && applied.apiVersion !== opts.expectedApiVersion) {
    throw badRequest(
      `Incorrect version specified in apply patch. Specified patch version: ${applied.apiVersion ?? ""}, expected: ${opts.expectedApiVersion}`,
    );
  }
  const schema = rootSchema(opts.kind);
  const apiVersion = String(applied.apiVersion ?? live?.apiVersion ?? "");
  const now = wireTime(opts.now);
  let entries = decodeManagedFields(live?.metadata?.managedFields);
  // read only: merging copies what it changes, and the merged object is cloned
  const before = live ? (managedFieldsAside(live) as JsonObject) : undefined;
  if (before && entries.length === 0) {
    // Upstream attributes an untracked object to "before-first-apply".
    const owned = stripIgnored(compareObjects(undefined, before, schema).changed, opts.subresource);
    entries.push({
      manager: BEFORE_FIRST_APPLY_MANAGER,
      operation: "Update",
      apiVersion,
      time: now,
      set: owned,
    });
  }

  const config = clone(applied) as JsonObject;
  const appliedSet = stripIgnored(appliedFieldSet(config, schema), opts.subresource);
  const id = entryId({
    manager: opts.manager,
    operation: "Apply",
    apiVersion,
    subresource: opts.subresource,
  });
  const previous = entries.find((e) => entryId(e) === id);
  const others = entries.filter((e) => e !== previous);

  const merged = clone(mergeObject(before ?? {}, config, schema));
  if (previous) {
    const othersOwn = others.reduce((acc, e) => union(acc, e.set), newNode());
    const stale = difference(previous.set, appliedSet);
    removeAll(merged, pruneTargets(stale, othersOwn, appliedSet), schema);
  }

  const cmp = compareObjects(before, merged, schema);
  const changed = stripIgnored(cmp.changed, opts.subresource);
  const removed = stripIgnored(cmp.removed, opts.subresource);
  const conflicts: Conflict[] = [];
  for (const e of others) {
    for (const path of members(intersection(e.set, changed))) conflicts.push({ entry: e, path });
  }
  if (conflicts.length > 0 && !force) throw new ApplyConflicts(conflicts);

  for (const e of others) e.set = withoutSubtrees(difference(e.set, changed), removed);
  const unchanged = before !== undefined && deepEqual(before, merged);
  const mine: ManagerEntry = {
    manager: opts.manager,
    operation: "Apply",
    apiVersion,
    time: unchanged && previous?.time ? previous.time : now,
    subresource: opts.subresource,
    set: appliedSet,
  };
  entries = [...others, mine];
  const result = merged as KubeObject;
  result.metadata ??= {};
  const encoded = encodeManagedFields(capUpdateManagers(entries));
  if (encoded.length > 0) result.metadata.managedFields = encoded;
  else delete result.metadata.managedFields;
  return result;
}

function managerText(e: ManagerEntry): string {
  let s = JSON.stringify(e.manager);
  if (e.subresource) s += ` with subresource ${JSON.stringify(e.subresource)}`;
  if (e.operation === "Update") s += ` using ${e.apiVersion}`;
  return s;
}

/** 409 in the shape of upstream's NewConflictError. */
export function applyConflict(conflicts: Conflict[]): StatusError {
  const causes = conflicts.map((c) => ({
    type: "FieldManagerConflict",
    message: `conflict with ${managerText(c.entry)}`,
    field: pathString(c.path),
  }));
  let message: string;
  if (conflicts.length === 1) {
    message = `Apply failed with 1 conflict: conflict with ${managerText(conflicts[0].entry)}: ${pathString(conflicts[0].path)}`;
  } else {
    const byManager = new Map<string, { entry: ManagerEntry; paths: string[] }>();
    for (const c of conflicts) {
      const k = entryId(c.entry);
      if (!byManager.has(k)) byManager.set(k, { entry: c.entry, paths: [] });
      byManager.get(k)?.paths.push(pathString(c.path));
    }
    const groups = [...byManager.values()].sort((a, b) => (a.entry.manager < b.entry.manager ? -1 : 1));
    const lines = groups.flatMap((g) => [
      `conflicts with ${managerText(g.entry)}:`,
      ...g.paths.map((p) => `- ${p}`),
    ]);
    message = `Apply failed with ${conflicts.length} conflicts: ${lines.join("\n")}`;
  }
  return new StatusError(409, "Conflict", message, { causes });
}

/**
 * Paths the manager owned before, no longer applies and nobody else owns.
 * A path something else still needs below is kept and looked into.
 */
function pruneTargets(stale: FieldNode, othersOwn: FieldNode, applied: FieldNode): FieldPath[] {
  const out: FieldPath[] = [];
  const walk = (node: FieldNode, path: FieldPath) => {
    for (const [pe, c] of node.children) {
      const p = [...path, pe];
      const needed = !isEmpty(lookup(othersOwn, p)) || !isEmpty(lookup(applied, p));
      if (c.member && !needed) {
        out.push(p);
        continue;
      }
      if (pe.startsWith("k:") && needed) {
        // keep the key fields of an item that stays
        const keyNames = Object.keys(JSON.parse(pe.slice(2)) as object).map((k) => `f:${k}`);
        const rest = {
          member: false,
          children: new Map([...c.children].filter(([k]) => !keyNames.includes(k))),
        };
        walk(rest, p);
      } else {
        walk(c, p);
      }
    }
  };
  walk(stale, []);
  return out;
}

/**
 * Removes the values at field paths. List items are found through an index of each list
 * (made once) and taken out together at the end, so pruning 5,000 items of one list is not
 * 5,000 scans of it.
 */
function removeAll(root: JsonObject, paths: FieldPath[], schema: Schema): void {
  const indexes = new Map<unknown[], Map<string, number>>();
  const doomed = new Map<unknown[], Set<number>>();
  const indexOf = (list: unknown[], pe: string, def: FieldDef | undefined): number => {
    let ix = indexes.get(list);
    if (!ix) {
      ix = new Map();
      for (let i = list.length - 1; i >= 0; i--) {
        // both forms an item can be named by; the first item of a name wins, as a scan finds it
        const key = itemKey(list[i], def);
        if (key) ix.set(keyPE(key), i);
        ix.set(valuePE(list[i]), i);
      }
      indexes.set(list, ix);
    }
    return ix.get(pe) ?? -1;
  };
  for (const path of paths) {
    let cur: unknown = root;
    let def: FieldDef | undefined;
    let sch: Schema = schema;
    for (let i = 0; i < path.length; i++) {
      const pe = path[i];
      const last = i === path.length - 1;
      if (pe.startsWith("f:") && isObject(cur)) {
        const name = pe.slice(2);
        if (last) {
          delete cur[name];
          break;
        }
        def = fieldDef(sch, name);
        sch = schemaOf(def);
        cur = cur[name];
      } else if (Array.isArray(cur)) {
        const at = indexOf(cur, pe, def);
        if (at < 0) break;
        if (last) {
          let d = doomed.get(cur);
          if (!d) doomed.set(cur, (d = new Set()));
          d.add(at);
          break;
        }
        cur = cur[at];
        def = undefined;
      } else {
        break;
      }
    }
  }
  for (const [list, gone] of doomed) {
    let w = 0;
    for (let r = 0; r < list.length; r++) if (!gone.has(r)) list[w++] = list[r];
    list.length = w;
  }
}

/** Upstream's TypedValue.Merge: the configuration wins, lists merge by their list type. */
function mergeValue(live: unknown, cfg: unknown, def: FieldDef | undefined): unknown {
  if (Array.isArray(cfg) && Array.isArray(live)) {
    const lt = listType(def);
    // items are found by an index of the list, not a scan per item: 5,000 ports took seconds
    if (lt === "set") {
      const out = [...live];
      const have = new ValueSet(out);
      for (const v of cfg) {
        if (have.has(v)) continue;
        out.push(v);
        have.add(v);
      }
      return out;
    }
    if (lt === "map") {
      const out = [...live];
      const at = new Map<string, number>();
      const note = (x: unknown, i: number) => {
        const key = itemKey(x, def);
        if (key) {
          const pe = keyPE(key);
          if (!at.has(pe)) at.set(pe, i);
        }
      };
      out.forEach(note);
      for (const item of cfg) {
        const key = itemKey(item, def);
        const i = key ? (at.get(keyPE(key)) ?? -1) : -1;
        if (i >= 0 && isObject(out[i]) && isObject(item))
          out[i] = mergeObject(out[i] as JsonObject, item, schemaOf(def));
        else {
          out.push(item);
          note(item, out.length - 1);
        }
      }
      return out;
    }
    return cfg;
  }
  if (isObject(cfg) && isObject(live) && !def?.atomic) return mergeObject(live, cfg, schemaOf(def));
  return cfg;
}

function mergeObject(live: JsonObject, cfg: JsonObject, schema: Schema): JsonObject {
  const out: JsonObject = { ...live };
  for (const [k, v] of Object.entries(cfg)) {
    if (v === null) delete out[k];
    else out[k] = mergeValue(out[k], v, fieldDef(schema, k));
  }
  return out;
}
