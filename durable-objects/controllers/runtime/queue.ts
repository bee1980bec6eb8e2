// A work queue after client-go's: a key is queued once however often it is added (dirty
// set), never worked on twice at once (processing set), and failures come back with
// per-key exponential backoff (5 ms doubling to 1000 s, as upstream's default limiter).

const MAX_TIMER_MS = 2 ** 31 - 1;

export class WorkQueue {
  private dirty = new Set<string>();
  private processing = new Set<string>();
  private ready: string[] = [];
  private failures = new Map<string, number>();
  private timers = new Map<string, ReturnType<typeof setTimeout>>();
  private active = 0;
  /** keys added again while they ran, waiting for their turn of the event loop */
  private deferred = 0;

  constructor(
    readonly name: string,
    private readonly work: (key: string) => Promise<void>,
    private readonly concurrency = 4,
  ) {}

  get length(): number {
    return this.ready.length;
  }

  add(key: string): void {
    if (this.dirty.has(key)) return;
    this.dirty.add(key);
    if (!this.processing.has(key)) this.ready.push(key);
    this.pump();
  }

  addAfter(key: string, ms: number): void {
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const existing = this.timers.get(key);
    if (existing) clearTimeout(existing);
    this.timers.set(
      key,
      // a timer's delay is a 32-bit count of ms: a later one would fire at once (the minute's
      // resync looks at every key long before 24 days pass anyway)
      setTimeout(
        () => {
          this.timers.delete(key);
          this.add(key);
        },
        Math.min(ms, MAX_TIMER_MS),
      ),
    );
  }

  /** Resolves when nothing is queued or running (for tests and resync passes). */
  async idle(): Promise<void> {
    while (this.ready.length || this.active || this.deferred) await new Promise((r) => setTimeout(r, 5));
  }

  private pump(): void {
    while (this.active < this.concurrency && this.ready.length) {
      const key = this.ready.shift()!;
      this.dirty.delete(key);
      this.processing.add(key);
      this.active++;
      this.work(key)
        .then(
          () => this.failures.delete(key),
          (e) => {
            const n = (this.failures.get(key) ?? 0) + 1;
            this.failures.set(key, n);
            const delay = Math.min(5 * 2 ** (n - 1), 1_000_000);
            console.warn(
              `${this.name}: sync ${key} failed (attempt ${n}, retry in ${delay} ms): ${e instanceof Error ? e.message : e}`,
            );
            this.addAfter(key, delay);
          },
        )
        .finally(() => {
          this.active--;
          this.processing.delete(key);
          if (!this.dirty.has(key)) return this.pump();
          // added again while it ran: it runs again after a turn of the event loop, never in
          // the same chain of promises. A sync that re-adds its key without waiting on any I/O
          // would otherwise hold the thread in that chain, and with it every request the
          // isolate serves, for as long as it keeps re-adding itself
          this.deferred++;
          // (meanwhile add() leaves it be: it is dirty, so it is in no list but this timer's)
          setTimeout(() => {
            this.deferred--;
            this.ready.push(key);
            this.pump();
          }, 0);
        });
    }
  }
}
