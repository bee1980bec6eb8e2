// Which watchers a change can concern, without asking each of them. A watcher whose field
// selector pins a field to one value (every kubelet watches spec.nodeName=<its node>) is
// filed under that value, and looked at only for changes whose field had that value before
// or after; the others are looked at for every change. With a thousand nodes that is one
// filter check per change instead of a thousand. The caller still applies the full filter.
import type { Change, WatchFilter } from "./watchers";

/** The field a filter pins to one value (its first `field=value` requirement), if any. */
function pinOf(f: WatchFilter): { field: string; value: string } | undefined {
  const r = f.fields.find((r) => r.op === "=");
  return r && { field: r.key, value: r.values[0]! };
}

export class WatcherIndex<W extends { filter: WatchFilter }> {
  private readonly all = new Set<W>();
  private readonly loose = new Set<W>();
  /** field -> value -> watchers pinned to it */
  private readonly pinned = new Map<string, Map<string, Set<W>>>();

  get size(): number {
    return this.all.size;
  }

  [Symbol.iterator](): Iterator<W> {
    return this.all[Symbol.iterator]();
  }

  add(w: W): void {
    this.all.add(w);
    const pin = pinOf(w.filter);
    if (!pin) return void this.loose.add(w);
    let byValue = this.pinned.get(pin.field);
    if (!byValue) this.pinned.set(pin.field, (byValue = new Map()));
    let set = byValue.get(pin.value);
    if (!set) byValue.set(pin.value, (set = new Set()));
    set.add(w);
  }

  delete(w: W): void {
    if (!this.all.delete(w)) return;
    const pin = pinOf(w.filter);
    if (!pin) return void this.loose.delete(w);
    const byValue = this.pinned.get(pin.field)!;
    const set = byValue.get(pin.value)!;
    set.delete(w);
    if (!set.size) byValue.delete(pin.value);
    if (!byValue.size) this.pinned.delete(pin.field);
  }

  /** Every watcher that may see `c`: each once. */
  *candidates(c: Change): Iterable<W> {
    yield* this.loose;
    for (const [field, byValue] of this.pinned) {
      const now = c.fields[field];
      const before = c.prevFields?.[field];
      if (now !== undefined) yield* byValue.get(now) ?? [];
      if (before !== undefined && before !== now) yield* byValue.get(before) ?? [];
    }
  }
}
