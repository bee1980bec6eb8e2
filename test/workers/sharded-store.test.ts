// Pods spread over 4 store shards (EDGEPLANE_STORE_SHARDS, docs/sharding.md): what spans
// shards keeps upstream's semantics. 20 writers in 8 namespaces create, relabel and delete
// pods while a list is paged from a snapshot; then a watch from a resourceVersion taken before
// any of it, and a watch resumed from the middle of that one, each see every acknowledged
// change exactly once, each object's in its order; the paged list is exactly the state at its
// snapshot, as the watch's events up to it rebuild it.
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { shardOf } from "../../durable-objects/store/shard-plan";
import { api, hasKubectl, KUBECTL, type Target } from "../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer } from "../helpers/own-server";
import { openWatch, type WatchEvent } from "../helpers/watch-stream";

const SHARDS = 4;
const NAMESPACES = 8;
const WRITERS = 20;
const PODS_PER_WRITER = 2;
const RELABELS = 3;

let server: OwnServer;
let t: Target;

/** One acknowledged change: the pod, the step its labels carry (-1 for a delete), the type. */
interface Ack {
  key: string;
  step: number;
  type: "ADDED" | "MODIFIED" | "DELETED";
}

function pod(name: string, step: number) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, labels: { step: String(step) } },
    // no scheduler of ours takes them: nobody but the test writes them
    spec: { schedulerName: "nobody", containers: [{ name: "c", image: "busybox" }] },
  };
}

/** the front door's secret for the shards' watch relays, set here so the test can ask as it does */
const RELAY_SECRET = "sharded-relay-secret-0123456789abcdef";

const MERGE = { "content-type": "application/merge-patch+json" };

const nsName = (i: number) => `spread-${i}`;

beforeAll(async () => {
  server = await startOwnServer({
    vars: { EDGEPLANE_STORE_SHARDS: `pods=${SHARDS}`, EDGEPLANE_RELAY_SECRET: RELAY_SECRET },
  });
  t = server;
  for (let i = 0; i < NAMESPACES; i++) {
    const r = await api(t, "POST", "/api/v1/namespaces", {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: nsName(i) },
    });
    expect(r.status).toBe(201);
  }
}, 120_000);

afterAll(async () => {
  await server?.stop();
  removeStateDir(server?.stateDir);
});

/** The shard part that moved between two vectors: each change moves exactly one. */
function movedShard(before: number[], after: number[]): number {
  const moved = after.flatMap((v, i) => (v !== before[i] ? [i] : []));
  expect(moved).toHaveLength(1);
  expect(after[moved[0]]).toBeGreaterThan(before[moved[0]]);
  return moved[0];
}

const vector = (rv: string) => rv.split(".").map(Number);

function stepOf(e: WatchEvent): number {
  return e.type === "DELETED" ? -1 : Number(e.object.metadata.labels.step);
}

