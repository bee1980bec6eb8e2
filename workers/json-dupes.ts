// The first key that appears twice in one object of a JSON text. JSON.parse keeps the last
// value of a repeated key without a word; a YAML reader refuses the document. A body sent as
// YAML that is JSON text is read with JSON.parse (body.ts), ~100x faster than the YAML
// reader, and this keeps the refusal. The text must already be valid JSON.
export function duplicateKey(text: string): string | undefined {
  /** per open object its keys so far; null for an open array */
  const open: (Set<string> | null)[] = [];
  let atKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let j = i + 1;
      for (;;) {
        const d = text.charCodeAt(j);
        if (d === 0x5c /* \ */) j += 2;
        else if (d === 0x22) break;
        else j++;
      }
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
