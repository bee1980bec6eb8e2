// Small statistics helpers shared by the benchmarks.

/** Nearest-rank percentile of unsorted samples (NaN when there are none). */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return percentileSorted(sorted, p);
}

function percentileSorted(sorted: readonly number[], p: number): number {
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

export interface Summary {
  n: number;
  p50: number;
  p99: number;
  max: number;
  mean: number;
}

/** p50/p99/max/mean of latency samples in ms. */
export function summarize(samples: readonly number[]): Summary {
  if (samples.length === 0)
    return { n: 0, p50: Number.NaN, p99: Number.NaN, max: Number.NaN, mean: Number.NaN };
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    n: sorted.length,
    p50: percentileSorted(sorted, 50),
    p99: percentileSorted(sorted, 99),
    max: sorted[sorted.length - 1] as number,
    mean: sum / sorted.length,
  };
}

/** Rounds to `digits` decimals (default 2); NaN stays NaN. */
export function round(x: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** a/b rounded, or NaN when either side is missing or b is 0. */
export function ratio(a: number, b: number): number {
  if (!Number.isFinite(a) || !Number.isFinite(b) || b === 0) return Number.NaN;
  return round(a / b, 3);
}

export const now = (): number => performance.now();

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface LoadResult {
  /** Completed operations per second over the whole run. */
  perSecond: number;
  latency: Summary;
  errors: number;
  firstError?: string;
  /** Operations that completed without error. */
  done: number;
  /**
   * The longest stretch (ms) in which no operation completed, with others in flight: what a
   * pause of the server (e.g. a full garbage collection in workerd) costs every request
   * caught in it, so the p99 of a closed loop is often that.
   */
  longestStallMs: number;
}

/**
 * Runs `total` operations with `clients` concurrent loops; each loop takes the next index
 * and awaits op(i). Latency is per operation; throughput is completed / wall time. With
 * maxSeconds, no operation starts after that much time (the run ends early, `done` says
 * how many completed).
 */
export async function closedLoop(
  total: number,
  clients: number,
  op: (i: number) => Promise<void>,
  maxSeconds = Number.POSITIVE_INFINITY,
): Promise<LoadResult> {
  const samples: number[] = [];
  let longestStallMs = 0;
  let lastEnd: number | undefined;
  let next = 0;
  let errors = 0;
  let firstError: string | undefined;
  const start = now();
  const stopAt = start + maxSeconds * 1000;
  const loop = async () => {
    for (;;) {
      if (now() > stopAt) return;
      const i = next++;
      if (i >= total) return;
      const t = now();
      try {
        await op(i);
        const end = now();
        samples.push(end - t);
        if (lastEnd !== undefined) longestStallMs = Math.max(longestStallMs, end - lastEnd);
        lastEnd = end;
      } catch (e) {
        errors++;
        firstError ??= e instanceof Error ? e.message : String(e);
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, loop));
  const wall = (now() - start) / 1000;
  return {
    perSecond: samples.length / wall,
    latency: summarize(samples),
    errors,
    firstError,
    done: samples.length,
    longestStallMs,
  };
}
