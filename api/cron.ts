// Cron schedules as CronJobs take them (the standard five fields, with names, ranges, steps,
// lists and `?`, or a descriptor such as @hourly), evaluated in a time zone: the next run
// after a time and the runs missed between two times.

const FIELDS = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day of month", min: 1, max: 31 },
  {
    name: "month",
    min: 1,
    max: 12,
    names: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
  },
  { name: "day of week", min: 0, max: 6, names: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"] },
] as const;

const DESCRIPTORS: Record<string, string> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};

export interface Schedule {
  sets: Set<number>[];
  /** whether day of month / day of week were restricted (both restricted: either may match) */
  domStar: boolean;
  dowStar: boolean;
  /** an @every interval in minutes, instead of fields */
  everyMinutes?: number;
}

export class CronError extends Error {}

function value(s: string, f: (typeof FIELDS)[number]): number {
  const names: readonly string[] | undefined = "names" in f ? f.names : undefined;
  const i = names?.indexOf(s.toLowerCase()) ?? -1;
  if (i >= 0) return i + f.min;
  if (!/^\d+$/.test(s))
    throw new CronError(`failed to parse int from ${s}: strconv.Atoi: parsing "${s}": invalid syntax`);
  return Number(s);
}

function parseField(text: string, f: (typeof FIELDS)[number]): { set: Set<number>; star: boolean } {
  const set = new Set<number>();
  let star = false;
  for (const part of text.split(",")) {
    const [range, stepText] = part.split("/");
    let lo: number;
    let hi: number;
    if (range === "*" || range === "?") {
      lo = f.min;
      hi = f.max;
      if (stepText === undefined) star = true;
    } else {
      const [a, b] = range.split("-");
      lo = value(a, f);
      hi = b === undefined ? (stepText === undefined ? lo : f.max) : value(b, f);
    }
    if (part.split("/").length > 2) throw new CronError(`too many slashes: ${part}`);
    if (range.split("-").length > 2) throw new CronError(`too many hyphens: ${range}`);
    const step = stepText === undefined ? 1 : value(stepText, { name: "step", min: 0, max: 0 } as never);
    if (step < 1) throw new CronError(`step of range should be a positive number: ${part}`);
    if (lo < f.min) throw new CronError(`beginning of range (${lo}) below minimum (${f.min}): ${part}`);
    if (hi > f.max) throw new CronError(`end of range (${hi}) above maximum (${f.max}): ${part}`);
    if (lo > hi) throw new CronError(`beginning of range (${lo}) beyond end of range (${hi}): ${part}`);
    for (let v = lo; v <= hi; v += step) set.add(v);
  }
  return { set, star };
}

/** Parses a schedule; throws CronError with the parser's words. */
export function parseSchedule(text: string): Schedule {
  const trimmed = text.trim();
  if (!trimmed) throw new CronError("empty spec string");
  if (trimmed.startsWith("@every ")) {
    const m = /^@every\s+(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(trimmed);
    const minutes = m ? Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0) + Number(m[3] ?? 0) / 60 : Number.NaN;
    if (!m || !(minutes >= 1)) throw new CronError(`failed to parse duration ${trimmed}`);
    return { sets: [], domStar: true, dowStar: true, everyMinutes: Math.ceil(minutes) };
  }
  const spec = trimmed.startsWith("@") ? DESCRIPTORS[trimmed.toLowerCase()] : trimmed;
  if (!spec) throw new CronError(`unrecognized descriptor: ${trimmed}`);
  const parts = spec.split(/\s+/);
  if (parts.length !== 5)
    throw new CronError(`expected exactly 5 fields, found ${parts.length}: [${parts.join(" ")}]`);
  const parsed = parts.map((p, i) => parseField(p, FIELDS[i]));
  return { sets: parsed.map((p) => p.set), domStar: parsed[2].star, dowStar: parsed[4].star };
}

