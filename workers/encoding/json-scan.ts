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

/** A key that repeats an earlier key of its object. */
export interface RepeatedKey {
  /** where the key sits, as upstream's strict decoding names fields: spec.containers[0].name */
  path: string;
  key: string;
  /** offset of the repetition in the text */
  at: number;
}

/** Every key repeated in one object, in text order, and where each key path first occurs. */
export interface KeyScan {
  repeats: RepeatedKey[];
  firstAt: Map<string, number>;
}

interface Open {
  path: string;
  /** the object's keys so far; null for an array */
  keys: Set<string> | null;
  /** the array's item index, or the object's current key */
  index: number;
  key: string;
}

const childPath = (top: Open | undefined): string => {
  if (!top) return "";
  if (!top.keys) return `${top.path}[${top.index}]`;
  return top.path ? `${top.path}.${top.key}` : top.key;
};

/**
 * The repeated keys of JSON text with their paths, and where each key path first occurs. A
 * path for every key costs more than JSON.parse: repeatedKeys runs it only when a key may
 * be repeated.
 */
export function scanKeys(text: string): KeyScan {
  const repeats: RepeatedKey[] = [];
  const firstAt = new Map<string, number>();
  const open: Open[] = [];
  let atKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const j = endOfString(text, i) - 1;
      const top = open[open.length - 1];
      if (atKey && top?.keys) {
        const raw = text.slice(i + 1, j);
        const key = raw.includes("\\") ? (JSON.parse(text.slice(i, j + 1)) as string) : raw;
        top.key = key;
        const path = childPath(top);
        if (top.keys.has(key)) repeats.push({ path, key, at: i });
        else {
          top.keys.add(key);
          if (!firstAt.has(path)) firstAt.set(path, i);
        }
        atKey = false;
      }
      i = j;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      const object = c === 0x7b;
      open.push({
        path: childPath(open[open.length - 1]),
        keys: object ? new Set() : null,
        index: 0,
        key: "",
      });
      atKey = object;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      open.pop();
      atKey = false;
    } else if (c === 0x2c /* , */) {
      const top = open[open.length - 1];
      if (top?.keys) atKey = true;
      else if (top) top.index++;
    }
  }
  return { repeats, firstAt };
}

/** A lookup of the 1-based line of an offset in `text`, indexed once. */
export function lineIndex(text: string): (at: number) => number {
  const starts = [0];
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  return (at) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= at) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
}

/** How many keys the parsed JSON value holds, in all its objects. */
function keysIn(value: unknown): number {
  if (typeof value !== "object" || value === null) return 0;
  let n = 0;
  if (Array.isArray(value)) {
    for (const v of value) n += keysIn(v);
    return n;
  }
  for (const k in value) n += 1 + keysIn((value as Record<string, unknown>)[k]);
  return n;
}

/**
 * Whether JSON text whose parse is `value` may repeat a key: a quick test for the common
 * case, compact JSON (no space between a key and its colon). There every key ends in `":`
 * with its quote after an even number of backslashes, and nothing else does (`\":` is a
 * quote inside a string). When such marks are no more than the keys the value holds, none
 * was repeated (JSON.parse keeps one key of each repetition). Otherwise, or when a quote is
 * followed by space and a colon anywhere, scanKeys decides. ~1 µs for a pod, where a
 * scan of every character took several in workerd.
 */
export function mayRepeatKeys(text: string, value: unknown): boolean {
  if (/"\s+:/.test(text)) return true;
  let marks = 0;
  for (let i = text.indexOf('":'); i >= 0; i = text.indexOf('":', i + 2)) {
    let b = i - 1;
    while (text.charCodeAt(b) === 0x5c) b--;
    if ((i - 1 - b) % 2 === 0) marks++;
  }
  return marks !== keysIn(value);
}

/**
 * The keys JSON text repeats in one object, when it repeats any. JSON.parse (whose result is
 * `value`) keeps the last value of a repeated key without a word; field validation reports
 * it, as upstream does.
 */
export function repeatedKeys(text: string, value: unknown): KeyScan | undefined {
  if (!mayRepeatKeys(text, value)) return undefined;
  const scan = scanKeys(text);
  return scan.repeats.length ? scan : undefined;
}

/** A number as its JSON text wrote it, where the text says more than the value: `1e3`, `80.0`. */
export class NumberText {
  constructor(
    readonly value: number,
    readonly text: string,
  ) {}
}

/**
 * Whether JSON text may write a number with a fraction or an exponent (after a key or in a
 * list): a cheap test, true for some texts that hold none (`"a,1.5"` in a string), never
 * false for one that holds one.
 */
export function mayWriteFractions(text: string): boolean {
  return /":\s*-?\d+[.eE]|[[,]\s*-?\d+[.eE]/.test(text);
}

/**
 * JSON text's value again, with each number written with a fraction or an exponent kept as
 * a NumberText, when it has any (undefined otherwise). Go's decoder refuses `1e3` or `80.0`
 * for an integer field, whose value JSON.parse makes the same as `1000` or `80`. Read with
 * JSON.parse's source text access (workerd has it; where the runtime does not, as in Node
 * 20, nothing is marked). A second parse: decode-types.ts asks for it only when a body it
 * checks has an integer field.
 */
export function numberTexts(text: string): unknown | undefined {
  let marked = false;
  const value = JSON.parse(text, (_key, v: unknown, context?: { source?: string }) => {
    if (typeof v !== "number" || !context?.source || !/[.eE]/.test(context.source)) return v;
    marked = true;
    return new NumberText(v, context.source);
  });
  return marked ? value : undefined;
}
