// metadata.managedFields: decoding, encoding and the bookkeeping of ordinary
// writes (operation "Update"), in upstream's wire shape.

import { wireTime } from "../time";
import type { KubeObject, ManagedFieldsEntry } from "../types";
import { compareObjects, createdFields, DUPLICATE_ITEM } from "./field-walk";
import {
  cloneNode,
  difference,
  type FieldNode,
  fieldsToSet,
  isEmpty,
  newNode,
  pathsTree,
  setToFields,
  union,
  withoutSubtrees,
} from "./fieldset";
import { rootSchema } from "./patch-meta";
import type { JsonObject } from "./util";

export { fieldsToSet, setToFields } from "./fieldset";

/** Upstream keeps at most this many Update entries; older ones merge into "ancient-changes". */
export const MAX_UPDATE_MANAGERS = 10;
export const ANCIENT_CHANGES_MANAGER = "ancient-changes";
export const BEFORE_FIRST_APPLY_MANAGER = "before-first-apply";

export interface ManagerEntry {
  manager: string;
  operation: "Apply" | "Update";
  apiVersion: string;
  time?: string;
  subresource?: string;
  set: FieldNode;
}

/** Identity of an entry as upstream builds it: Apply entries ignore apiVersion. */
export function entryId(
  e: Pick<ManagerEntry, "manager" | "operation" | "apiVersion" | "subresource">,
): string {
  return JSON.stringify([
    e.manager,
    e.operation,
    e.operation === "Apply" ? "" : e.apiVersion,
    e.subresource ?? "",
  ]);
}

export function decodeManagedFields(entries: ManagedFieldsEntry[] | undefined): ManagerEntry[] {
  return (entries ?? []).map((e) => ({
    manager: e.manager ?? "",
    operation: e.operation === "Apply" ? "Apply" : "Update",
    apiVersion: e.apiVersion ?? "",
    time: e.time,
    subresource: e.subresource || undefined,
    set: fieldsToSet(e.fieldsV1 ?? {}),
  }));
}

/** Encodes entries, dropping empty ones, sorted as upstream sorts them. */
export function encodeManagedFields(entries: ManagerEntry[]): ManagedFieldsEntry[] {
  const secs = (t?: string) => (t ? Math.floor(new Date(t).getTime() / 1000) || 0 : 0);
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return entries
    .filter((e) => !isEmpty(e.set))
    .sort(
      (p, q) =>
        cmp(p.operation, q.operation) ||
        secs(p.time) - secs(q.time) ||
        cmp(p.manager, q.manager) ||
        cmp(p.apiVersion, q.apiVersion) ||
        cmp(p.subresource ?? "", q.subresource ?? ""),
    )
    .map((e) => {
      const out: ManagedFieldsEntry = {
        manager: e.manager,
        operation: e.operation,
        apiVersion: e.apiVersion,
      };
      if (e.time) out.time = e.time;
      out.fieldsType = "FieldsV1";
      out.fieldsV1 = setToFields(e.set);
      if (e.subresource) out.subresource = e.subresource;
      return out;
    });
}

const STRIPPED: string[][] = [
  ["f:apiVersion"],
  ["f:kind"],
  ...[
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "clusterName",
    "generation",
    "managedFields",
    "resourceVersion",
  ].map((f) => ["f:metadata", `f:${f}`]),
];

/**
 * Fields no manager owns: type and identity metadata always; status on the
 * main resource, and everything but status on the status subresource.
 */
export function stripIgnored(set: FieldNode, subresource?: string): FieldNode {
  if (subresource === "status") {
    // none of the stripped paths lies under status
    const only = newNode();
    const status = set.children.get("f:status");
    if (status && !isEmpty(status)) only.children.set("f:status", cloneNode(status));
    return only;
  }
  return withoutSubtrees(set, STRIPPED_AND_STATUS);
}

/** The stripped paths and status as one tree: one walk instead of one per path. */
const STRIPPED_AND_STATUS = pathsTree([...STRIPPED, ["f:status"]]);

/**
 * The object without metadata.managedFields, for reading only: it shares everything but its
 * top level and metadata with `obj` (a deep copy of a whole pod per write, only to compare
 * it, was a good part of a status update's cost).
 */
