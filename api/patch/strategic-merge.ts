// Kubernetes strategic merge patch (application/strategic-merge-patch+json),
// applied the way kube-apiserver applies it (MergeParallelList and
// IgnoreUnmatchedNulls on): lists with patchStrategy merge are merged by
// their merge key, other lists are replaced, null deletes a key, and the
// directives $patch, $retainKeys, $setElementOrder/<list> and
// $deleteFromPrimitiveList/<list> are honoured.

import { badRequest, internalError, StatusError } from "../errors";
import { type FieldDef, fieldDef, rootSchema, type Schema, schemaOf } from "./patch-meta";
import {
  DIRECTIVE,
  identity,
  isDeleteItem,
  type Kind,
  noMergeKey,
  normalizeOrder,
  partition,
} from "./smp-order";
import { clone, isObject, type JsonObject, patchNotApplicable, show } from "./util";

const RETAIN_KEYS = "$retainKeys";
const SET_ORDER = "$setElementOrder/";
const DELETE_PRIMITIVE = "$deleteFromPrimitiveList/";

// mergepatch errors, in upstream's words. The format errors are 400
// BadRequest upstream; the others reach the client as generic errors.
const badRetainKeys = () => badRequest("invalid patch format of retainKeys");
const badSetOrder = () => badRequest("invalid patch format of setElementOrder list");
const badPrimitiveList = () => badRequest("invalid patch format of primitive list");
const badPatchType = (t: unknown, m: unknown) =>
  internalError(`unknown patch type: ${show(t)} in map: ${show(m)}`);

/**
 * Applies a strategic merge patch to a copy of `original`. `kind` selects the
 * patch metadata ("Pod", "Deployment", ...); an unknown kind merges maps and
 * replaces every list. Neither argument is modified.
 */
export function strategicMergePatch(original: unknown, patch: unknown, kind: string): unknown {
  if (!isObject(patch)) throw badRequest("invalid JSON document");
  const base = isObject(original) ? clone(original) : {};
  return mergeMap(base, clone(patch), rootSchema(kind));
}

function mergeMap(original: JsonObject, patch: JsonObject, schema: Schema): JsonObject {
  if (Object.hasOwn(patch, DIRECTIVE)) {
    const directive = patch[DIRECTIVE];
    if (directive === "replace") {
      delete patch[DIRECTIVE];
      return cleaned(patch) as JsonObject;
    }
    if (directive === "delete") return {};
    throw badPatchType(directive, patch);
  }
  applyRetainKeys(original, patch);
  applySetElementOrder(original, patch, schema);

  for (const [rawKey, patchV] of Object.entries(patch)) {
    let key = rawKey;
    let isDeleteList = false;
    if (rawKey.startsWith(DELETE_PRIMITIVE)) {
      key = rawKey.slice(DELETE_PRIMITIVE.length);
      if (!key) throw badPrimitiveList();
      isDeleteList = true;
    } else if (rawKey.startsWith("$")) {
      continue; // an unknown directive would be dropped when decoding anyway
    }
    if (patchV === null) {
      delete original[key];
      continue;
    }
    const def = fieldDef(schema, key);
    const origV = original[key];
    if (!Object.hasOwn(original, key) || origV === null || shapeOf(origV) !== shapeOf(patchV)) {
      if (isDeleteList) continue;
      const r = fresh(patchV);
      if (r.keep) original[key] = r.value;
      else delete original[key];
      continue;
    }
    if (isObject(origV) && isObject(patchV)) {
      original[key] = def?.strategy === "replace" ? cleaned(patchV) : mergeMap(origV, patchV, schemaOf(def));
    } else if (Array.isArray(origV) && Array.isArray(patchV)) {
      original[key] = mergeListField(origV, patchV, def, isDeleteList);
    } else {
      original[key] = patchV;
    }
  }
  return original;
}

function shapeOf(v: unknown): "object" | "array" | "scalar" {
  return Array.isArray(v) ? "array" : isObject(v) ? "object" : "scalar";
}

/**
 * A patch value taken as is (the original lacks the field, or holds another
 * type): nulls and directive keys are dropped, and so is any map carrying a
 * `$patch` directive, as upstream's removeDirectives does.
 */
function fresh(v: unknown): { keep: boolean; value?: unknown } {
  if (Array.isArray(v)) {
    const out: unknown[] = [];
    for (const x of v) {
      const r = fresh(x);
      if (r.keep) out.push(r.value);
    }
    return { keep: true, value: out };
  }
  if (isObject(v)) {
    if (Object.hasOwn(v, DIRECTIVE)) return { keep: false };
    const out: JsonObject = {};
    for (const [k, x] of Object.entries(v)) {
      if (x === null || k.startsWith("$")) continue;
      const r = fresh(x);
      if (r.keep) out[k] = r.value;
    }
    return { keep: true, value: out };
  }
  return { keep: true, value: v };
}

