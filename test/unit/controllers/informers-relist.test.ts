// The informers' relist against a fake store shard that answers list pages and change pulls
// as the real one does: the new cache replaces the old in one step (no handler ever sees half
// a list), the thread is given up while it is built, differences from before are emitted
// once each, and a write this component made meanwhile that is newer than the list stays.
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../api/types";
import { Informers } from "../../../durable-objects/controllers/runtime/informers";
import type { Env } from "../../../durable-objects/env";

const RES = "/configmaps";

function cm(name: string, rv: number): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: "ns", resourceVersion: String(rv) },
    data: { v: String(rv) },
  } as KubeObject;
}

interface ShardState {
  objects: KubeObject[];
  head: number;
  compacted: number;
  lastPageRead?: boolean;
  /** continue tokens answered with 410 Expired (their snapshot compacted), once each */
  expire?: Set<string>;
  /** lists started (first pages read) */
  lists?: number;
}

/** A shard holding `objects` at revision `head`, its change log compacted up to `compacted`. */
function fakeShard(state: ShardState) {
  const shard = {
    listStream(_key: string, q: { limit?: number; continue?: string }) {
      if (!q.continue) state.lists = (state.lists ?? 0) + 1;
      if (q.continue && state.expire?.delete(q.continue)) {
        const status = { kind: "Status", apiVersion: "v1", status: "Failure", code: 410, reason: "Expired" };
        return Promise.resolve({ ok: false, status: { ...status, message: "snapshot compacted" } });
      }
      const from = q.continue ? Number(q.continue) : 0;
      const page = state.objects.slice(from, from + (q.limit ?? state.objects.length));
      const next = from + page.length < state.objects.length ? String(from + page.length) : undefined;
      if (!next) state.lastPageRead = true;
      const body = JSON.stringify({
        kind: "ConfigMapList",
        apiVersion: "v1",
        metadata: { resourceVersion: String(state.head), ...(next ? { continue: next } : {}) },
        items: page,
      });
      return Promise.resolve({ ok: true, stream: new Response(body).body });
    },
    changesSince(_res: string, rv: number) {
      if (rv < state.compacted)
        return Promise.resolve({ expired: true, head: state.head, upTo: state.head, events: [] });
      return Promise.resolve({ expired: false, head: state.head, upTo: state.head, events: [] });
    },
  };
  const env = {
    EDGEPLANE_CLUSTER: "default",
    STORE: { idFromName: (name: string) => ({ name }), get: () => shard },
  } as unknown as Env;
  return env;
}

describe("Informers relist", () => {
  it("replaces the cache in one step, giving up the thread while it is built", async () => {
    const state: ShardState = { objects: [], head: 9000, compacted: 0, lastPageRead: false };
    for (let i = 0; i < 6000; i++) state.objects.push(cm(`c-${i}`, 1000 + i));
    const informers = new Informers(fakeShard(state), [RES]);
    const seen: number[] = [];
    let turns = 0;
    let turnsAfterLastPage = 0;
    let building = true;
    informers.onChange(() => seen.push(informers.keys(RES).length));
    const ticker = (async () => {
      while (building) {
        await new Promise((r) => setTimeout(r, 0));
        turns++;
        if (state.lastPageRead && informers.keys(RES).length === 0) turnsAfterLastPage++;
        // whatever a timer's turn sees is a whole cache: the old one (empty) or the new one
        expect([0, 6000]).toContain(informers.keys(RES).length);
      }
    })();
    await informers.startAll();
    building = false;
    await ticker;
    expect(seen).toHaveLength(6000);
    expect(seen.every((n) => n === 6000)).toBe(true);
    // pages of 500 and slices of 2,000: the thread was given up between them, and while the
    // new cache was filled after the last page
    expect(turns).toBeGreaterThanOrEqual(10);
    expect(turnsAfterLastPage).toBeGreaterThanOrEqual(2);
  });

  it("emits each difference once, and keeps a newer write made during the relist", async () => {
    const state: ShardState = {
      objects: [cm("same", 10), cm("changed", 11), cm("gone", 12)],
      head: 20,
      compacted: 0,
    };
    const informers = new Informers(fakeShard(state), [RES]);
    await informers.startAll();

    // the log no longer reaches back: the next pull lists again
    state.objects = [cm("same", 10), cm("changed", 25), cm("new", 26), cm("observed", 27)];
    state.head = 40;
    state.compacted = 35;
    const events: string[] = [];
    informers.onChange((_res, type, obj, old) =>
      events.push(
        `${type} ${obj.metadata.name} ${old?.metadata.resourceVersion ?? "-"}->${obj.metadata.resourceVersion}`,
      ),
    );
    const pulled = informers.pull(RES);
    // this component's own write, newer than the list, lands while its pages are read
    informers.observe(RES, cm("observed", 50));
    await pulled;

    expect(events.sort()).toEqual(
      [
        "ADDED new -->26",
        "DELETED gone 12->12",
        "MODIFIED changed 11->25",
        // observed at 50 before the list came: emitted then, and not taken back by the list at 27
        "ADDED observed -->50",
      ].sort(),
    );
    expect(informers.get(RES, "ns/observed")?.metadata.resourceVersion).toBe("50");
    expect(informers.get(RES, "ns/gone")).toBeUndefined();
    expect(informers.keys(RES).sort()).toEqual(["ns/changed", "ns/new", "ns/observed", "ns/same"]);
  });

  it("lists again from the start when its snapshot is compacted between two pages", async () => {
    const state: ShardState = { objects: [], head: 5000, compacted: 0, expire: new Set(["1000"]) };
    for (let i = 0; i < 1500; i++) state.objects.push(cm(`c-${i}`, 100 + i));
    const informers = new Informers(fakeShard(state), [RES]);
    let added = 0;
    informers.onChange((_res, type) => {
      if (type === "ADDED") added++;
    });
    await informers.startAll();
    expect(state.lists).toBe(2);
    expect(added).toBe(1500);
    expect(informers.keys(RES)).toHaveLength(1500);
  });
});

describe("Informers filters", () => {
  it("caches only the objects a filter keeps, and drops one that stops matching", async () => {
    const state: ShardState = { objects: [cm("keep-a", 10), cm("other", 11)], head: 20, compacted: 0 };
    const kept = (o: KubeObject) => o.metadata.name!.startsWith("keep-") && !o.metadata.labels?.drop;
    const informers = new Informers(fakeShard(state), [RES], { [RES]: kept });
    const events: string[] = [];
    informers.onChange((_res, type, obj) => events.push(`${type} ${obj.metadata.name}`));
    await informers.startAll();
    expect(informers.keys(RES)).toEqual(["ns/keep-a"]);
    // writes seen later pass the same filter
    informers.observe(RES, cm("other-2", 21));
    informers.observe(RES, cm("keep-b", 22));
    expect(informers.keys(RES).sort()).toEqual(["ns/keep-a", "ns/keep-b"]);
    const dropped = cm("keep-a", 23);
    dropped.metadata.labels = { drop: "yes" };
    informers.observe(RES, dropped);
    expect(informers.keys(RES)).toEqual(["ns/keep-b"]);
    expect(events).toEqual(["ADDED keep-a", "ADDED keep-b", "DELETED keep-a"]);
  });
});