export function managedFieldsAside(obj: KubeObject): KubeObject {
  if (!obj.metadata || !("managedFields" in obj.metadata)) return obj;
  const { managedFields: _, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

/** Folds the oldest Update entries into "ancient-changes" once there are too many. */
export function capUpdateManagers(entries: ManagerEntry[]): ManagerEntry[] {
  const updates = entries.filter((e) => e.operation === "Update");
  if (updates.length <= MAX_UPDATE_MANAGERS) return entries;
  const byTime = [...updates].sort((a, b) => (a.time ?? "").localeCompare(b.time ?? ""));
  const drop = new Set<ManagerEntry>();
  let bucket: ManagerEntry | undefined = entries.find(
    (e) => e.manager === ANCIENT_CHANGES_MANAGER && e.operation === "Update",
  );
  let count = updates.length;
  for (const e of byTime) {
    if (count <= MAX_UPDATE_MANAGERS) break;
    if (e === bucket) continue;
    if (!bucket) {
      bucket = { ...e, manager: ANCIENT_CHANGES_MANAGER, subresource: undefined };
      drop.add(e);
      continue; // renaming the oldest entry keeps the count
    }
    bucket.set = union(bucket.set, e.set);
    bucket.time = e.time;
    drop.add(e);
    count--;
  }
  const kept = entries.filter((e) => !drop.has(e));
  if (bucket && !kept.includes(bucket)) kept.push(bucket);
  return kept;
}

export interface UpdateOptions {
  /** Field manager, e.g. "kubectl-edit", "kubectl-client-side-apply", "kube-controller-manager". */
  manager: string;
  operation?: "Update";
  /** "status", "scale", ... for writes through a subresource. */
  subresource?: string;
  /** Current time, RFC 3339. */
  now: string;
  kind: string;
}

/**
 * Records an ordinary create/update/patch in `newObj.metadata.managedFields`
 * (mutating `newObj`): the manager gains the fields it added or changed,
 * every manager loses the fields that were removed, and other managers lose
 * the fields this write changed. Pass `oldObj` undefined for a create.
 */
export function recordUpdate(oldObj: KubeObject | undefined, newObj: KubeObject, opts: UpdateOptions): void {
  newObj.metadata ??= {};
  const sent = newObj.metadata.managedFields;
  let entries: ManagerEntry[];
  if (opts.subresource) {
    entries = decodeManagedFields(oldObj?.metadata?.managedFields);
  } else if (Array.isArray(sent) && sent.length === 0) {
    entries = []; // an explicit empty list resets managed fields
  } else {
    entries = decodeManagedFields(sent?.length ? sent : oldObj?.metadata?.managedFields);
  }
  delete newObj.metadata.managedFields;
  // Upstream starts tracking on create, and never on an update of an
  // object that has no managed fields yet (until the first apply).
  if (oldObj && entries.length === 0) return;

  const schema = rootSchema(opts.kind);
  const apiVersion = newObj.apiVersion ?? oldObj?.apiVersion ?? "";
  if (!oldObj && !opts.subresource && entries.length === 0) {
    // a plain create: the one manager owns everything it sent (what the walk below finds)
    try {
      const fieldsV1 = createdFields(newObj as JsonObject, schema, STRIPPED_AND_STATUS);
      if (fieldsV1) {
        const time = wireTime(opts.now);
        newObj.metadata.managedFields = [
          { manager: opts.manager, operation: "Update", apiVersion, time, fieldsType: "FieldsV1", fieldsV1 },
        ];
      }
      return;
    } catch (e) {
      if (e !== DUPLICATE_ITEM) return; // as below: never refused for field tracking
    }
  }
  const before = oldObj ? (managedFieldsAside(oldObj) as JsonObject) : undefined;
  let cmp: ReturnType<typeof compareObjects>;
  try {
    cmp = compareObjects(before, newObj as JsonObject, schema);
  } catch {
    // Upstream's UpdateNoErrors: a write is never refused for field
    // tracking (e.g. a keyed list item without its key); the object just
    // loses its managed fields.
    return;
  }
  const changed = stripIgnored(cmp.changed, opts.subresource);
  const removed = stripIgnored(cmp.removed, opts.subresource);
  const id = entryId({
    manager: opts.manager,
    operation: "Update",
    apiVersion,
    subresource: opts.subresource,
  });

  for (const e of entries) {
    e.set = withoutSubtrees(difference(e.set, changed), removed);
  }
  if (!isEmpty(changed)) {
    const mine = entries.find((e) => entryId(e) === id);
    if (mine) {
      mine.set = union(mine.set, changed);
      mine.time = wireTime(opts.now);
    } else {
      entries.push({
        manager: opts.manager,
        operation: "Update",
        apiVersion,
        time: wireTime(opts.now),
        subresource: opts.subresource,
        set: changed,
      });
    }
  }
  const encoded = encodeManagedFields(capUpdateManagers(entries));
  if (encoded.length > 0) newObj.metadata.managedFields = encoded;
}

/** Upstream's FieldManagerMaxLength. */
export const FIELD_MANAGER_MAX_LENGTH = 128;

/**
 * The manager name of a write: ?fieldManager= when given, else the user
 * agent up to its first "/" ("kubectl/v1.32.0 (linux/amd64)" -> "kubectl"),
 * without unprintable characters and cut at 128 characters.
 */
export function fieldManagerFor(fieldManager: string | undefined, userAgent: string | undefined): string {
  if (fieldManager) return fieldManager;
  let out = "";
  for (const ch of (userAgent ?? "").split("/")[0]) {
    if (/[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}]/u.test(ch)) continue;
    if (out.length >= FIELD_MANAGER_MAX_LENGTH) break;
    out += ch;
  }
  return out;
}
