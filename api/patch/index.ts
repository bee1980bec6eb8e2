// PATCH dispatch by Content-Type. Server-side apply (application/apply-patch+yaml)
// needs a field manager and lives in apply.ts.

import { StatusError } from "../errors";
import { applyJsonPatch } from "./json-patch";
import { applyMergePatch } from "./merge-patch";
import { strategicMergePatch } from "./strategic-merge";

export { type ApplyOptions, applyPatch } from "./apply";
export { applyJsonPatch, decodeJsonPatch, MAX_JSON_PATCH_OPERATIONS, parsePointer } from "./json-patch";
export { LAST_APPLIED_ANNOTATION } from "./last-applied";
export {
  fieldManagerFor,
  fieldsToSet,
  recordUpdate,
  setToFields,
  type UpdateOptions,
} from "./managed-fields";
export { applyMergePatch } from "./merge-patch";
export { hasPatchMeta } from "./patch-meta";
export { strategicMergePatch } from "./strategic-merge";

export const JSON_PATCH = "application/json-patch+json";
export const MERGE_PATCH = "application/merge-patch+json";
export const STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json";
export const APPLY_PATCH = "application/apply-patch+yaml";

export interface PatchDispatchOptions {
  /** Custom resources have no strategic merge patch metadata: upstream answers 415. */
  customResource?: boolean;
}

/** Media type without parameters, lower-cased. */
export function patchMediaType(contentType: string): string {
  return contentType.split(";")[0].trim().toLowerCase();
}

function unsupportedPatch(customResource: boolean): StatusError {
  const accepted = customResource
    ? [JSON_PATCH, MERGE_PATCH, APPLY_PATCH]
    : [JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH];
  return new StatusError(
    415,
    "UnsupportedMediaType",
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(", ")}`,
  );
}

/**
 * Applies a JSON patch, JSON merge patch or strategic merge patch `body`
 * (already parsed JSON) to a copy of `original`, picking the engine from the
 * request's Content-Type. Apply patches and unknown types are 415.
 */
export function applyPatchByContentType(
  original: unknown,
  body: unknown,
  contentType: string,
  kind: string,
  opts: PatchDispatchOptions = {},
): unknown {
  const custom = opts.customResource ?? false;
  switch (patchMediaType(contentType)) {
    case JSON_PATCH:
      return applyJsonPatch(original, body);
    case MERGE_PATCH:
      return applyMergePatch(original, body);
    case STRATEGIC_MERGE_PATCH:
      if (custom) throw unsupportedPatch(true);
      return strategicMergePatch(original, body, kind);
    default:
      throw unsupportedPatch(custom);
  }
}