/** Wall-clock fields of an instant in a zone (undefined zone: UTC). */
function wall(t: number, zone: Intl.DateTimeFormat | undefined) {
  if (!zone) {
    const d = new Date(t);
    return {
      year: d.getUTCFullYear(),
      min: d.getUTCMinutes(),
      hour: d.getUTCHours(),
      dom: d.getUTCDate(),
      mon: d.getUTCMonth() + 1,
      dow: d.getUTCDay(),
    };
  }
  const p: Record<string, string> = {};
  for (const x of zone.formatToParts(new Date(t))) p[x.type] = x.value;
  const days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  return {
    year: Number(p.year),
    min: Number(p.minute),
    hour: Number(p.hour) % 24,
    dom: Number(p.day),
    mon: Number(p.month),
    dow: days.indexOf(p.weekday),
  };
}

/** A formatter for a IANA zone name, or undefined for UTC; throws RangeError for an unknown one. */
export function zoneFormatter(timeZone?: string): Intl.DateTimeFormat | undefined {
  if (!timeZone || timeZone === "UTC" || timeZone === "Etc/UTC") return undefined;
  return new Intl.DateTimeFormat("en-US", {
    timeZone,
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
    weekday: "short",
  });
}

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** An instant as RFC 3339 in a zone, with its offset ("2026-12-01T09:00:00-05:00"; UTC: "...Z"). */
export function zonedRfc3339(t: number, zone?: Intl.DateTimeFormat): string {
  const w = wall(t, zone);
  const local = Date.UTC(w.year, w.mon - 1, w.dom, w.hour, w.min, new Date(t).getUTCSeconds());
  const offset = Math.round((local - t) / MINUTE);
  const two = (n: number) => String(n).padStart(2, "0");
  const stamp = `${w.year}-${two(w.mon)}-${two(w.dom)}T${two(w.hour)}:${two(w.min)}:${two(new Date(t).getUTCSeconds())}`;
  if (offset === 0) return `${stamp}Z`;
  return `${stamp}${offset < 0 ? "-" : "+"}${two(Math.floor(Math.abs(offset) / 60))}:${two(Math.abs(offset) % 60)}`;
}

/** The first run strictly after `after` (ms), within about five years; undefined if none. */
export function nextRun(s: Schedule, after: number, zone?: Intl.DateTimeFormat): number | undefined {
  if (s.everyMinutes) return Math.floor(after / MINUTE) * MINUTE + s.everyMinutes * MINUTE;
  let t = Math.floor(after / MINUTE) * MINUTE + MINUTE;
  const [mins, hours, doms, mons, dows] = s.sets;
  const limit = after + 5 * 366 * DAY;
  while (t <= limit) {
    const w = wall(t, zone);
    const dayOk =
      s.domStar || s.dowStar ? doms.has(w.dom) && dows.has(w.dow) : doms.has(w.dom) || dows.has(w.dow);
    if (!mons.has(w.mon) || !dayOk) t += DAY - (w.hour * 60 + w.min) * MINUTE;
    else if (!hours.has(w.hour)) t += (60 - w.min) * MINUTE;
    else if (!mins.has(w.min)) t += MINUTE;
    else return t;
  }
  return undefined;
}

/**
 * The runs after `from` up to and including `to`: the most recent one and how many there
 * were, counting at most `cap` + 1 (past that the count only says "more than cap").
 */
export function missedRuns(
  s: Schedule,
  from: number,
  to: number,
  zone?: Intl.DateTimeFormat,
  cap = 100,
): { last?: number; count: number } {
  let last: number | undefined;
  let count = 0;
  for (let t = nextRun(s, from, zone); t !== undefined && t <= to; t = nextRun(s, t, zone)) {
    last = t;
    if (++count > cap) {
      // too many to walk: the most recent is found from a day before `to`
      let recent = last;
      for (
        let n = nextRun(s, Math.max(last, to - DAY), zone);
        n !== undefined && n <= to;
        n = nextRun(s, n, zone)
      )
        recent = n;
      return { last: recent, count };
    }
  }
  return { last, count };
}
