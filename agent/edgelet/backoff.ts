// Per-key exponential backoff as the kubelet keeps it for crash loops and image
// pulls: 10 s doubling to a 5 min cap, forgotten after twice the cap of quiet.

export interface BackoffOptions {
  initialMs?: number;
  maxMs?: number;
  now?: () => number;
}

interface Entry {
  delayMs: number;
  lastUpdate: number;
}

export class Backoff {
  private readonly entries = new Map<string, Entry>();
  readonly initialMs: number;
  readonly maxMs: number;
  private readonly now: () => number;

  constructor(opts: BackoffOptions = {}) {
    this.initialMs = opts.initialMs ?? 10_000;
    this.maxMs = opts.maxMs ?? 300_000;
    this.now = opts.now ?? Date.now;
  }

  /** Records a failure at `at` (default now): the next delay doubles, up to the cap. */
  next(key: string, at = this.now()): number {
    const e = this.entries.get(key);
    if (!e || at - e.lastUpdate > 2 * this.maxMs) {
      this.entries.set(key, { delayMs: this.initialMs, lastUpdate: at });
      return this.initialMs;
    }
    e.delayMs = Math.min(e.delayMs * 2, this.maxMs);
    e.lastUpdate = at;
    return e.delayMs;
  }

  /** The current delay for key (0 when none). */
  delay(key: string): number {
    return this.entries.get(key)?.delayMs ?? 0;
  }

  /** Whether `key` is still backing off at `at`, counted from `since` (default: its last failure). */
  inBackoff(key: string, since?: number, at = this.now()): boolean {
    const e = this.entries.get(key);
    if (!e) return false;
    return at - (since ?? e.lastUpdate) < e.delayMs;
  }

  /** Milliseconds left of the backoff of key counted from `since` (0 when over). */
  remaining(key: string, since?: number, at = this.now()): number {
    const e = this.entries.get(key);
    if (!e) return 0;
    return Math.max(0, e.delayMs - (at - (since ?? e.lastUpdate)));
  }

  reset(key: string): void {
    this.entries.delete(key);
  }

  /** Drops entries idle for longer than twice the cap. */
  gc(at = this.now()): void {
    for (const [k, e] of this.entries) if (at - e.lastUpdate > 2 * this.maxMs) this.entries.delete(k);
  }
}
