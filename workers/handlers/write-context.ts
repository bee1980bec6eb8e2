// What every handler of a request is given: the request, what it is about, the resource's
// def and store, the write options (dry run, field validation), and the warnings to send; and
// the answer of a write in the encoding the client accepts, with those warnings.
import type { Context } from "hono";
import type { ResourceDef } from "../../api/resource";
import type { Store } from "../../durable-objects/store/client";
import type { AppEnv } from "../app-env";
import { encoded } from "../encoding/respond";
import { warningHeaders } from "../encoding/warnings";
import type { RequestInfo } from "../request-info";

/** The fieldValidation query parameter: what to do with unknown or repeated fields. */
export type FieldValidation = "Strict" | "Warn" | "Ignore";

export interface WriteContext {
  c: Context<AppEnv>;
  info: RequestInfo;
  def: ResourceDef;
  store: Store;
  dryRun: boolean;
  fieldValidation: FieldValidation;
  warnings: string[];
}

/** A write's answer in the encoding the client accepts, with the warnings the write made. */
export function respondWith(w: WriteContext, text: string, code: number): Response {
  const headers: Record<string, string> = {};
  // each text once (a patch retried on a conflict checks again), and bounded (warnings.ts)
  if (w.warnings.length) headers.warning = warningHeaders(w.warnings).join(", ");
  return encoded(text, code, w.c.req.header("accept") ?? null, headers);
}
