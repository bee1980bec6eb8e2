// PATCH bodies applied to the current object (JSON, merge, strategic merge, server-side
// apply) and managedFields bookkeeping for every write.
import { field, invalid } from "../../api/errors";
import { applyPatch, applyPatchByContentType, fieldManagerFor, recordUpdate } from "../../api/patch";
import { apiVersionOf } from "../../api/resource";
import { rfc3339 } from "../../api/time";
import type { KubeObject } from "../../api/types";
import { decodeTypeError } from "../discovery/decode-types";
import { goMarshal, goSprint } from "../encoding/go-print";
import { checkTypeMeta } from "./prepare";
import type { WriteContext } from "./write-context";

/** fieldManager from the query, else the user agent's program name, as upstream. */
export function managerOf(w: WriteContext): string {
  const q = w.c.get("url").searchParams.get("fieldManager") ?? undefined;
  return fieldManagerFor(q, w.c.req.header("user-agent"));
}

export function applyPatchBody(
  w: WriteContext,
  old: KubeObject | undefined,
  body: unknown,
  type: string,
  force: boolean,
): KubeObject {
  const kind = w.def.kind;
  if (type === "application/apply-patch+yaml") {
    const manager = w.c.get("url").searchParams.get("fieldManager");
    if (!manager) {
      throw invalid({ group: "meta.k8s.io", kind: "PatchOptions" }, "", [
        field.required("fieldManager", "is required for apply patch"),
      ]);
    }
    const applied = checkTypeMeta(w.def, body);
    return applyPatch(old, applied, {
      manager,
      force,
      kind,
      now: rfc3339(),
      subresource: w.info.subresource || undefined,
      expectedApiVersion: apiVersionOf(w.def),
      defaults: w.def.strategy.defaults,
    });
  }
  const out = applyPatchByContentType(old, body, type, kind) as KubeObject;
  checkPatchedTypes(w, type, body, out);
  return checkTypeMeta(w.def, out);
}

/**
 * A patch whose result holds a value its field's Go type cannot: upstream decodes the result
 * into the type and fails with 422 Invalid on the field "patch", in the decoder's words,
 * quoting what it decoded. A merge or JSON patch's result is decoded from its JSON, which is
 * quoted (encoding/json's, keys sorted); a strategic merge patch's is converted from a map by
 * the unstructured converter, and the patch is quoted as fmt prints a map. The message names
 * no kind and no object (` "" is invalid: patch: Invalid value: ...`), as upstream's does.
 */
function checkPatchedTypes(w: WriteContext, type: string, patch: unknown, patched: KubeObject): void {
  const smp = type === "application/strategic-merge-patch+json";
  const why = decodeTypeError(apiVersionOf(w.def), w.def.kind, patched, smp ? "converter" : "json");
  if (!why) return;
  const quoted = smp ? goSprint(patch) : goMarshal(patched);
  throw invalid({ group: "", kind: "" }, "", [field.invalid("patch", quoted, why)]);
}

export function recordManagedFields(w: WriteContext, old: KubeObject | undefined, next: KubeObject): void {
  recordUpdate(old, next, {
    manager: managerOf(w),
    subresource: w.info.subresource || undefined,
    now: rfc3339(),
    kind: w.def.kind,
  });
}
