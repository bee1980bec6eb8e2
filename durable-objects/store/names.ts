// Which names a shard may hold, without asking SQLite. Every create first checks that its
// name is free, and under a create load that lookup was the shard's largest cost (one
// statement per create, ~6% of workerd's CPU in `bench/profile.ts create`), almost always to
// learn that the name is not there. A Bloom filter over the stored (namespace, name) keys
// answers "certainly not stored" from memory; only a "maybe" reads the row.
//
// Names are only ever added: a deleted name stays set, so a create of it reads the row,
// which is what happened before. The filter is built from the table on first use and built
// again, twice the size, when the names added since outgrow it, so that its false "maybe"s
// stay near 2%.

/** bits per name the filter is sized for: with three probes, ~1.7% false "maybe"s at capacity */
const BITS_PER_NAME = 10;
const MIN_CAPACITY = 4096;

/** Two 32-bit hashes of a key (FNV-1a with two offsets), for double hashing. */
function hashes(namespace: string, name: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  const step = (code: number) => {
    a = Math.imul(a ^ code, 0x01000193);
    b = Math.imul(b ^ code, 0x5bd1e995);
  };
  for (let i = 0; i < namespace.length; i++) step(namespace.charCodeAt(i));
  step(0);
  for (let i = 0; i < name.length; i++) step(name.charCodeAt(i));
  return [a >>> 0, (b >>> 0) | 1];
}

export class NameFilter {
  private bits = new Uint32Array(0);
  private size = 0;
  /** names the filter may hold before it is built again, larger */
  private capacity = 0;
  private added = 0;
  private built = false;

  /** `stored` lists the (namespace, name) of every stored object, for a build. */
  constructor(private readonly stored: () => Iterable<{ namespace: string; name: string }>) {}

  /** False when no object of that name is stored or staged; true when one may be. */
  mayHold(namespace: string, name: string): boolean {
    if (!this.built) this.build(0);
    const [h1, h2] = hashes(namespace, name);
    for (let i = 0; i < 3; i++) {
      const bit = ((h1 + i * h2) >>> 0) % this.size;
      if (!(this.bits[bit >>> 5]! & (1 << (bit & 31)))) return false;
    }
    return true;
  }

  /**
   * Notes a name just staged. Before the first check nothing is kept: the build reads the
   * table. A build (`stored`) must see the staged names too: the shard writes its batch first.
   */
  add(namespace: string, name: string): void {
    if (!this.built) return;
    if (++this.added > this.capacity) this.build(this.added);
    else this.set(namespace, name);
  }

  private set(namespace: string, name: string): void {
    const [h1, h2] = hashes(namespace, name);
    for (let i = 0; i < 3; i++) {
      const bit = ((h1 + i * h2) >>> 0) % this.size;
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
    }
  }

  /** Sets every stored name, sized for twice as many as there are (at least `atLeast`). */
  private build(atLeast: number): void {
    const names = [...this.stored()];
    this.capacity = Math.max(MIN_CAPACITY, 2 * Math.max(names.length, atLeast));
    this.size = this.capacity * BITS_PER_NAME;
    this.bits = new Uint32Array(Math.ceil(this.size / 32));
    this.added = names.length;
    this.built = true;
    for (const n of names) this.set(n.namespace, n.name);
  }
}
