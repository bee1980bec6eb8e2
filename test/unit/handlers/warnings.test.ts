// workers/encoding/warnings.ts: the Warning header, deduplicated and bounded as kube-apiserver bounds it.
import { describe, expect, it } from "vitest";
import { warningHeaders } from "../../../workers/encoding/warnings";

const texts = (headers: string[]) => headers.map((h) => JSON.parse(h.slice("299 - ".length)) as string);

describe("Warning headers", () => {
  it("keeps each text once, in order, quoted as a 299 warning", () => {
    const h = warningHeaders(["one", 'two "quoted" \\', "one", "", "three"]);
    expect(h[1]).toBe('299 - "two \\"quoted\\" \\\\"');
    expect(texts(h)).toEqual(["one", 'two "quoted" \\', "three"]);
  });

  it("drops texts a header cannot carry", () => {
    expect(texts(warningHeaders(["a\nb", "tab\tok", "bell\u0007"]))).toEqual(["tab\tok"]);
  });

  it("keeps everything up to 4,096 characters in all", () => {
    const many = Array.from({ length: 16 }, (_, i) => `${String(i).padStart(2, "0")}${"x".repeat(254)}`);
    expect(texts(warningHeaders(many))).toEqual(many); // 16 x 256 = 4,096
  });

  it("past 4,096 characters cuts every text to 256 and stops once 4,096 are written again", () => {
    const long = (c: string) => c.repeat(1000);
    const all = [long("a"), "short", long("b"), long("c"), long("d"), long("e")];
    // a+short+b+c+d = 4,005; e passes 4,096: everything so far again, cut to 256
    const out = texts(
      warningHeaders([...all, ...Array.from({ length: 40 }, (_, i) => `w${i}${"z".repeat(300)}`)]),
    );
    expect(out.slice(0, 6)).toEqual(
      ["a", "short", "b", "c", "d", "e"].map((c) => (c === "short" ? c : c.repeat(256))),
    );
    // the rest, cut, while fewer than 4,096 are written; then nothing more
    const total = out.reduce((n, t) => n + t.length, 0);
    expect(out.every((t) => t.length <= 256)).toBe(true);
    expect(total).toBeGreaterThanOrEqual(4096);
    expect(total - out[out.length - 1].length).toBeLessThan(4096);
    expect(out.length).toBeLessThan(20);
  });

  it("counts characters, not UTF-16 units, and cuts on a character", () => {
    const emoji = "😀".repeat(300); // 300 characters, 600 UTF-16 units
    const out = texts(warningHeaders([emoji, "x".repeat(3900)]));
    expect(out[0]).toBe("😀".repeat(256));
  });
});
