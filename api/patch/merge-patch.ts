// RFC 7386 JSON merge patch. kube-apiserver only accepts an object as a
// merge patch document; anything else is 400 BadRequest.

import { badRequest } from "../errors";
import { clone, isObject, type JsonObject } from "./util";

function mergeInto(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return clone(patch);
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergeInto(out[k], v);
  }
  return out;
}

/** Applies `patch` to a copy of `original`; neither argument is modified. */
export function applyMergePatch(original: unknown, patch: unknown): unknown {
  if (!isObject(patch)) throw badRequest("Invalid JSON Patch");
  return mergeInto(clone(original), patch);
}
