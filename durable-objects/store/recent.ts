// The newest commits of a shard, kept in memory in revision order: the controllers and the
// scheduler pull changes right after each commit, and reading them here instead of from the
// change log saves a query and a row copy per event. Bounded by count and by bytes; after a
// restart it starts empty and callers fall back to the change log.

export interface RecentChange {
  type: string;
  data: string;
}

export class RecentChanges {
  private readonly items: RecentChange[] = [];
  /** revision of items[0] */
  private first = 0;
  private bytes = 0;

  constructor(
    private readonly maxCount = 2048,
    private readonly maxBytes = 4 << 20,
  ) {}

  /** Records the commit of revision `rv`, which must follow the last one recorded. */
  push(rv: number, type: string, data: string): void {
    if (this.items.length && rv !== this.first + this.items.length) this.clear();
    if (!this.items.length) this.first = rv;
    this.items.push({ type, data });
    this.bytes += data.length;
    let drop = 0;
    while (
      this.items.length - drop > 1 &&
      (this.items.length - drop > this.maxCount || this.bytes > this.maxBytes)
    )
      this.bytes -= this.items[drop++]?.data.length ?? 0;
    if (drop) {
      this.items.splice(0, drop);
      this.first += drop;
    }
  }

  /**
   * The changes after revision `rv`, oldest first and at most `limit`; undefined when the
   * memory no longer reaches back to rv + 1 (read the change log instead).
   */
  since(rv: number, limit: number): RecentChange[] | undefined {
    if (!this.items.length || rv + 1 < this.first) return undefined;
    const from = rv + 1 - this.first;
    return this.items.slice(from, from + limit);
  }

  clear(): void {
    this.items.length = 0;
    this.bytes = 0;
  }
}
