// PATCH bodies applied to the current object (JSON, merge, strategic merge, server-side
// apply) and managedFields bookkeeping for every write.
import type { Context } from "hono";
import { applyPatch, applyPatchByContentType, recordUpdate } from "../../api/patch";
import type { KubeObject } from "../../api/types";
import type { AppEnv } from "../app-env";
import { checkTypeMeta } from "./prepare";
import type { WriteContext } from "./resource";

/** fieldManager from the query, else the user agent's program name, as upstream. */
export function managerOf(c: Context<AppEnv>, _op: "Apply" | "Update"): string {
  const q = new URL(c.req.url).searchParams.get("fieldManager");
  if (q) return q;
  const ua = c.req.header("user-agent") ?? "unknown";
  return ua.split("/")[0] || "unknown";
}

function now(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
}

export function applyPatchBody(
  w: WriteContext,
  old: KubeObject | undefined,
  body: unknown,
  type: string,
  force: boolean,
): KubeObject {
  const kind = w.info.subresource === "scale" ? "Scale" : w.def.kind;
  if (type === "application/apply-patch+yaml") {
    const applied = checkTypeMeta(w.def, body);
    return applyPatch(old, applied, {
      manager: managerOf(w.c, "Apply"),
      force,
      kind,
      now: now(),
      subresource: w.info.subresource || undefined,
    } as never) as KubeObject;
  }
  const out = applyPatchByContentType(old, body, type, kind) as KubeObject;
  return checkTypeMeta(w.def, out);
}

export function recordManagedFields(w: WriteContext, old: KubeObject | undefined, next: KubeObject, manager: string): void {
  recordUpdate(old, next, {
    manager,
    operation: "Update",
    subresource: w.info.subresource || undefined,
    now: now(),
    kind: w.def.kind,
  });
}
