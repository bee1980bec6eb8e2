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
