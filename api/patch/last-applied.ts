// Interplay of server-side apply with kubectl's client-side apply
// annotation, as upstream's lastAppliedManager / lastAppliedUpdater do it
// for the "kubectl" field manager: conflicts on fields whose live value is
// still what the last client-side apply set are not conflicts (so
// `kubectl apply --server-side` can take over from `kubectl apply`), and
// the annotation is kept in sync with what was applied.

import type { KubeObject } from "../types";
import { appliedFieldSet, compareObjects } from "./field-walk";
import { difference, type FieldNode, type FieldPath, lookup, withoutSubtrees } from "./fieldset";
import { managedFieldsAside, stripIgnored } from "./managed-fields";
import type { Schema } from "./patch-meta";
import { clone, isObject, type JsonObject } from "./util";

export const LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration";
export const KUBECTL_MANAGER = "kubectl";

function lastApplied(obj: KubeObject | undefined): string | undefined {
  const v = obj?.metadata?.annotations?.[LAST_APPLIED_ANNOTATION];
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** Fields the last client-side apply set and that still hold the values it set. */
export function allowedConflicts(
  live: KubeObject,
  schema: Schema,
  subresource?: string,
  defaults?: (obj: KubeObject) => void,
): FieldNode | undefined {
  const text = lastApplied(live);
  if (!text) return undefined;
  let last: unknown;
  try {
    last = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(last)) return undefined;
  if (defaults) {
    // Defaulted as the live object was when it was written: an atomic field (a fieldRef, a
    // claim template) whose live value holds defaults the configuration left out is still the
    // value the client-side apply set. Upstream gives up on the annotation if this fails.
    if (!isObject(last.metadata)) last.metadata = {};
    try {
      defaults(last as KubeObject);
    } catch {
      return undefined;
    }
  }
  const lastSet = stripIgnored(appliedFieldSet(last, schema), subresource);
  const cmp = compareObjects(last, managedFieldsAside(live) as JsonObject, schema);
  return withoutSubtrees(difference(lastSet, cmp.changed), cmp.removed);
}

export function isAllowed(allowed: FieldNode, path: FieldPath): boolean {
  return lookup(allowed, path)?.member === true;
}

function sortedKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortedKeys);
  if (isObject(v)) {
    const out: JsonObject = {};
    for (const k of Object.keys(v).sort()) out[k] = sortedKeys(v[k]);
    return out;
  }
  return v;
}

/** Rewrites the annotation of `result` (if it has one) from the applied configuration. */
export function syncLastApplied(result: KubeObject, applied: KubeObject): void {
  if (!lastApplied(result)) return;
  const copy = clone(applied);
  if (copy.metadata?.annotations) delete copy.metadata.annotations[LAST_APPLIED_ANNOTATION];
  result.metadata.annotations = {
    ...result.metadata.annotations,
    [LAST_APPLIED_ANNOTATION]: `${JSON.stringify(sortedKeys(copy))}\n`,
  };
}
