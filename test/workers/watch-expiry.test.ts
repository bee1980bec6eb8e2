// Watch history beyond the compaction window: a watch from a compacted resourceVersion gets
// the 410 Expired ERROR event upstream sends, clients re-list and resume; a watch from a
// recent resourceVersion replays exactly what followed it. Own server: a 50-event window.
import { CoreV1Api, KubeConfig, ListWatch, type V1ConfigMap, Watch } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, notRootCA, rootCAIn, type Target } from "../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer } from "../helpers/own-server";
import { bigConfigMap, createBig, openSlowList } from "../helpers/slow-list";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy";
import { openWatch } from "../helpers/watch-stream";

const WINDOW = 50;
const WORKERS = 8;
const OBJECTS_PER_WORKER = 3;
const UPDATES_PER_WORKER = 75; // 8 x (3 + 75 + 1) = 632 changes: compaction ran at 256 and 512

interface Ack {
  type: "ADDED" | "MODIFIED" | "DELETED";
  name: string;
  rv: number;
}

let server: OwnServer;
let t: Target;
const ns = "expiry";
const path = `/api/v1/namespaces/${ns}/configmaps`;
const acks: Ack[] = [];
let firstRV = 0;

function cm(name: string, step: number) {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { step: String(step) } };
}

async function write(type: Ack["type"], name: string, step: number): Promise<void> {
  let r: Awaited<ReturnType<typeof api>>;
  if (type === "ADDED") r = await api(t, "POST", path, cm(name, step));
  else if (type === "MODIFIED")
    r = await api(t, "PUT", `${path}/${name}`, cm(name, step)); // no RV: unconditional
  else r = await api(t, "DELETE", `${path}/${name}`);
  if (r.status !== (type === "ADDED" ? 201 : 200)) throw new Error(`${type} ${name}: ${r.status} ${r.text}`);
  // a DELETE answers with the object as deleted, carrying the deletion's resourceVersion
  acks.push({ type, name, rv: Number(r.json.metadata?.resourceVersion) });
}

/** 632 changes from 8 concurrent writers, each on its own objects. */
async function churn(prefix: string): Promise<void> {
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => {
      const names = Array.from({ length: OBJECTS_PER_WORKER }, (_, i) => `${prefix}-${w}-${i}`);
      for (const n of names) await write("ADDED", n, 0);
      for (let i = 0; i < UPDATES_PER_WORKER; i++) await write("MODIFIED", names[i % names.length], i + 1);
      await write("DELETED", names[0], -1);
    }),
  );
}

const key = (e: { type: string; object: any }) =>
  `${e.type} ${e.object.metadata.name} ${e.object.metadata.resourceVersion}`;
const ackKey = (a: Ack) => `${a.type} ${a.name} ${a.rv}`;
const mine = (e: { object: any }) => String(e.object?.metadata?.name).startsWith("w-");

