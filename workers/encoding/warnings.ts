// The Warning header of a response (RFC 7234 warn-code 299, as kube-apiserver sends them):
// each text once, in the order they were added, and within a size a client and the HTTP
// stack take. Past 4,096 characters in all, every warning is cut to its first 256
// characters, and warnings that come once 4,096 are written again are dropped: a body that
// repeats 20,000 keys would otherwise be answered with a header of megabytes, which clients
// refuse (Python's http.client stops at 64 KB). Upstream's recorder behaves the same.

const TOTAL_LIMIT = 4 * 1024;
const CUT_TO = 256;

/** A text a warning header can carry: no control characters (upstream drops the others). */
function printable(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) return false;
  }
  return true;
}

/** Characters as a reader counts them (code points, not UTF-16 units). */
const length = (text: string) => [...text].length;
const cut = (text: string) => (length(text) > CUT_TO ? [...text].slice(0, CUT_TO).join("") : text);

/** The Warning header values for `texts`, in order, deduplicated and bounded as above. */
export function warningHeaders(texts: readonly string[]): string[] {
  const kept: string[] = [];
  const seen = new Set<string>();
  let written = 0;
  let cutting = false;
  for (const text of texts) {
    if (!text || seen.has(text) || !printable(text)) continue;
    if (cutting && written >= TOTAL_LIMIT) break;
    seen.add(text);
    const shown = cutting ? cut(text) : text;
    if (cutting || written + length(shown) <= TOTAL_LIMIT) {
      kept.push(shown);
      written += length(shown);
      continue;
    }
    // over the limit for the first time: everything so far again, cut, then this one
    cutting = true;
    kept.push(text);
    for (let i = 0; i < kept.length; i++) kept[i] = cut(kept[i]);
    written = kept.reduce((n, t) => n + length(t), 0);
  }
  return kept.map((t) => `299 - ${JSON.stringify(t)}`);
}
