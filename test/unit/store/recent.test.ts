import { describe, expect, it } from "vitest";
import { RecentChanges } from "../../../durable-objects/store/recent";

const push = (r: RecentChanges, from: number, to: number, size = 0) => {
  for (let rv = from; rv <= to; rv++) r.push(rv, "ADDED", `x${rv}`.padStart(size, "x"));
};

describe("RecentChanges", () => {
  it("answers the changes after a revision, oldest first, at most limit", () => {
    const r = new RecentChanges(100);
    push(r, 5, 20);
    expect(r.since(4, 100)?.map((c) => c.data)).toEqual(Array.from({ length: 16 }, (_, i) => `x${5 + i}`));
    expect(r.since(10, 3)?.map((c) => c.data)).toEqual(["x11", "x12", "x13"]);
    expect(r.since(20, 10)).toEqual([]);
  });

  it("says it cannot answer when memory no longer reaches back that far", () => {
    const r = new RecentChanges(10);
    push(r, 1, 30);
    expect(r.since(20, 100)?.map((c) => c.data)[0]).toBe("x21");
    expect(r.since(19, 100)).toBeUndefined();
    expect(new RecentChanges().since(0, 10)).toBeUndefined();
  });

  it("stays under its byte bound and keeps at least the newest change", () => {
    const r = new RecentChanges(1000, 1000);
    push(r, 1, 50, 100);
    const kept = r.since(40, 100);
    expect(kept?.length).toBe(10);
    expect(r.since(39, 100)).toBeUndefined();
    const big = new RecentChanges(1000, 10);
    big.push(1, "ADDED", "y".repeat(50));
    expect(big.since(0, 10)?.length).toBe(1);
  });

  it("starts over when a revision is skipped rather than answer with a gap", () => {
    const r = new RecentChanges();
    push(r, 1, 5);
    r.push(9, "MODIFIED", "late");
    expect(r.since(4, 10)).toBeUndefined();
    expect(r.since(8, 10)?.map((c) => c.data)).toEqual(["late"]);
  });
});
