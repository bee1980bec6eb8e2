// api/time.ts: metav1.Time and MicroTime as Kubernetes writes them.
import { describe, expect, it } from "vitest";
import { microTime, rfc3339, wireTime } from "../../api/time";

describe("timestamps", () => {
  it("writes metav1.Time in whole seconds, UTC, for any order of calls", () => {
    const t = Date.UTC(2026, 10, 30, 15, 39, 11, 987);
    expect(rfc3339(t)).toBe("2026-11-30T15:39:11Z");
    expect(rfc3339(t + 5)).toBe("2026-11-30T15:39:11Z");
    expect(rfc3339(t + 13)).toBe("2026-11-30T15:39:12Z");
    // an earlier second after a later one, and a second apart by a day
    expect(rfc3339(t - 1000)).toBe("2026-11-30T15:39:10Z");
    expect(rfc3339(t + 86_400_000)).toBe("2026-12-01T15:39:11Z");
    expect(rfc3339(0)).toBe("1970-01-01T00:00:00Z");
    const now = Date.now();
    const text = rfc3339();
    expect(Math.abs(Date.parse(text) - now)).toBeLessThan(2000);
  });

  it("writes MicroTime with six fraction digits", () => {
    expect(microTime(Date.UTC(2026, 0, 2, 3, 4, 5, 60))).toBe("2026-01-02T03:04:05.060000Z");
    expect(microTime(0)).toBe("1970-01-01T00:00:00.000000Z");
  });

  it("writes a client's timestamp back in whole seconds, UTC, and keeps what is not a date", () => {
    expect(wireTime("2026-11-30T15:39:11.5Z")).toBe("2026-11-30T15:39:11Z");
    expect(wireTime("2026-11-30T17:39:11+02:00")).toBe("2026-11-30T15:39:11Z");
    expect(wireTime("yesterday")).toBe("yesterday");
  });
});
