// Which names a shard may hold, without asking SQLite. Every create first checks that its
// name is free, and under a create load that lookup was the shard's largest cost (one
// statement per create, ~6% of workerd's CPU in `bench/profile.ts create`), almost always to
// learn that the name is not there. A Bloom filter over the stored (namespace, name) keys
// answers "certainly not stored" from memory; only a "maybe" reads the row.
//
// Names are only ever added: a deleted name stays set, so a create of it reads the row, as
// every create did before. The filter is built from the table on first use; when the names
// added since fill it, a layer twice the size takes the new ones (a scalable Bloom filter),
// so it never reads the table again: a rebuild at 20,000 names held up the shard ~30 ms.

/** bits per name a layer is sized for: with four probes, ~0.7% false "maybe"s when full */
const BITS_PER_NAME = 12;
const PROBES = 4;
const MIN_CAPACITY = 4096;

/** Two 32-bit hashes of a key (FNV-1a with two primes), for double hashing. */
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

class Layer {
  private readonly bits: Uint32Array;
  private readonly size: number;
  count = 0;

  constructor(readonly capacity: number) {
    this.size = capacity * BITS_PER_NAME;
    this.bits = new Uint32Array(Math.ceil(this.size / 32));
  }

  has(h1: number, h2: number): boolean {
    for (let i = 0; i < PROBES; i++) {
      const bit = ((h1 + i * h2) >>> 0) % this.size;
      if (!(this.bits[bit >>> 5]! & (1 << (bit & 31)))) return false;
    }
    return true;
  }

  set(h1: number, h2: number): void {
    for (let i = 0; i < PROBES; i++) {
      const bit = ((h1 + i * h2) >>> 0) % this.size;
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
    }
    this.count++;
  }
}

export class NameFilter {
  /** oldest first; names go into the last */
  private layers: Layer[] = [];

  /**
   * `stored` lists the (namespace, name) of every stored object, for the build on first use.
   * It must see the names staged but not yet written too: the shard writes its batch first.
   */
  constructor(private readonly stored: () => Iterable<{ namespace: string; name: string }>) {}

  /** False when no object of that name is stored or staged; true when one may be. */
  mayHold(namespace: string, name: string): boolean {
    if (!this.layers.length) this.build();
    const [h1, h2] = hashes(namespace, name);
    for (const layer of this.layers) if (layer.has(h1, h2)) return true;
    return false;
  }

  /** Notes a name just staged (before the first check nothing is kept: the build reads the table). */
  add(namespace: string, name: string): void {
    let top = this.layers.at(-1);
    if (!top) return;
    if (top.count >= top.capacity) this.layers.push((top = new Layer(2 * top.capacity)));
    const [h1, h2] = hashes(namespace, name);
    top.set(h1, h2);
  }

  private build(): void {
    const names = [...this.stored()];
    const first = new Layer(Math.max(MIN_CAPACITY, 2 * names.length));
    for (const n of names) {
      const [h1, h2] = hashes(n.namespace, n.name);
      first.set(h1, h2);
    }
    this.layers = [first];
  }
}
