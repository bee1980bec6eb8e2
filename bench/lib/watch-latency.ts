// Watch delivery latency, the same way for any backend: N watchers are opened, then events
// are fired one at a time; each event's latency at each watcher is the time from the write
// being sent to the event arriving at that watcher. The next event is fired only once every
// watcher has seen the previous one (or a timeout passed), so events do not queue.
import type { LineStream } from "./http";
import { now, type Summary, sleep, summarize } from "./stats";

/** Called by a watcher when it sees the event with this id. */
export type Deliver = (id: string, arrivedAt: number) => void;

export interface WatchBackend {
  /** Opens watcher number i; it must call deliver for every event it receives. */
  open(i: number, deliver: Deliver): Promise<LineStream>;
  /** Performs the write that produces the event with this id. */
  fire(id: string): Promise<void>;
}

export interface WatchResult {
  watchers: number;
  events: number;
  latency: Summary;
  /** (event, watcher) pairs never delivered within the timeout. */
  missed: number;
}

export async function measureWatchLatency(
  backend: WatchBackend,
  opts: {
    watchers: number;
    events: number;
    prefix: string;
    timeoutMs?: number;
    openConcurrency?: number;
    /** Stop firing after this long (at least 5 events are fired). */
    maxSeconds?: number;
  },
): Promise<WatchResult> {
  const timeoutMs = opts.timeoutMs ?? 10000;
  let current: { id: string; t0: number; left: number; done: () => void } | undefined;
  const samples: number[] = [];
  const deliver: Deliver = (id, arrivedAt) => {
    const c = current;
    if (!c || c.id !== id) return;
    samples.push(arrivedAt - c.t0);
    if (--c.left === 0) c.done();
  };
  const streams: LineStream[] = [];
  let next = 0;
  const opener = async () => {
    for (;;) {
      const i = next++;
      if (i >= opts.watchers) return;
      streams.push(await backend.open(i, deliver));
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(opts.openConcurrency ?? 50, opts.watchers) }, opener));
    const fireOne = async (id: string, record: boolean): Promise<number> => {
      const kept = samples.length;
      let done!: () => void;
      const all = new Promise<void>((r) => (done = r));
      current = { id, t0: now(), left: opts.watchers, done };
      await backend.fire(id);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([all, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
      clearTimeout(timer);
      const left = current.left;
      current = undefined;
      if (!record) samples.length = kept;
      return left;
    };
    // Warm-up events: every watcher is registered and its connection is hot before timing.
    for (let w = 0; w < 3; w++) {
      const missing = await fireOne(`${opts.prefix}-warm${w}`, false);
      if (missing === 0) break;
      await sleep(500);
    }
    let missed = 0;
    let fired = 0;
    const stopAt = now() + (opts.maxSeconds ?? Number.POSITIVE_INFINITY) * 1000;
    for (let j = 0; j < opts.events && (j < 5 || now() < stopAt); j++) {
      fired++;
      missed += await fireOne(`${opts.prefix}-${j}`, true);
      await sleep(5);
    }
    return { watchers: opts.watchers, events: fired, latency: summarize(samples), missed };
  } finally {
    for (const s of streams) s.close();
  }
}
