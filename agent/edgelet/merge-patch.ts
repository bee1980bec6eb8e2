// RFC 7386 JSON merge patches: the patch that turns `from` into `to`. Arrays
// are replaced whole; removed keys become null.

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function isObj(v: unknown): v is Record<string, Json> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The merge patch from `from` to `to`, or undefined when they are equal. */
export function createMergePatch(from: unknown, to: unknown): Json | undefined {
  if (!isObj(from) || !isObj(to)) {
    return JSON.stringify(from) === JSON.stringify(to) ? undefined : ((to ?? null) as Json);
  }
  const out: Record<string, Json> = {};
  let changed = false;
  for (const k of Object.keys(from)) {
    if (!(k in to) || to[k] === undefined) {
      if (from[k] !== undefined && from[k] !== null) {
        out[k] = null;
        changed = true;
      }
    }
  }
  for (const [k, v] of Object.entries(to)) {
    if (v === undefined) continue;
    const sub = createMergePatch(from[k], v);
    if (sub !== undefined) {
      out[k] = sub;
      changed = true;
    }
  }
  return changed ? out : undefined;
}