/** Drops nulls and directive keys from a value that replaces another whole. */
function cleaned(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(cleaned);
  if (isObject(v)) {
    const out: JsonObject = {};
    for (const [k, x] of Object.entries(v)) {
      if (x === null || k.startsWith("$")) continue;
      out[k] = cleaned(x);
    }
    return out;
  }
  return v;
}

/** Receives the view of the original list upstream's in-place slice edits leave behind. */
interface AliasView {
  view?: unknown[];
}

function mergeListField(
  original: unknown[],
  patch: unknown[],
  def: FieldDef | undefined,
  isDeleteList: boolean,
  alias?: AliasView,
): unknown[] {
  // Deletion lists act the same whatever the field's strategy.
  if (def?.strategy === "merge" || isDeleteList) {
    return mergeList(original, patch, def?.mergeKey ?? "", schemaOf(def), isDeleteList, alias);
  }
  return cleaned(patch) as unknown[];
}

function elementKind(...lists: unknown[][]): Kind | undefined {
  let kind: Kind | undefined;
  for (const list of lists) {
    for (const v of list) {
      if (Array.isArray(v)) throw patchNotApplicable("lists of lists are not supported");
      const k: Kind = isObject(v) ? "map" : "scalar";
      if (kind && kind !== k) throw internalError(`list element types are not identical: ${show(lists)}`);
      kind = k;
    }
  }
  return kind;
}

function mergeList(
  original: unknown[],
  patch: unknown[],
  mergeKey: string,
  elem: Schema,
  isDeleteList: boolean,
  alias?: AliasView,
): unknown[] {
  if (original.length === 0 && patch.length === 0) return original;
  const kind = elementKind(original, patch) as Kind;
  if (kind === "scalar") {
    if (isDeleteList) {
      const gone = new Set(patch);
      return original.filter((v) => !gone.has(v));
    }
    const merged = dedupe([...original, ...patch]);
    const [inPatch, serverOnly] = partition(merged, patch, "");
    return normalizeOrder(inPatch, serverOnly, patch, original, "", kind);
  }
  if (!mergeKey) throw internalError("cannot merge lists without merge key for type struct");

  // Upstream edits the original Go slice in place: deletions shift items
  // left and appends reuse the freed tail. The ordering done later for
  // $setElementOrder sees that slice, so the same view is kept here.
  const n = original.length;
  const backing = [...original];
  let shared = true;
  const plain: unknown[] = [];
  const deletes: unknown[] = [];
  let replace = false;
  for (const v of patch) {
    const m = v as JsonObject;
    if (!Object.hasOwn(m, DIRECTIVE)) {
      plain.push(v);
      continue;
    }
    const directive = m[DIRECTIVE];
    if (directive === "delete") {
      if (!Object.hasOwn(m, mergeKey)) throw noMergeKey(m, mergeKey);
      deletes.push(m[mergeKey]);
    } else if (directive === "replace") {
      replace = true;
    } else if (directive === "merge") {
      throw internalError("merging lists cannot yet be specified in the patch");
    } else {
      throw badPatchType(directive, m);
    }
  }
  const len = deleteInPlace(backing, deletes, mergeKey);
  let base: unknown[];
  let items: unknown[];
  if (replace) {
    base = plain.map((v) => fresh(v).value);
    items = [];
  } else {
    base = backing.slice(0, len);
    items = plain;
  }
  const merged = [...base];
  // each merge key's first item in `merged`, as a scan would find it (objects only)
  const byKey = new Map<unknown, number>();
  const note = (o: unknown, i: number) => {
    if (isObject(o) && !byKey.has(o[mergeKey])) byKey.set(o[mergeKey], i);
  };
  merged.forEach(note);
  for (const item of items) {
    const m = item as JsonObject;
    if (!isObject(m) || !Object.hasOwn(m, mergeKey)) throw noMergeKey(m, mergeKey);
    const at = byKey.get(m[mergeKey]) ?? -1;
    if (at >= 0) {
      merged[at] = mergeMap(merged[at] as JsonObject, m, elem);
      continue;
    }
    const added = fresh(m).value;
    if (shared && !replace && merged.length < n) backing[merged.length] = added;
    else shared = false;
    merged.push(added);
    note(added, merged.length - 1);
  }
  if (alias) alias.view = backing;
  const [inPatch, serverOnly] = partition(merged, items, mergeKey);
  return normalizeOrder(inPatch, serverOnly, items, base, mergeKey, kind);
}

