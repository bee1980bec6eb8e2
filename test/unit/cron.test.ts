import { describe, expect, it } from "vitest";
import { CronError, missedRuns, nextRun, parseSchedule, zoneFormatter } from "../../api/cron";

const at = (s: string) => Date.parse(s);
const iso = (t: number | undefined) => (t === undefined ? undefined : new Date(t).toISOString());

describe("cron schedules", () => {
  it("finds the next run: steps, ranges, names, descriptors", () => {
    expect(iso(nextRun(parseSchedule("*/15 * * * *"), at("2026-12-01T10:07:30Z")))).toBe(
      "2026-12-01T10:15:00.000Z",
    );
    expect(iso(nextRun(parseSchedule("*/15 * * * *"), at("2026-12-01T10:15:00Z")))).toBe(
      "2026-12-01T10:30:00.000Z",
    );
    // Saturday 5 Dec 2026 -> Monday 9:00
    expect(iso(nextRun(parseSchedule("0 9 * * mon-fri"), at("2026-12-05T12:00:00Z")))).toBe(
      "2026-12-07T09:00:00.000Z",
    );
    expect(iso(nextRun(parseSchedule("@hourly"), at("2026-12-01T10:59:59Z")))).toBe(
      "2026-12-01T11:00:00.000Z",
    );
    expect(iso(nextRun(parseSchedule("30 4 1 JAN ?"), at("2026-12-01T00:00:00Z")))).toBe(
      "2027-01-01T04:30:00.000Z",
    );
    // day of month and day of week both restricted: either matches (the 13th, or a Friday)
    expect(iso(nextRun(parseSchedule("0 0 13 * 5"), at("2026-12-01T00:00:00Z")))).toBe(
      "2026-12-04T00:00:00.000Z",
    );
    expect(iso(nextRun(parseSchedule("0 0 13 * 5"), at("2026-12-11T00:00:00Z")))).toBe(
      "2026-12-13T00:00:00.000Z",
    );
    // Feb 30 never comes
    expect(nextRun(parseSchedule("0 0 30 2 *"), at("2026-12-01T00:00:00Z"))).toBeUndefined();
  });

  it("runs in a time zone", () => {
    const ny = zoneFormatter("America/New_York");
    // 9:00 in New York is 14:00 UTC in winter, 13:00 in summer
    expect(iso(nextRun(parseSchedule("0 9 * * *"), at("2026-12-01T00:00:00Z"), ny))).toBe(
      "2026-12-01T14:00:00.000Z",
    );
    expect(iso(nextRun(parseSchedule("0 9 * * *"), at("2026-07-01T00:00:00Z"), ny))).toBe(
      "2026-07-01T13:00:00.000Z",
    );
    expect(() => zoneFormatter("Mars/Olympus")).toThrow(RangeError);
  });

  it("counts missed runs, and stops counting past the cap", () => {
    const every5 = parseSchedule("*/5 * * * *");
    expect(missedRuns(every5, at("2026-12-01T10:00:00Z"), at("2026-12-01T10:17:00Z"))).toEqual({
      last: at("2026-12-01T10:15:00Z"),
      count: 3,
    });
    expect(missedRuns(every5, at("2026-12-01T10:00:00Z"), at("2026-12-01T10:04:00Z"))).toEqual({ count: 0 });
    const many = missedRuns(
      parseSchedule("* * * * *"),
      at("2026-11-01T00:00:00Z"),
      at("2026-12-01T10:17:30Z"),
    );
    expect(many.count).toBe(101);
    expect(iso(many.last)).toBe("2026-12-01T10:17:00.000Z");
  });

  it("refuses what the parser refuses, in its words", () => {
    const err = (s: string) => {
      try {
        parseSchedule(s);
      } catch (e) {
        expect(e).toBeInstanceOf(CronError);
        return (e as Error).message;
      }
      return "parsed";
    };
    expect(err("* * *")).toBe("expected exactly 5 fields, found 3: [* * *]");
    expect(err("61 * * * *")).toBe("end of range (61) above maximum (59): 61");
    expect(err("x * * * *")).toBe('failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax');
    expect(err("5-1 * * * *")).toBe("beginning of range (5) beyond end of range (1): 5-1");
    expect(err("*/0 * * * *")).toBe("step of range should be a positive number: */0");
    expect(err("@fortnightly")).toBe("unrecognized descriptor: @fortnightly");
    expect(err("")).toBe("empty spec string");
  });
});