/** Opens a watch from `rv`, expects `want` (in order) and nothing more within a short grace. */
async function expectReplay(rv: number, want: Ack[]): Promise<void> {
  const w = await openWatch(t, `${path}?watch=true&resourceVersion=${rv}`);
  try {
    const deadline = Date.now() + 10_000;
    while (w.events.filter(mine).length < want.length && Date.now() < deadline)
      await w.waitFor(w.events.length + 1, 10_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(w.events.filter((e) => e.type === "ERROR")).toEqual([]);
    expect(w.events.filter(mine).map(key)).toEqual(want.map(ackKey));
  } finally {
    w.close();
  }
}

async function expectExpired(rv: number): Promise<string> {
  const w = await openWatch(t, `${path}?watch=true&resourceVersion=${rv}`);
  try {
    await w.waitFor(1, 10_000);
    const [e] = w.events;
    expect(
      `${e.type} ${e.object?.metadata?.name ?? ""} ${e.object?.metadata?.resourceVersion ?? ""}`,
      `watch from ${rv}`,
    ).toMatch(/^ERROR/);
    expect(e.object).toMatchObject({
      kind: "Status",
      apiVersion: "v1",
      status: "Failure",
      code: 410,
      reason: "Expired",
    });
    expect(e.object.message).toMatch(new RegExp(`^too old resource version: ${rv} \\(\\d+\\)$`));
    // upstream sends that one ERROR event on a 200 stream, then closes it
    await Promise.race([
      w.ended,
      new Promise((_, rej) => setTimeout(() => rej(new Error("stream not closed after ERROR")), 5000)),
    ]);
    expect(w.events).toHaveLength(1);
    return e.object.message;
  } finally {
    w.close();
  }
}

beforeAll(async () => {
  server = await startOwnServer({ vars: { EDGEPLANE_WATCH_WINDOW_EVENTS: String(WINDOW) } });
  t = server;
  const r = await api(t, "POST", "/api/v1/namespaces", {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: ns },
  });
  if (r.status !== 201) throw new Error(`namespace: ${r.status} ${r.text}`);
  // the root CA publisher's map is made now, before any resourceVersion the tests note
  await rootCAIn(t, ns);
});

afterAll(async () => {
  await server?.stop();
  removeStateDir(server?.stateDir);
});

describe("watch beyond the compaction window", () => {
  let informer: ListWatch<V1ConfigMap> | undefined;
  let proxy: TcpProxy | undefined;
  let lists = 0;
  let stopped = false;

  afterAll(async () => {
    stopped = true;
    await informer?.stop();
    await proxy?.close();
  });

  it("an informer cut off during the churn gets 410 on resume, re-lists and converges", async () => {
    // a client-node informer (the makeInformer composition) reaching the server through a relay
    proxy = await startTcpProxy(server.port);
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [
        {
          name: "relay",
          server: `https://127.0.0.1:${proxy.port}`,
          caData: Buffer.from(server.caCert).toString("base64"),
        },
      ],
      users: [{ name: "admin", token: t.token }],
      contexts: [{ name: "relay", cluster: "relay", user: "admin" }],
      currentContext: "relay",
    });
    const core = kc.makeApiClient(CoreV1Api);
    informer = new ListWatch<V1ConfigMap>(
      path,
      new Watch(kc),
      async () => {
        lists++;
        return core.listNamespacedConfigMap({ namespace: ns });
      },
      false,
    );
    const inf = informer;
    inf.on("error", () => {
      if (!stopped) setTimeout(() => !stopped && inf.start().catch(() => {}), 100);
    });
    await write("ADDED", "w-first", 0);
    firstRV = acks[0].rv;
    await inf.start();
    expect(lists).toBe(1);
    expect(
      inf
        .list(ns)
        .filter(notRootCA)
        .map((o) => o.metadata!.name),
    ).toEqual(["w-first"]);

    proxy.cutAll();
    proxy.refuse(true);
    await churn("w");
    expect(acks.length).toBe(1 + WORKERS * (OBJECTS_PER_WORKER + UPDATES_PER_WORKER + 1));
    proxy.refuse(false);

    const now = await api(t, "GET", path);
    const want = now.json.items.map((o: any) => `${o.metadata.name} ${o.metadata.resourceVersion}`).sort();
    const deadline = Date.now() + 20_000;
    const have = () =>
      inf
        .list(ns)
        .map((o) => `${o.metadata!.name} ${o.metadata!.resourceVersion}`)
        .sort();
    while (JSON.stringify(have()) !== JSON.stringify(want) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect(have()).toEqual(want);
    // it could only have caught up by listing again: the history it needed is gone
    expect(lists).toBe(2);
  });

  it("a watch from a compacted resourceVersion gets one ERROR event: 410 Expired", async () => {
    expect(firstRV).toBeGreaterThan(0);
    await expectExpired(firstRV);
    // a list at a compacted resourceVersion (exact match) is 410 as well
    const list = await api(t, "GET", `${path}?resourceVersion=${firstRV}&resourceVersionMatch=Exact`);
    expect(list.status).toBe(410);
    expect(list.json).toMatchObject({ kind: "Status", code: 410, reason: "Expired" });
  });

  it("the number in the 410 message is the oldest resourceVersion a watch can start from", async () => {
    const message = await expectExpired(firstRV);
    const oldest = Number(/\((\d+)\)$/.exec(message)![1]);
    const sorted = [...acks].sort((a, b) => a.rv - b.rv);
    expect(oldest).toBeGreaterThan(firstRV);
    // from `oldest` on: a gap-free replay; below it: Expired (upstream: rv < oldest-1 of the cache)
    await expectReplay(
      oldest,
      sorted.filter((a) => a.rv > oldest),
    );
    await expectExpired(oldest - 1);
  });

  it("a watch from a recent resourceVersion replays exactly the changes after it, in order", async () => {
    const sorted = [...acks].sort((a, b) => a.rv - b.rv);
    // acknowledged resourceVersions are distinct and the log has no holes we did not make
    expect(new Set(sorted.map((a) => a.rv)).size).toBe(sorted.length);
    const from = sorted[sorted.length - 31].rv; // 30 changes back: inside the window
    await expectReplay(from, sorted.slice(-30));
  });

  it("after a re-list, a watch from the list's resourceVersion sees later changes", async () => {
    const list = await api(t, "GET", path);
    expect(list.status).toBe(200);
    const listRV = Number(list.json.metadata.resourceVersion);
    expect(listRV).toBeGreaterThanOrEqual(Math.max(...acks.map((a) => a.rv)));
    const w = await openWatch(t, `${path}?watch=true&resourceVersion=${listRV}`);
    try {
      const before = acks.length;
      await write("ADDED", "w-late", 1);
      await write("MODIFIED", "w-late", 2);
      await write("MODIFIED", "w-0-1", 99);
      await write("DELETED", "w-late", 3);
      await write("ADDED", "w-late", 4);
      const later = acks.slice(before);
      await w.waitFor(later.length, 10_000);
      await new Promise((r) => setTimeout(r, 300));
      expect(w.events.map(key)).toEqual(later.map(ackKey));
    } finally {
      w.close();
    }
  });
});

