// A commit's fan-out through WatchHub: several watchers, several events in one commit. Each
// watcher gets exactly its events in order; watchers that see the same events get one shared
// copy of the joined bytes. workerd's IdentityTransformStream is a plain TransformStream here
// (an identity transform passes each chunk on as it is).
import { beforeAll, describe, expect, it } from "vitest";
import { lookupGVR } from "../../../api/registry";
import { parseFieldSelector, parseLabelSelector } from "../../../api/selectors";
import { type Change, WatchHub } from "../../../durable-objects/store/watchers";

const configmaps = lookupGVR("", "v1", "configmaps")!;

beforeAll(() => {
  (globalThis as Record<string, unknown>).IdentityTransformStream ??= TransformStream;
});

function change(i: number): Change {
  const labels = { parity: i % 2 ? "odd" : "even" };
  return {
    rv: 10 + i,
    type: "ADDED",
    namespace: "ns",
    name: `c${i}`,
    labels,
    fields: { "metadata.name": `c${i}`, "metadata.namespace": "ns" },
    prevLabels: null,
    prevFields: null,
    data: JSON.stringify({ kind: "ConfigMap", metadata: { name: `c${i}`, namespace: "ns", labels } }),
  };
}

async function firstChunk(readable: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const reader = readable.getReader();
  const { value } = await reader.read();
  reader.releaseLock();
  return value!;
}

const names = (bytes: Uint8Array) =>
  new TextDecoder()
    .decode(bytes)
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l).object.metadata.name);

describe("a commit's fan-out", () => {
  it("gives each watcher its events in one write, shared among watchers that see the same", async () => {
    const hub = new WatchHub(
      () => configmaps,
      () => 0,
    );
    const open = (labels: string) =>
      hub.open(
        { namespace: "ns", labels: parseLabelSelector(labels), fields: parseFieldSelector("") },
        { bookmarks: false },
      ).readable;
    const all = [open(""), open(""), open("")];
    const odd = [open("parity=odd"), open("parity=odd")];
    const even = open("parity=even");
    hub.publish(Array.from({ length: 6 }, (_, i) => change(i)));
    const allBytes = await Promise.all(all.map(firstChunk));
    const oddBytes = await Promise.all(odd.map(firstChunk));
    const evenBytes = await firstChunk(even);
    for (const b of allBytes) expect(names(b)).toEqual(["c0", "c1", "c2", "c3", "c4", "c5"]);
    for (const b of oddBytes) expect(names(b)).toEqual(["c1", "c3", "c5"]);
    expect(names(evenBytes)).toEqual(["c0", "c2", "c4"]);
    // one joined copy per distinct sequence of events
    expect(allBytes[1]).toBe(allBytes[0]);
    expect(allBytes[2]).toBe(allBytes[0]);
    expect(oddBytes[1]).toBe(oddBytes[0]);
    expect(evenBytes).not.toBe(oddBytes[0]);
    hub.closeAll();
  });
});