/**
 * Deletes from `backing` every item whose merge key is in `keys`, as upstream does to its Go
 * slice: each deletion, in patch order and first item first, shifts the items after it left,
 * leaving the list's last item behind at the old end. Returns the new length; past it,
 * `backing` holds what those shifts left there (the $setElementOrder view reads it). Done
 * with an index and one pass, not a scan and a shift per deletion.
 */
export function deleteInPlace(backing: unknown[], keys: unknown[], mergeKey: string): number {
  const n = backing.length;
  if (keys.length === 0) return n;
  const original = [...backing];
  const byKey = new Map<unknown, number[]>();
  for (let i = 0; i < n; i++) {
    const o = original[i];
    if (!isObject(o)) continue;
    const at = byKey.get(o[mergeKey]);
    if (at) at.push(i);
    else byKey.set(o[mergeKey], [i]);
  }
  const gone = new Set<number>();
  let len = n;
  let last = n - 1; // the list's last item that is still in it
  for (const key of keys) {
    for (const i of byKey.get(key) ?? []) {
      if (gone.has(i)) continue;
      backing[len - 1] = original[last]; // what the shift leaves at the old end
      gone.add(i);
      len--;
      while (last >= 0 && gone.has(last)) last--;
    }
  }
  let w = 0;
  for (let i = 0; i < n; i++) if (!gone.has(i)) backing[w++] = original[i];
  return len;
}

function dedupe(list: unknown[]): unknown[] {
  return [...new Set(list)];
}

function applyRetainKeys(original: JsonObject, patch: JsonObject): void {
  if (!Object.hasOwn(patch, RETAIN_KEYS)) return;
  const retain = patch[RETAIN_KEYS];
  delete patch[RETAIN_KEYS];
  if (!Array.isArray(retain)) throw badRetainKeys();
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || k.startsWith(DELETE_PRIMITIVE) || k.startsWith(SET_ORDER)) continue;
    if (!retain.includes(k)) throw badRetainKeys();
  }
  for (const k of Object.keys(original)) if (!retain.includes(k)) delete original[k];
}

function applySetElementOrder(original: JsonObject, patch: JsonObject, schema: Schema): void {
  for (const key of Object.keys(patch)) {
    if (!key.startsWith(SET_ORDER)) continue;
    const order = patch[key];
    delete patch[key];
    const field = key.slice(SET_ORDER.length);
    if (!field || !Array.isArray(order)) throw badSetOrder();
    const foundOriginal = Object.hasOwn(original, field) && original[field] !== null;
    const foundPatch = Object.hasOwn(patch, field) && patch[field] !== null;
    if (!foundOriginal && !foundPatch) continue;
    const origList = foundOriginal ? original[field] : [];
    const patchList = foundPatch ? patch[field] : [];
    if (!Array.isArray(origList) || !Array.isArray(patchList)) throw badSetOrder();
    const def = fieldDef(schema, field);
    const mergeKey = def?.strategy === "merge" ? (def.mergeKey ?? "") : "";
    validateOrder(patchList, order, mergeKey);
    const alias: AliasView = {};
    const merged = !foundPatch
      ? origList
      : foundOriginal
        ? mergeListField(origList, patchList, def, false, alias)
        : (fresh(patchList).value as unknown[]);
    const kind = elementKind(origList, patchList, merged);
    if (!kind) {
      original[field] = merged;
    } else {
      const [inOrder, serverOnly] = partition(merged, order, kind === "map" ? mergeKey : "");
      const serverOrder = alias.view ?? origList;
      original[field] = normalizeOrder(
        inOrder,
        serverOnly,
        order,
        serverOrder,
        kind === "map" ? mergeKey : "",
        kind,
      );
    }
    delete patch[field];
  }
}

/** The non-deleting patch items must appear in $setElementOrder, in the same relative order. */
function validateOrder(patchList: unknown[], order: unknown[], mergeKey: string): void {
  if (patchList.length === 0 || order.length === 0) return;
  const items = mergeKey ? patchList.filter((v) => !isDeleteItem(v)) : patchList;
  let p = 0;
  let o = 0;
  while (p < items.length && o < order.length) {
    if (isObject(items[p]) && Object.hasOwn(items[p] as JsonObject, DIRECTIVE)) {
      p++;
      continue;
    }
    if (mergeKey) {
      for (const v of [items[p], order[o]]) {
        if (!isObject(v) || !Object.hasOwn(v, mergeKey)) throw noMergeKey(v, mergeKey);
      }
    }
    if (identity(items[p], mergeKey) === identity(order[o], mergeKey)) p++;
    o++;
  }
  if (p < items.length) {
    throw new StatusError(
      500,
      "InternalError",
      `The order in patch list:\n${show(patchList)}\n doesn't match $setElementOrder list:\n${show(order)}\n`,
    );
  }
}