describe("a list streamed across compaction", () => {
  /** `n` small writes in a namespace of their own: past a multiple of 256, compaction runs */
  async function writes(n: number, prefix: string): Promise<void> {
    for (let i = 0; i < n; i++) await write(i === 0 ? "ADDED" : "MODIFIED", `${prefix}-churn`, i);
  }

  it("keeps the snapshot it started at readable until it ends, and no longer", async () => {
    const pins = "/api/v1/namespaces/expiry/configmaps";
    const name = (i: number) => `pin-${String(i).padStart(2, "0")}`;
    await createBig(t, pins, 30, name);
    const open = await openSlowList(t, pins);
    expect((await api(t, "PUT", `${pins}/pin-28`, bigConfigMap(name(28), "b"))).status).toBe(200);
    expect((await api(t, "DELETE", `${pins}/pin-29`)).status).toBe(200);
    // far past the 50-event window: compaction runs, but stops short of the open list
    await writes(300, "pin");
    const list = await open.rest();
    const pinned = list.items.filter((o: any) => o.metadata.name.startsWith("pin-") && o.data?.fill);
    expect(pinned.map((o: any) => o.metadata.name)).toEqual(Array.from({ length: 30 }, (_, i) => name(i)));
    expect(pinned.every((o: any) => o.data.fill[0] === "a")).toBe(true);
    // the list is over: its snapshot goes with the next compaction
    await writes(300, "unpin");
    await expectExpired(Number(list.metadata.resourceVersion));
    expect((await api(t, "DELETE", `${pins}?labelSelector=`)).status).toBe(200);
  });
});
