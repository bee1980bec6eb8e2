// A fast non-cryptographic hash of text, for names and fingerprints (ETags of discovery
// documents, a shard's keys for long watch views, the signature of stored field values).
// Not for anything a client could exploit a collision of.

/** A fast non-cryptographic 64-bit hash (two FNV-1a lanes), upper-case hex. */
export function hashText(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x9e3779b9;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
  }
  const hex = (n: number) => (n >>> 0).toString(16).padStart(8, "0");
  return (hex(a) + hex(b)).toUpperCase();
}
