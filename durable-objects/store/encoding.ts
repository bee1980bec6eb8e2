// How a shard's writes and answers are encoded: the bound on a stored object, the replies
// its RPC methods give, and telling a no-op update.

import { StatusError } from "../../api/errors";
import { deepEqual } from "../../api/patch/util";
import type { KubeObject } from "../../api/types";
import type { Answer, Reply } from "./protocol";

/**
 * The largest object stored, as etcd's default request limit (1.5 MiB); upstream answers 413
 * past it. Cloudflare bounds a Durable Object's SQLite row at 2 MB.
 */
export const MAX_STORED_BYTES = 1.5 * 1024 * 1024;
export const storedBytes = (s: string) =>
  s.length * 3 <= MAX_STORED_BYTES ? s.length : new TextEncoder().encode(s).length;

export const ok = (body: string, code?: number): Answer => ({ ok: true, body, code });

export function fail(e: unknown): Reply {
  if (e instanceof StatusError) return { ok: false, status: e.toStatus() };
  console.error("store shard error", e);
  const msg = e instanceof Error ? e.message : String(e);
  return { ok: false, status: new StatusError(500, "InternalError", msg).toStatus() };
}

/**
 * Whether an update writes nothing new. Upstream re-encodes every object in its type's field
 * order, so a PUT with the same content in another key order is a no-op there too; the
 * structural compare runs only when the encodings differ and have the same length.
 */
export function unchanged(obj: KubeObject, stored: string): boolean {
  const next = JSON.stringify(obj);
  return next === stored || (next.length === stored.length && deepEqual(obj, JSON.parse(stored)));
}
