import { describe, expect, it } from "vitest";
import { Backoff } from "../../../agent/edgelet/backoff";

describe("Backoff", () => {
  it("starts at 10 s, doubles, and caps at 5 min", () => {
    let now = 0;
    const b = new Backoff({ now: () => now });
    const delays = [];
    for (let i = 0; i < 8; i++) {
      delays.push(b.next("k"));
      now += 1000;
    }
    expect(delays).toEqual([10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000, 300_000]);
  });

  it("counts the backoff from a given time (the container's finish) and reports what is left", () => {
    let now = 100_000;
    const b = new Backoff({ now: () => now });
    expect(b.inBackoff("c")).toBe(false);
    b.next("c");
    expect(b.inBackoff("c", 95_000)).toBe(true);
    expect(b.remaining("c", 95_000)).toBe(5_000);
    now = 106_000;
    expect(b.inBackoff("c", 95_000)).toBe(false);
    expect(b.remaining("c", 95_000)).toBe(0);
  });

  it("forgets a key after twice the cap of quiet, and on reset", () => {
    let now = 0;
    const b = new Backoff({ now: () => now });
    b.next("k");
    b.next("k");
    expect(b.delay("k")).toBe(20_000);
    now = 700_000;
    expect(b.next("k")).toBe(10_000);
    b.reset("k");
    expect(b.delay("k")).toBe(0);
  });
});
