// Where pods enter the agent: the apiserver's list and watch answers are JSON of any shape
// until narrowed. The pod source, over the agent's real HTTP client, hands its workers only
// stored pods (metadata with name, namespace and uid); anything else in a list or a watch
// stream is skipped, never passed on and never fatal.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Api } from "../../../agent/edgelet/api";
import { PodSource, type PodUpdate } from "../../../agent/edgelet/pod-source";
import { parseWatchFrame } from "../../../agent/lib/http";
import { asApiBody, isPod, itemsOf, stringData } from "../../../agent/lib/kube-types";

const pod = (name: string) => ({
  metadata: { name, namespace: "ns", uid: `uid-${name}`, resourceVersion: "5" },
  spec: { nodeName: "n1", containers: [{ name: "c", image: "busybox" }] },
});

const closers: (() => void)[] = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

/** An apiserver that lists `items` and streams `lines` on the first watch (later watches stay silent). */
async function apiserver(items: unknown[], lines: string[]): Promise<string> {
  let watches = 0;
  const open: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname !== "/api/v1/pods") {
      res.writeHead(404).end();
      return;
    }
    if (url.searchParams.get("watch") !== "1") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ kind: "PodList", metadata: { resourceVersion: "7" }, items }));
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    open.push(res);
    if (watches++ === 0) for (const l of lines) res.write(`${l}\n`);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  closers.push(() => {
    for (const r of open) r.destroy();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("pod source boundary", () => {
  it("passes on stored pods only, from lists and watch streams", async () => {
    const server = await apiserver(
      [pod("a"), { metadata: { name: "no-uid", namespace: "ns" } }, "garbage", null, 42],
      [
        "not json",
        "[1,2]",
        JSON.stringify({ type: "ADDED", object: { metadata: {} } }),
        JSON.stringify({ type: "ADDED", object: "a string" }),
        JSON.stringify({ type: "MODIFIED", object: { metadata: { uid: "u", name: 3, namespace: "ns" } } }),
        JSON.stringify({ type: "ADDED", object: pod("b") }),
        JSON.stringify({ type: "DELETED", object: pod("a") }),
      ],
    );
    const api = new Api({ server });
    closers.push(() => api.close());
    const seen: [PodUpdate, string][] = [];
    const logs: string[] = [];
    const source = new PodSource({
      api,
      nodeName: "n1",
      resyncMs: 60_000,
      onUpdate: (kind, p) => seen.push([kind, p.metadata.uid]),
      log: (m) => logs.push(m),
    });
    source.start();
    closers.push(() => void source.stop());
    await source.synced;
    for (let i = 0; i < 100 && seen.length < 3; i++) await new Promise((r) => setTimeout(r, 20));
    await source.stop();
    expect(seen).toEqual([
      ["add", "uid-a"],
      ["add", "uid-b"],
      ["remove", "uid-a"],
    ]);
    expect([...source.pods.keys()]).toEqual(["uid-b"]);
    expect(source.lists).toBe(1); // nothing it was shown made it list again
    expect(logs).toEqual([]);
  });
});

describe("kube-types narrowing", () => {
  it("isPod wants an object whose metadata has a name, a namespace and a uid", () => {
    expect(isPod(pod("a"))).toBe(true);
    expect(isPod({ metadata: { name: "a", namespace: "ns", uid: "" } })).toBe(false);
    expect(isPod({ metadata: { name: "a", uid: "u" } })).toBe(false);
    expect(isPod({ metadata: { name: "a", namespace: "ns", uid: "u" }, spec: "x" })).toBe(false);
    expect(isPod([pod("a")])).toBe(false);
    expect(isPod(null)).toBe(false);
  });

  it("a reply body is an object or nothing; list items and config data only when they are", () => {
    expect(asApiBody([1])).toBeUndefined();
    expect(asApiBody("x")).toBeUndefined();
    expect(itemsOf(asApiBody({ items: "no" }))).toBeUndefined();
    expect(itemsOf(asApiBody({ items: [1] }))).toEqual([1]);
    expect(stringData({ a: "1", b: 2, c: null })).toEqual({ a: "1" });
    expect(stringData(["a"])).toBeUndefined();
  });

  it("a watch line is a frame only when it is a JSON object", () => {
    expect(parseWatchFrame("")).toBeUndefined();
    expect(parseWatchFrame("{")).toBeUndefined();
    expect(parseWatchFrame("[]")).toBeUndefined();
    expect(parseWatchFrame('{"type":"ADDED","object":[]}')).toEqual({ type: "ADDED", object: undefined });
    expect(parseWatchFrame('{"type":1,"object":{"a":1}}')).toEqual({ type: undefined, object: { a: 1 } });
  });
});
