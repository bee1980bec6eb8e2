// A cheap fingerprint of an object, to tell whether an admission plugin changed it (a pod's
// flow trace): FNV-1a over keys, array lengths, numbers, booleans and, of each string, its
// length and three of its characters. About a third of a JSON.stringify of a pod; a change
// that keeps a string's length and those characters goes unseen. managedFields are skipped
// (no plugin writes them).
const PRIME = 16777619;

export function fingerprint(v: unknown, h = 2166136261): number {
  if (v === null || v === undefined) return Math.imul(h ^ 7, PRIME);
  switch (typeof v) {
    case "string": {
      const n = v.length;
      if (n === 0) return Math.imul(h ^ 11, PRIME);
      return Math.imul(
        h ^ n ^ (v.charCodeAt(0) << 8) ^ (v.charCodeAt(n >> 1) << 16) ^ (v.charCodeAt(n - 1) << 24),
        PRIME,
      );
    }
    case "number":
      return Math.imul(h ^ (v | 0) ^ Math.round((v % 1) * 1e6) ^ 0x5bd1, PRIME);
    case "boolean":
      return Math.imul(h ^ (v ? 3 : 5), PRIME);
    case "object": {
      if (Array.isArray(v)) {
        h = Math.imul(h ^ v.length ^ 0x9e37, PRIME);
        for (let i = 0; i < v.length; i++) h = fingerprint(v[i], h);
        return h;
      }
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o);
      h = Math.imul(h ^ keys.length ^ 0x2c1b, PRIME);
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i];
        if (k === "managedFields") continue;
        h = fingerprint(k, h);
        h = fingerprint(o[k], h);
      }
      return h;
    }
  }
  return h;
}

/** A string's part of a fingerprint: its length and three of its characters. */
function fingerprintString(h: number, v: unknown): number {
  if (typeof v !== "string") return fingerprint(v, h);
  const n = v.length;
  if (n === 0) return Math.imul(h ^ 11, PRIME);
  return Math.imul(
    h ^ n ^ (v.charCodeAt(0) << 8) ^ (v.charCodeAt(n >> 1) << 16) ^ (v.charCodeAt(n - 1) << 24),
    PRIME,
  );
}

/** Keys and values of a string map (labels, annotations). */
function fingerprintMap(h: number, m: Record<string, unknown> | undefined): number {
  if (!m || typeof m !== "object") return h;
  for (const k in m) h = fingerprintString(fingerprintString(h, k), m[k]);
  return h;
}

/** How many keys an object has, without a list of them. */
function keyCount(o: object): number {
  let n = 0;
  for (const _ in o) n++;
  return n;
}

/**
 * A much cheaper probe of the places admission plugins write (metadata's labels, annotations,
 * owners and finalizers; spec's fields one level deep; each container's fields, env, mounts
 * and resources): run after every plugin, so it allocates nothing. It misses a change
 * elsewhere (deeper in a volume, say), and one that keeps an annotation's length and ends.
 */
export function shapeProbe(obj: unknown): number {
  const o = obj as { metadata?: Record<string, any>; spec?: Record<string, any> } | undefined;
  let h = 2166136261;
  const m = o?.metadata;
  if (m) {
    h = Math.imul(h ^ keyCount(m), PRIME);
    h = fingerprintMap(fingerprintMap(h, m.labels), m.annotations);
    h = Math.imul(h ^ (m.ownerReferences?.length ?? 0) ^ ((m.finalizers?.length ?? 0) << 8), PRIME);
  }
  const spec = o?.spec;
  if (!spec) return h;
  let i = 0;
  for (const k in spec) {
    const v = spec[k];
    if (Array.isArray(v)) h = Math.imul(h ^ v.length ^ (i << 12), PRIME);
    else if (v === null || typeof v !== "object") h = fingerprint(v, h);
    else h = Math.imul(h ^ keyCount(v) ^ (i << 12), PRIME);
    i++;
  }
  h = Math.imul(h ^ i, PRIME);
  return containersProbe(containersProbe(h, spec.initContainers), spec.containers);
}

function containersProbe(h: number, list: unknown): number {
  if (!Array.isArray(list)) return h;
  for (const c of list) {
    if (!c || typeof c !== "object") continue;
    h = Math.imul(h ^ keyCount(c), PRIME);
    h = Math.imul(h ^ (c.env?.length ?? 0) ^ ((c.volumeMounts?.length ?? 0) << 8), PRIME);
    const r = c.resources;
    if (r && typeof r === "object") {
      // requests and limits as string maps, without the generic walk's key lists
      h = Math.imul(h ^ keyCount(r), PRIME);
      h = fingerprintMap(fingerprintMap(h, r.requests), r.limits);
      if (r.claims) h = fingerprint(r.claims, h);
    }
    h = fingerprintString(h, c.image);
  }
  return h;
}