describe("pods over 4 shards", () => {
  it("lists, pages and watches across shards with every change exactly once", async () => {
    // a few pods before the start, so the snapshot list has something of its own
    for (let i = 0; i < NAMESPACES; i++)
      expect((await api(t, "POST", `/api/v1/namespaces/${nsName(i)}/pods`, pod("before", 0))).status).toBe(
        201,
      );
    const start = await api(t, "GET", "/api/v1/pods");
    const startRV: string = start.json.metadata.resourceVersion;
    expect(vector(startRV)).toHaveLength(SHARDS);
    // a namespace's list is its shard's alone: a plain revision
    const oneNs = await api(t, "GET", `/api/v1/namespaces/${nsName(0)}/pods`);
    expect(oneNs.json.metadata.resourceVersion).toMatch(/^\d+$/);

    const acks: Ack[] = [];
    const write = async (method: string, path: string, body: unknown, ack: Ack) => {
      const r = await api(t, method, path, body, method === "PATCH" ? MERGE : {});
      if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
      acks.push(ack);
    };
    const writer = async (w: number) => {
      const ns = nsName(w % NAMESPACES);
      for (let p = 0; p < PODS_PER_WRITER; p++) {
        const name = `w${w}-p${p}`;
        const key = `${ns}/${name}`;
        const path = `/api/v1/namespaces/${ns}/pods`;
        await write("POST", path, pod(name, 1), { key, step: 1, type: "ADDED" });
        for (let s = 2; s <= RELABELS + 1; s++)
          await write(
            "PATCH",
            `${path}/${name}`,
            JSON.stringify({ metadata: { labels: { step: String(s) } } }),
            { key, step: s, type: "MODIFIED" },
          );
        // every other pod goes again (unbound: deleted at once)
        if ((w + p) % 2 === 0)
          await write("DELETE", `${path}/${name}`, undefined, { key, step: -1, type: "DELETED" });
      }
    };
    // a paged list starts while the writers run; its pages are read after they are done
    const writing = Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
    await new Promise((r) => setTimeout(r, 150));
    const firstPage = await api(t, "GET", "/api/v1/pods?limit=7");
    expect(firstPage.status).toBe(200);
    await writing;
    const snapRV: string = firstPage.json.metadata.resourceVersion;
    const paged = [...firstPage.json.items];
    let next: string | undefined = firstPage.json.metadata.continue;
    while (next) {
      const page = await api(t, "GET", `/api/v1/pods?limit=7&continue=${encodeURIComponent(next)}`);
      expect(page.status).toBe(200);
      expect(page.json.metadata.resourceVersion).toBe(snapRV);
      paged.push(...page.json.items);
      next = page.json.metadata.continue;
    }
    const exact = await api(t, "GET", `/api/v1/pods?resourceVersion=${snapRV}&resourceVersionMatch=Exact`);
    expect(exact.status).toBe(200);

    // the watch from before it all
    const total = acks.length;
    expect(total).toBe(WRITERS * PODS_PER_WRITER * (RELABELS + 1) + WRITERS); // half the pods deleted
    const watch = await openWatch(t, `/api/v1/pods?watch=1&resourceVersion=${startRV}`);
    const events = await watch.waitFor(total, 20_000);
    await new Promise((r) => setTimeout(r, 300)); // nothing more comes
    watch.close();
    expect(watch.events).toHaveLength(total);

    // exactly the acknowledged changes, once each
    const seen = events.map(
      (e) => `${e.object.metadata.namespace}/${e.object.metadata.name} ${e.type} ${stepOf(e)}`,
    );
    expect([...seen].sort()).toEqual(acks.map((a) => `${a.key} ${a.type} ${a.step}`).sort());
    // each object's changes in its order; each event moves one shard's part of the vector
    const lastStep = new Map<string, number>();
    let vec = vector(startRV);
    const shardOfNs = new Map<string, number>();
    const eventShard: number[] = [];
    for (const e of events) {
      const key = `${e.object.metadata.namespace}/${e.object.metadata.name}`;
      const step = stepOf(e);
      const prev = lastStep.get(key) ?? 0;
      if (step === -1) expect(prev).toBe(RELABELS + 1);
      else expect(step).toBe(prev + 1);
      lastStep.set(key, step);
      const v = vector(e.object.metadata.resourceVersion);
      const shard = movedShard(vec, v);
      vec = v;
      eventShard.push(shard);
      // split by namespace: a namespace's pods are all in one shard
      const ns = e.object.metadata.namespace;
      expect(shardOfNs.get(ns) ?? shard).toBe(shard);
      shardOfNs.set(ns, shard);
    }
    expect(new Set(shardOfNs.values()).size).toBeGreaterThan(1);

    // resuming from the middle of the stream gives exactly the rest
    const cut = Math.floor(total / 3);
    const resumed = await openWatch(
      t,
      `/api/v1/pods?watch=1&resourceVersion=${events[cut - 1].object.metadata.resourceVersion}`,
    );
    const rest = await resumed.waitFor(total - cut, 20_000);
    await new Promise((r) => setTimeout(r, 300));
    resumed.close();
    expect(resumed.events).toHaveLength(total - cut);
    const restKeys = (list: WatchEvent[]) =>
      list
        .map((e) => `${e.object.metadata.namespace}/${e.object.metadata.name} ${e.type} ${stepOf(e)}`)
        .sort();
    expect(restKeys(rest)).toEqual(restKeys(events.slice(cut)));

    // the paged list is the state at its snapshot: the start's pods and every change up to it
    const snap = vector(snapRV);
    const state = new Map<string, number>();
    for (const p of start.json.items) state.set(`${p.metadata.namespace}/${p.metadata.name}`, 0);
    let at = vector(startRV);
    events.forEach((e, k) => {
      const shard = eventShard[k];
      const v = vector(e.object.metadata.resourceVersion);
      at = v;
      if (v[shard] > snap[shard]) return; // after the snapshot in its shard
      const key = `${e.object.metadata.namespace}/${e.object.metadata.name}`;
      if (e.type === "DELETED") state.delete(key);
      else state.set(key, stepOf(e));
    });
    expect(at.every((v, i) => v >= snap[i])).toBe(true);
    const listed = (items: any[]) =>
      items.map((p) => `${p.metadata.namespace}/${p.metadata.name} ${p.metadata.labels.step}`);
    const expected = [...state].map(([k, s]) => `${k} ${s}`).sort();
    expect(listed(paged)).toEqual(expected); // sorted by key as one shard's list is
    expect(listed(exact.json.items)).toEqual(expected);
    // the snapshot caught some of the writers' work, not none or all of it
    expect(paged.length).toBeGreaterThan(NAMESPACES);
  });

  it("refuses a plain revision for a watch across shards with 410, and takes it in one namespace", async () => {
    const ns = nsName(1);
    const created = await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, pod("plain", 1));
    expect(created.status).toBe(201);
    const rv = created.json.metadata.resourceVersion;
    expect(rv).toMatch(/^\d+$/);
    const across = await openWatch(t, `/api/v1/pods?watch=1&resourceVersion=${rv}`);
    const [err] = await across.waitFor(1, 5_000);
    across.close();
    expect(err.type).toBe("ERROR");
    expect(err.object.code).toBe(410);
    const inNs = await openWatch(t, `/api/v1/namespaces/${ns}/pods?watch=1&resourceVersion=${rv}`);
    await api(
      t,
      "PATCH",
      `/api/v1/namespaces/${ns}/pods/plain`,
      JSON.stringify({ metadata: { labels: { step: "2" } } }),
      MERGE,
    );
    const [ev] = await inNs.waitFor(1, 5_000);
    inNs.close();
    expect(ev.type).toBe("MODIFIED");
    expect(ev.object.metadata.labels.step).toBe("2");
    // an update with the vector a cluster-wide watch gave is checked against the pod's own revision
    const list = await api(t, "GET", "/api/v1/pods");
    const w = await openWatch(
      t,
      `/api/v1/pods?watch=1&resourceVersion=${list.json.metadata.resourceVersion}`,
    );
    await api(
      t,
      "PATCH",
      `/api/v1/namespaces/${ns}/pods/plain`,
      JSON.stringify({ metadata: { labels: { step: "3" } } }),
      MERGE,
    );
    const [mod] = await w.waitFor(1, 5_000);
    w.close();
    const obj = mod.object;
    expect(obj.metadata.resourceVersion).toContain(".");
    obj.metadata.labels.step = "4";
    const put = await api(t, "PUT", `/api/v1/namespaces/${ns}/pods/plain`, obj);
    expect(put.status).toBe(200);
    const stale = await api(t, "PUT", `/api/v1/namespaces/${ns}/pods/plain`, obj);
    expect(stale.status).toBe(409);
  });

  it.skipIf(!hasKubectl)(
    "kubectl get pods -A -w: one header, then every shard's changes as rows",
    async () => {
      const p = spawn(KUBECTL, [
        "--kubeconfig",
        t.kubeconfigPath,
        "get",
        "pods",
        "-A",
        "-w",
        "-l",
        "watch=me",
      ]);
      let out = "";
      p.stdout.on("data", (d) => (out += d));
      try {
        await new Promise((r) => setTimeout(r, 1500));
        const spaces = [0, 1, 2, 3, 4, 5].map(nsName);
        for (const ns of spaces) {
          const body = pod("watched", 1);
          (body.metadata.labels as Record<string, string>).watch = "me";
          expect((await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, body)).status).toBe(201);
        }
        const lines = () => out.trim().split("\n");
        const deadline = Date.now() + 10_000;
        while (lines().length < spaces.length + 1 && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 100));
        const rows = lines();
        expect(rows[0].split(/\s+/).slice(0, 2)).toEqual(["NAMESPACE", "NAME"]);
        expect(rows.filter((l) => l.startsWith("NAMESPACE"))).toHaveLength(1);
        expect(
          rows
            .slice(1)
            .map((l) => l.split(/\s+/).slice(0, 2).join("/"))
            .sort(),
        ).toEqual(spaces.map((ns) => `${ns}/watched`).sort());
      } finally {
        p.kill();
      }
    },
  );

  it("watches across shards over a WebSocket: one event per message, with the vector", async () => {
    const list = await api(t, "GET", "/api/v1/pods?labelSelector=socket%3Dyes");
    const from = list.json.metadata.resourceVersion;
    const ws = new WebSocket(
      `${t.url.replace(/^http/, "ws")}/api/v1/pods?watch=1&labelSelector=socket%3Dyes&resourceVersion=${from}`,
      { headers: { authorization: `Bearer ${t.token}` } },
    );
    const events: WatchEvent[] = [];
    ws.on("message", (data) => events.push(JSON.parse(String(data))));
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    try {
      const spaces = [2, 3, 4, 5, 6, 7].map(nsName);
      for (const ns of spaces) {
        const body = pod("socket", 1);
        (body.metadata.labels as Record<string, string>).socket = "yes";
        expect((await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, body)).status).toBe(201);
      }
      const deadline = Date.now() + 10_000;
      while (events.length < spaces.length && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      expect(events.map((e) => `${e.type} ${e.object.metadata.namespace}`).sort()).toEqual(
        spaces.map((ns) => `ADDED ${ns}`).sort(),
      );
      let vec = vector(from);
      for (const e of events) {
        const v = vector(e.object.metadata.resourceVersion);
        movedShard(vec, v);
        vec = v;
      }
    } finally {
      ws.close();
    }
  });

  it("carries a namespace's watches on its own shard's relay through the front door", async () => {
    const plan = { count: SHARDS, by: "namespace" as const };
    const ns = [...Array(NAMESPACES).keys()].map(nsName).find((n) => shardOf(plan, n, "") > 0)!;
    const path = `/api/v1/namespaces/${ns}/pods?watch=1&labelSelector=relay%3Dyes`;
    const first = await openWatch(t, path);
    try {
      // the first watch's answer offered shard i's relay ("/pods~i") and the front door opened it:
      // a watch sent to the engine as the front door sends one is carried on it
      const deadline = Date.now() + 10_000;
      let relayed: string | null = null;
      while (!relayed && Date.now() < deadline) {
        const probe = await fetch(`http://127.0.0.1:${server.internalPort}${path}`, {
          headers: { authorization: `Bearer ${t.token}`, "x-edgeplane-relay": `${RELAY_SECRET} 999999` },
        });
        relayed = probe.headers.get("x-edgeplane-relayed");
        await probe.body?.cancel();
        if (!relayed) await new Promise((r) => setTimeout(r, 50));
      }
      expect(relayed).toBeTruthy();
      const second = await openWatch(t, path);
      const body = pod("relayed", 1);
      (body.metadata.labels as Record<string, string>).relay = "yes";
      expect((await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, body)).status).toBe(201);
      for (const w of [first, second]) {
        const [ev] = await w.waitFor(1, 5_000);
        expect(`${ev.type} ${ev.object.metadata.name}`).toBe("ADDED relayed");
      }
      second.close();
    } finally {
      first.close();
    }
  });

  it("answers a malformed vector or continue token with a 400 Status", async () => {
    for (const path of [
      "/api/v1/pods?resourceVersion=1.2&resourceVersionMatch=Exact",
      "/api/v1/pods?resourceVersion=1.x.2.3&resourceVersionMatch=Exact",
      "/api/v1/pods?watch=1&resourceVersion=1.2",
      "/api/v1/pods?limit=2&continue=bm90LWEtdG9rZW4",
    ]) {
      const r = await api(t, "GET", path);
      expect([path, r.status, r.json?.kind, r.json?.reason]).toEqual([path, 400, "Status", "BadRequest"]);
    }
  });
});
