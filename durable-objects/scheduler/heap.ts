/** A binary min-heap by `less`, with removal by key. */
export class Heap<T> {
  private items: T[] = [];
  private pos = new Map<string, number>();

  constructor(
    private keyOf: (t: T) => string,
    private less: (a: T, b: T) => boolean,
  ) {}

  get size(): number {
    return this.items.length;
  }

  has(key: string): boolean {
    return this.pos.has(key);
  }

  get(key: string): T | undefined {
    const i = this.pos.get(key);
    return i === undefined ? undefined : this.items[i];
  }

  peek(): T | undefined {
    return this.items[0];
  }

  values(): T[] {
    return this.items.slice();
  }

  push(t: T): void {
    const k = this.keyOf(t);
    const at = this.pos.get(k);
    if (at !== undefined) {
      this.items[at] = t;
      this.fix(at);
      return;
    }
    this.items.push(t);
    this.pos.set(k, this.items.length - 1);
    this.up(this.items.length - 1);
  }

  pop(): T | undefined {
    if (this.items.length === 0) return undefined;
    const top = this.items[0];
    this.removeAt(0);
    return top;
  }

  delete(key: string): T | undefined {
    const i = this.pos.get(key);
    if (i === undefined) return undefined;
    const t = this.items[i];
    this.removeAt(i);
    return t;
  }

  private removeAt(i: number): void {
    const last = this.items.length - 1;
    this.pos.delete(this.keyOf(this.items[i]));
    if (i !== last) {
      this.items[i] = this.items[last];
      this.pos.set(this.keyOf(this.items[i]), i);
      this.items.pop();
      this.fix(i);
    } else {
      this.items.pop();
    }
  }

  private fix(i: number): void {
    if (!this.up(i)) this.down(i);
  }

  private swap(i: number, j: number): void {
    const a = this.items[i];
    this.items[i] = this.items[j];
    this.items[j] = a;
    this.pos.set(this.keyOf(this.items[i]), i);
    this.pos.set(this.keyOf(this.items[j]), j);
  }

  private up(i: number): boolean {
    let moved = false;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(this.items[i], this.items[p])) break;
      this.swap(i, p);
      i = p;
      moved = true;
    }
    return moved;
  }

  private down(i: number): void {
    const n = this.items.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.less(this.items[l], this.items[m])) m = l;
      if (r < n && this.less(this.items[r], this.items[m])) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }
}
