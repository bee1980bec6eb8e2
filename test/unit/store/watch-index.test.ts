import { describe, expect, it } from "vitest";
import { parseFieldSelector, parseLabelSelector } from "../../../api/selectors";
import { WatcherIndex } from "../../../durable-objects/store/watch-index";
import { type Change, eventFor, type WatchFilter } from "../../../durable-objects/store/watchers";

interface W {
  id: number;
  filter: WatchFilter;
}

const filter = (fields = "", labels = "", namespace?: string): WatchFilter => ({
  namespace,
  fields: parseFieldSelector(fields),
  labels: parseLabelSelector(labels),
});

const NODES = ["", "n1", "n2", "n3"];
const change = (i: number): Change => {
  const type = (["ADDED", "MODIFIED", "DELETED"] as const)[i % 3]!;
  const node = NODES[i % 4]!;
  const before = NODES[(i >> 2) % 4]!;
  const labels = { app: i % 2 ? "web" : "db" };
  return {
    rv: i + 1,
    type,
    namespace: i % 5 ? "a" : "b",
    name: `p${i}`,
    labels,
    fields: { "spec.nodeName": node, "status.phase": i % 3 ? "Running" : "Pending" },
    prevLabels: type === "ADDED" ? null : labels,
    prevFields: type === "ADDED" ? null : { "spec.nodeName": before, "status.phase": "Pending" },
    data: "{}",
  };
};

describe("WatcherIndex", () => {
  const filters = [
    filter(),
    filter("", "app=web"),
    filter("", "", "a"),
    filter("spec.nodeName=n1"),
    filter("spec.nodeName==n2"),
    filter("spec.nodeName="), // unscheduled pods
    filter("spec.nodeName=n3,status.phase=Running"),
    filter("status.phase=Pending,spec.nodeName=n1"), // pinned on the first: status.phase
    filter("spec.nodeName!=n1"),
    filter("spec.nodeName=n1", "app=db", "a"),
  ];

  it("offers every watcher that sees a change, each once, and skips only ones that would not", () => {
    const index = new WatcherIndex<W>();
    const all: W[] = filters.flatMap((f, k) => [0, 1].map((j) => ({ id: k * 2 + j, filter: f })));
    for (const w of all) index.add(w);
    expect(index.size).toBe(all.length);
    let skipped = 0;
    for (let i = 0; i < 200; i++) {
      const c = change(i);
      const offered = [...index.candidates(c)];
      expect(new Set(offered).size).toBe(offered.length);
      const seen = (ws: W[]) =>
        ws
          .map((w) => `${w.id}:${eventFor(w.filter, c)}`)
          .filter((s) => !s.endsWith(":null"))
          .sort();
      expect(seen(offered)).toEqual(seen(all));
      skipped += all.length - offered.length;
    }
    expect(skipped).toBeGreaterThan(1000); // it does skip: the point of it
  });

  it("forgets a watcher once deleted, and iterates every watcher", () => {
    const index = new WatcherIndex<W>();
    const a = { id: 1, filter: filter("spec.nodeName=n1") };
    const b = { id: 2, filter: filter() };
    index.add(a);
    index.add(b);
    expect([...index].map((w) => w.id)).toEqual([1, 2]);
    index.delete(a);
    index.delete(a);
    expect(index.size).toBe(1);
    expect([...index.candidates(change(1))].map((w) => w.id)).toEqual([2]);
  });
});
