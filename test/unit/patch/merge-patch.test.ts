import { describe, expect, it } from "vitest";
import type { StatusError } from "../../../api/errors";
import { applyMergePatch } from "../../../api/patch/merge-patch";

describe("RFC 7386 merge patch", () => {
  it("merges objects recursively, null deletes, arrays replace", () => {
    const original = { a: "b", c: { d: "e", f: "g" }, list: [1, 2, 3] };
    const out = applyMergePatch(original, { a: "z", c: { f: null, h: 1 }, list: [4] });
    expect(out).toEqual({ a: "z", c: { d: "e", h: 1 }, list: [4] });
    expect(original).toEqual({ a: "b", c: { d: "e", f: "g" }, list: [1, 2, 3] });
  });

  it("matches the RFC 7386 appendix examples", () => {
    const cases: [unknown, unknown, unknown][] = [
      [{ a: "b" }, { a: "c" }, { a: "c" }],
      [{ a: "b" }, { b: "c" }, { a: "b", b: "c" }],
      [{ a: "b" }, { a: null }, {}],
      [{ a: [{ b: "c" }] }, { a: [1] }, { a: [1] }],
      [{ a: { b: "c" } }, { a: { b: "d", c: null } }, { a: { b: "d" } }],
      [{ e: null }, { a: 1 }, { e: null, a: 1 }],
      [[1, 2], { a: "b", c: null }, { a: "b" }],
      [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
    ];
    for (const [target, patch, result] of cases) expect(applyMergePatch(target, patch)).toEqual(result);
  });

  it("rejects a non-object patch with 400", () => {
    try {
      applyMergePatch({}, [1]);
      throw new Error("no error");
    } catch (e) {
      expect((e as StatusError).code).toBe(400);
    }
  });
});
