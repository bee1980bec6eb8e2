// Field sets of objects: what an applied configuration sets, and what
// changed between two versions of an object. Lists are associative (by
// their keys), sets of primitives, or atomic, as patch-meta.ts says.

import { badRequest } from "../errors";
import { child, type FieldNode, fieldPE, keyPE, newNode, prune, valuePE } from "./fieldset";
import { type FieldDef, fieldDef, type Schema, schemaOf } from "./patch-meta";
import { deepEqual, isObject, type JsonObject } from "./util";

/** Key field values of an associative list item (defaults filled in), or undefined. */
export function itemKey(item: unknown, def: FieldDef | undefined): Record<string, unknown> | undefined {
  if (!isObject(item) || !def?.keys) return undefined;
  const key: Record<string, unknown> = {};
  for (const k of def.keys) {
    const v = Object.hasOwn(item, k) && item[k] !== null ? item[k] : def.keyDefaults?.[k];
    if (v !== undefined) key[k] = v;
  }
  return key;
}

function requireKey(item: unknown, def: FieldDef, at: string): string {
  const key = itemKey(item, def);
  const first = def.keys?.[0] ?? "";
  if (!key || !(first in key)) {
    throw badRequest(`${at}: associative list with keys has an element that omits key field "${first}"`);
  }
  return keyPE(key);
}

export function listType(def: FieldDef | undefined): "map" | "set" | "atomic" {
  return def?.list ?? "atomic";
}

/** The fields an applied configuration sets (upstream's TypedValue.ToFieldSet). */
export function appliedFieldSet(obj: JsonObject, schema: Schema): FieldNode {
  const root = newNode();
  objectInto(obj, schema, root, "");
  return prune(root);
}

function objectInto(obj: JsonObject, schema: Schema, node: FieldNode, at: string): void {
  for (const [k, v] of Object.entries(obj))
    valueInto(v, fieldDef(schema, k), child(node, fieldPE(k)), `${at}.${k}`);
}

function valueInto(v: unknown, def: FieldDef | undefined, node: FieldNode, at: string): void {
  if (Array.isArray(v)) {
    listInto(v, def, node, at, false);
  } else if (isObject(v) && !def?.atomic && Object.keys(v).length > 0) {
    objectInto(v, schemaOf(def), node, at);
  } else {
    node.member = true;
  }
}

function listInto(
  list: unknown[],
  def: FieldDef | undefined,
  node: FieldNode,
  at: string,
  added: boolean,
): void {
  const lt = listType(def);
  if (lt === "atomic") {
    node.member = true;
    return;
  }
  for (const item of list) {
    if (lt === "set") {
      child(node, valuePE(item)).member = true;
      continue;
    }
    const c = child(node, requireKey(item, def as FieldDef, at));
    c.member = true;
    if (!isObject(item)) continue;
    if (added) addedInto(item, { type: def?.type }, c, false, at);
    else objectInto(item, schemaOf(def), c, at);
  }
}

/**
 * Everything in a value that did not exist before. Added maps are members
 * themselves, except non-pointer structs whose parent existed already (they
 * exist, empty, in Go's zero value).
 */
function addedInto(
  v: unknown,
  def: FieldDef | undefined,
  node: FieldNode,
  parentInZero: boolean,
  at: string,
) {
  const inZero = parentInZero && def?.np === true;
  if (Array.isArray(v)) {
    listInto(v, def, node, at, true);
    return;
  }
  if (!isObject(v) || def?.atomic) {
    node.member = true;
    return;
  }
  if (!inZero) node.member = true;
  const schema = schemaOf(def);
  for (const [k, x] of Object.entries(v))
    addedInto(x, fieldDef(schema, k), child(node, fieldPE(k)), inZero, `${at}.${k}`);
}

/** Thrown by createdFields when a list holds two items of one key (see there). */
export const DUPLICATE_ITEM = Symbol("duplicate list item");

/**
 * The FieldsV1 of a new object as one Update manager owns it: what compareObjects finds
 * added against nothing, less the subtrees `gone` names, encoded as setToFields encodes
 * it; undefined when that is empty. One pass with no field-set tree: a create's managed
 * fields were the costliest step of a pod create. Throws DUPLICATE_ITEM for a list with
 * two items of one key or value (the tree merges them; callers take that path then) and
 * a 400 for an item without its key, as compareObjects does.
 */
export function createdFields(
  obj: JsonObject,
  schema: Schema,
  gone: FieldNode,
): Record<string, unknown> | undefined {
  return objectFields(obj, schema, false, true, gone, true);
}

/**
 * An object's node: `member` as addedInto sets it, children in name order (the children of
 * an object are all f: elements, so name order is upstream's). At the top a null is absent.
 */
function objectFields(
  v: JsonObject,
  schema: Schema,
  member: boolean,
  inZero: boolean,
  gone: FieldNode | undefined,
  top = false,
): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = member ? { ".": {} } : {};
  let kids = 0;
  for (const k of Object.keys(v).sort()) {
    const x = v[k];
    if (top && x === null) continue;
    const pe = fieldPE(k);
    const g = gone?.children.get(pe);
    if (g?.member) continue;
    const f = addedFields(x, fieldDef(schema, k), inZero, g);
    if (f) {
      out[pe] = f;
      kids++;
    }
  }
  if (kids === 0) return member ? {} : undefined;
  return out;
}

