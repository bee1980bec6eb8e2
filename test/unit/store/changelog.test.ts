// changesAfter's bounds: an informer's pull crosses to it as one call's answer, which workerd
// caps at 32 MiB, so a read stops at a budget of JSON characters as well as at its count, and
// says how far it reached.
import { describe, expect, it } from "vitest";
import { CHANGES_MAX_CHARS, changesAfter } from "../../../durable-objects/store/changelog";

/** A change log of `sizes.length` changes from revision 11, each `sizes[i]` characters of JSON. */
function log(sizes: number[]): SqlStorage {
  const rows = sizes.map((n, i) => ({ rv: 11 + i, type: "ADDED", data: "x".repeat(n) }));
  const exec = (query: string, after: number, limit: number) => {
    expect(query).toMatch(/FROM changes WHERE rv > \? ORDER BY rv LIMIT \?/);
    return rows
      .filter((r) => r.rv > after)
      .slice(0, limit)
      [Symbol.iterator]();
  };
  return { exec } as unknown as SqlStorage;
}

describe("changesAfter", () => {
  it("gives every change after the revision when they fit, and says it is complete", () => {
    const r = changesAfter(log([10, 20, 30]), 11, 100);
    expect(r.events.map((e) => e.data.length)).toEqual([20, 30]);
    expect(r).toMatchObject({ last: 13, complete: true });
  });

  it("stops at the count, not complete", () => {
    const r = changesAfter(log([1, 1, 1, 1]), 10, 2);
    expect(r).toMatchObject({ last: 12, complete: false });
    expect(r.events).toHaveLength(2);
  });

  it("stops before the change that would pass the budget of characters", () => {
    const r = changesAfter(log([40, 40, 40, 40]), 10, 100, 100);
    expect(r.events).toHaveLength(2);
    expect(r).toMatchObject({ last: 12, complete: false });
    // the next read goes on from there
    const next = changesAfter(log([40, 40, 40, 40]), r.last, 100, 100);
    expect(next).toMatchObject({ last: 14, complete: true });
    expect(next.events).toHaveLength(2);
  });

  it("always gives the first change, however large", () => {
    const r = changesAfter(log([500, 10]), 10, 100, 100);
    expect(r.events.map((e) => e.data.length)).toEqual([500]);
    expect(r).toMatchObject({ last: 11, complete: false });
  });

  it("keeps a whole read under the 32 MiB a call may answer, for pods of ~28 KB", () => {
    const r = changesAfter(log(Array.from({ length: 2000 }, () => 28 * 1024)), 10, 2000);
    const chars = r.events.reduce((n, e) => n + e.data.length, 0);
    expect(r.complete).toBe(false);
    expect(chars).toBeLessThanOrEqual(CHANGES_MAX_CHARS);
    // as UTF-16, a string's most bytes in the call's serialization
    expect(chars * 2).toBeLessThan(32 * 1024 * 1024);
  });
});
