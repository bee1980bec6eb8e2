// Scans of JSON text that JSON.parse does not make: keys repeated in one object, and how
// deeply the text nests. The text must already be valid JSON.

/** Index just past the string whose opening quote is at `i`. */
function endOfString(text: string, i: number): number {
  let j = i + 1;
  for (;;) {
    const d = text.charCodeAt(j);
    if (d === 0x5c /* \ */) j += 2;
    else if (d === 0x22 /* " */) return j + 1;
    else j++;
  }
}

/**
 * Whether arrays and objects nest more than `max` deep. JSON.parse takes any depth, but
 * what walks the value afterwards (validation, defaulting, patches, managed fields) recurses,
 * and a body nested thousands deep overflowed its stack as a 500.
 */
export function nestsDeeper(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) i = endOfString(text, i) - 1;
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > max) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
  }
  return false;
}

/**
 * The first key that appears twice in one object. JSON.parse keeps the last value of a
 * repeated key without a word; a YAML reader refuses the document. A body sent as YAML that
 * is JSON text is read with JSON.parse (body.ts), ~100x faster than the YAML reader, and
 * this keeps the refusal.
 */
export function duplicateKey(text: string): string | undefined {
  /** per open object its keys so far; null for an open array */
  const open: (Set<string> | null)[] = [];
  let atKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const j = endOfString(text, i) - 1;
      const keys = open[open.length - 1];
      if (atKey && keys) {
        const raw = text.slice(i + 1, j);
        const key = raw.includes("\\") ? (JSON.parse(text.slice(i, j + 1)) as string) : raw;
        if (keys.has(key)) return key;
        keys.add(key);
        atKey = false;
      }
      i = j;
    } else if (c === 0x7b /* { */) {
      open.push(new Set());
      atKey = true;
    } else if (c === 0x5b /* [ */) {
      open.push(null);
      atKey = false;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      open.pop();
      atKey = false;
    } else if (c === 0x2c /* , */) {
      atKey = open[open.length - 1] != null;
    }
  }
  return undefined;
}
