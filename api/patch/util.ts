// Small JSON helpers shared by the patch engines. Values are plain JSON:
// objects, arrays, strings, numbers, booleans and null.

import { StatusError } from "../errors";

export type JsonObject = Record<string, unknown>;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Deep copy of a JSON value (undefined stays undefined). */
export function clone<T>(v: T): T {
  if (Array.isArray(v)) return v.map((x) => clone(x)) as T;
  if (isObject(v)) {
    const out: JsonObject = {};
    for (const [k, x] of Object.entries(v)) out[k] = clone(x);
    return out as T;
  }
  return v;
}

/** Structural equality of two JSON values; object key order does not matter. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => deepEqual(x, b[i]));
  }
  if (isObject(a)) {
    if (!isObject(b)) return false;
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

/**
 * The 422 kube-apiserver answers when a patch is well formed but cannot be
 * applied: errors.NewGenericServerResponse(422, ...) keeps only its generic
 * message; the specific reason rides along as `cause` for logs.
 */
export function patchNotApplicable(detail: string): StatusError {
  const err = new StatusError(
    422,
    "Invalid",
    "the server rejected our request due to an error in our request",
    {},
  );
  Object.defineProperty(err, "cause", { value: new Error(detail), enumerable: false });
  return err;
}

/** Go's %v rendering is not worth copying; JSON is close enough for messages. */
export function show(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
