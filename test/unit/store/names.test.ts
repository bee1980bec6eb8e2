// The shard's name filter (durable-objects/store/names.ts): never "not stored" for a stored
// or staged name, across builds and growth, and mostly "not stored" for names never written.
import { describe, expect, it } from "vitest";
import { NameFilter } from "../../../durable-objects/store/names";

describe("NameFilter", () => {
  it("holds every name stored before its build and every name added after it, as it grows", () => {
    const table: { namespace: string; name: string }[] = [];
    for (let i = 0; i < 3000; i++) table.push({ namespace: `ns-${i % 7}`, name: `pod-${i}` });
    let builds = 0;
    const f = new NameFilter(() => {
      builds++;
      return [...table];
    });
    for (const t of table) expect(f.mayHold(t.namespace, t.name)).toBe(true);
    expect(builds).toBe(1);
    for (let i = 3000; i < 20000; i++) {
      const n = { namespace: `ns-${i % 7}`, name: `pod-${i}` };
      table.push(n);
      f.add(n.namespace, n.name);
    }
    // it grew (3,000 names at build, 20,000 now) without reading the table again
    expect(builds).toBe(1);
    for (const t of table) expect(f.mayHold(t.namespace, t.name)).toBe(true);
    // and grown, it still tells most names never written apart
    let maybe = 0;
    for (let i = 0; i < 20000; i++) if (f.mayHold(`ns-${i % 7}`, `other-${i}`)) maybe++;
    expect(maybe / 20000).toBeLessThan(0.05);
  });

  it("says 'not stored' for almost every name never written", () => {
    const f = new NameFilter(() =>
      Array.from({ length: 5000 }, (_, i) => ({ namespace: "a", name: `x${i}` })),
    );
    let maybe = 0;
    for (let i = 0; i < 20000; i++) if (f.mayHold("a", `y${i}`)) maybe++;
    expect(maybe / 20000).toBeLessThan(0.03);
    // the namespace is part of the key
    expect(f.mayHold("b", "x1") && f.mayHold("b", "x2") && f.mayHold("b", "x3")).toBe(false);
  });
});