/** addedInto, encoded directly (see createdFields); the path for errors is not kept here. */
function addedFields(
  v: unknown,
  def: FieldDef | undefined,
  parentInZero: boolean,
  gone: FieldNode | undefined,
): Record<string, unknown> | undefined {
  const inZero = parentInZero && def?.np === true;
  if (Array.isArray(v)) return listFields(v, def);
  if (!isObject(v) || def?.atomic) return {};
  return objectFields(v, schemaOf(def), !inZero, inZero, gone);
}

function listFields(list: unknown[], def: FieldDef | undefined): Record<string, unknown> | undefined {
  const lt = listType(def);
  if (lt === "atomic") return {};
  const kids: [string, Record<string, unknown>][] = [];
  const seen = new Set<string>();
  const itemDef: FieldDef = { type: def?.type };
  for (const item of list) {
    const pe = lt === "set" ? valuePE(item) : requireKey(item, def as FieldDef, "");
    if (seen.has(pe)) throw DUPLICATE_ITEM;
    seen.add(pe);
    kids.push([
      pe,
      lt === "map" && isObject(item) ? (addedFields(item, itemDef, false, undefined) ?? {}) : {},
    ]);
  }
  if (kids.length === 0) return undefined;
  // the items of one list are all k: or all v: elements
  if (kids.length > 1) kids.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const out: Record<string, unknown> = {};
  for (const [pe, f] of kids) out[pe] = f;
  return out;
}

export interface Comparison {
  /** Paths added or modified. */
  changed: FieldNode;
  /** Roots of removed subtrees. */
  removed: FieldNode;
}

/** What changed from `oldObj` to `newObj` (upstream's TypedValue.Compare). */
export function compareObjects(
  oldObj: JsonObject | undefined,
  newObj: JsonObject,
  schema: Schema,
): Comparison {
  const cmp: Comparison = { changed: newNode(), removed: newNode() };
  compareObject(oldObj ?? {}, newObj, schema, cmp.changed, cmp.removed, true, "");
  prune(cmp.changed);
  prune(cmp.removed);
  return cmp;
}

function compareObject(
  o: JsonObject,
  n: JsonObject,
  schema: Schema,
  changed: FieldNode,
  removed: FieldNode,
  inZero: boolean,
  at: string,
): void {
  for (const [k, nv] of Object.entries(n)) {
    const def = fieldDef(schema, k);
    const pe = fieldPE(k);
    if (!Object.hasOwn(o, k) || o[k] === null) {
      if (nv !== null) addedInto(nv, def, child(changed, pe), inZero, `${at}.${k}`);
      continue;
    }
    compareValue(
      o[k],
      nv,
      def,
      child(changed, pe),
      child(removed, pe),
      inZero && def?.np === true,
      `${at}.${k}`,
    );
  }
  for (const k of Object.keys(o)) {
    if ((!Object.hasOwn(n, k) || n[k] === null) && o[k] !== null) child(removed, fieldPE(k)).member = true;
  }
}

function compareValue(
  ov: unknown,
  nv: unknown,
  def: FieldDef | undefined,
  changed: FieldNode,
  removed: FieldNode,
  inZero: boolean,
  at: string,
): void {
  if (deepEqual(ov, nv)) return;
  if (isObject(ov) && isObject(nv) && !def?.atomic) {
    compareObject(ov, nv, schemaOf(def), changed, removed, inZero, at);
    return;
  }
  if (Array.isArray(ov) && Array.isArray(nv) && listType(def) !== "atomic") {
    compareList(ov, nv, def as FieldDef, changed, removed, at);
    return;
  }
  changed.member = true;
}

/**
 * The values of a set list, by deep equality. Scalars are found through a set of their
 * `v:` elements (a scan per item made a change to 5,000 finalizers take seconds); the rare
 * object items by a scan.
 */
export class ValueSet {
  private readonly scalars = new Set<string>();
  private readonly objects: unknown[] = [];

  constructor(items: unknown[] = []) {
    for (const v of items) this.add(v);
  }

  has(v: unknown): boolean {
    return isScalar(v) ? this.scalars.has(valuePE(v)) : this.objects.some((x) => deepEqual(x, v));
  }

  add(v: unknown): void {
    if (isScalar(v)) this.scalars.add(valuePE(v));
    else this.objects.push(v);
  }
}

const isScalar = (v: unknown) => typeof v !== "object" || v === null;

/** The items of `list` that `other` does not hold (deep equality). */
function notIn(list: unknown[], other: unknown[]): unknown[] {
  const have = new ValueSet(other);
  return list.filter((v) => !have.has(v));
}

function compareList(
  ov: unknown[],
  nv: unknown[],
  def: FieldDef,
  changed: FieldNode,
  removed: FieldNode,
  at: string,
): void {
  if (listType(def) === "set") {
    for (const v of notIn(nv, ov)) child(changed, valuePE(v)).member = true;
    for (const v of notIn(ov, nv)) child(removed, valuePE(v)).member = true;
    return;
  }
  const oldByKey = new Map<string, unknown>();
  for (const item of ov) {
    const key = itemKey(item, def);
    if (key) oldByKey.set(keyPE(key), item);
  }
  const seen = new Set<string>();
  for (const item of nv) {
    const pe = requireKey(item, def, at);
    seen.add(pe);
    const old = oldByKey.get(pe);
    if (old === undefined) {
      listInto([item], def, changed, at, true);
    } else if (isObject(old) && isObject(item)) {
      compareObject(old, item, schemaOf(def), child(changed, pe), child(removed, pe), false, at);
    }
  }
  for (const pe of oldByKey.keys()) if (!seen.has(pe)) child(removed, pe).member = true;
}
