// Store semantics through the real apiserver on workerd: what etcd + kube-apiserver promise.
import { describe, expect, it } from "vitest";
import { api, freshNamespace, ROOT_CA_MAP, rootCAIn, shared } from "../helpers/cluster";

const t = shared();

/**
 * A fresh namespace, once its kube-root-ca.crt is there: the publisher's write then lands
 * before anything a test lists or watches from, not amid it.
 */
async function namespace(): Promise<string> {
  const ns = await freshNamespace(t);
  await rootCAIn(t, ns);
  return ns;
}

function cm(name: string, data: Record<string, string> = {}, labels: Record<string, string> = {}) {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, labels }, data };
}

/** Reads a watch stream until `n` events arrived (or the time runs out). */
async function readEvents(path: string, n: number, ms = 5000): Promise<any[]> {
  const ctrl = new AbortController();
  const timer = setTimeout(() => ctrl.abort(), ms);
  const res = await fetch(t.url + path, {
    headers: { authorization: `Bearer ${t.token}` },
    signal: ctrl.signal,
  });
  const events: any[] = [];
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = "";
  try {
    while (events.length < n) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i: number;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (line) events.push(JSON.parse(line));
      }
    }
  } catch (e) {
    if (!ctrl.signal.aborted) throw e;
  } finally {
    clearTimeout(timer);
    ctrl.abort();
  }
  return events;
}

describe("store semantics", () => {
  it("creates with uid, creationTimestamp and resourceVersion; AlreadyExists on a taken name", async () => {
    const ns = await namespace();
    const r = await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm("a", { k: "v" }));
    expect(r.status).toBe(201);
    expect(r.json.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.json.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(Number(r.json.metadata.resourceVersion)).toBeGreaterThan(0);
    const again = await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm("a"));
    expect(again.status).toBe(409);
    expect(again.json).toMatchObject({
      kind: "Status",
      status: "Failure",
      reason: "AlreadyExists",
      code: 409,
      message: 'configmaps "a" already exists',
      details: { name: "a", kind: "configmaps" },
    });
  });

  it("settles a name once among concurrent creates, and frees it on delete", async () => {
    // concurrent creates land in one group commit: the staged ones must count as taken
    const ns = await namespace();
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const tries = await Promise.all(
      Array.from({ length: 8 }, (_, i) => api(t, "POST", path, cm("same", { i: `${i}` }))),
    );
    expect(tries.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    // names the shard never held, beside it, are created (the shard's filter says "not stored")
    const others = await Promise.all(
      Array.from({ length: 20 }, (_, i) => api(t, "POST", path, cm(`other-${i}`))),
    );
    expect(others.every((r) => r.status === 201)).toBe(true);
    expect((await api(t, "POST", path, cm("other-7"))).status).toBe(409);
    // a deleted name can be taken again, and then it is taken
    expect((await api(t, "DELETE", `${path}/same`)).status).toBe(200);
    expect((await api(t, "POST", path, cm("same", { v: "2" }))).status).toBe(201);
    expect((await api(t, "POST", path, cm("same"))).status).toBe(409);
    expect((await api(t, "GET", `${path}/same`)).json.data).toEqual({ v: "2" });
  });

  it("rejects a stale resourceVersion with 409 Conflict and bumps generation on spec change", async () => {
    const ns = await namespace();
    const dep = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "d" },
      spec: {
        selector: { matchLabels: { app: "d" } },
        template: {
          metadata: { labels: { app: "d" } },
          spec: { containers: [{ name: "c", image: "busybox" }] },
        },
      },
    };
    const created = await api(t, "POST", `/apis/apps/v1/namespaces/${ns}/deployments`, dep);
    expect(created.status).toBe(201);
    expect(created.json.metadata.generation).toBe(1);
    const stale = created.json.metadata.resourceVersion;
    // the deployment controller writes status meanwhile: read-modify-write with retry on 409
    const rmw = async (path: string, change: (o: any) => void) => {
      for (let i = 0; i < 20; i++) {
        const cur = (await api(t, "GET", path)).json;
        change(cur);
        const r = await api(t, "PUT", path, cur);
        if (r.status !== 409) return r;
      }
      throw new Error("no progress");
    };
    const u1 = await rmw(`/apis/apps/v1/namespaces/${ns}/deployments/d`, (o) => (o.spec.replicas = 3));
    expect(u1.status).toBe(200);
    expect(u1.json.metadata.generation).toBe(2);
    const v2 = structuredClone(u1.json);
    v2.spec.replicas = 4;
    v2.metadata.resourceVersion = stale;
    const u2 = await api(t, "PUT", `/apis/apps/v1/namespaces/${ns}/deployments/d`, v2);
    expect(u2.status).toBe(409);
    expect(u2.json.reason).toBe("Conflict");
    expect(u2.json.message).toContain("the object has been modified");
    // a status-only change does not bump generation
    const u3 = await rmw(`/apis/apps/v1/namespaces/${ns}/deployments/d/status`, (o) => {
      o.status = { ...o.status, observedGeneration: 2, collisionCount: 7 };
    });
    expect(u3.status).toBe(200);
    expect(u3.json.metadata.generation).toBe(2);
    expect(u3.json.status.collisionCount).toBe(7);
  });

  it("stores no empty finalizers, ownerReferences, labels or annotations (omitempty upstream)", async () => {
    const ns = await namespace();
    const base = `/api/v1/namespaces/${ns}/configmaps`;
    const created = await api(t, "POST", base, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "e", labels: {}, annotations: {}, finalizers: [], ownerReferences: [] },
    });
    expect(created.status, created.text).toBe(201);
    expect(Object.keys(created.json.metadata).sort()).toEqual([
      "creationTimestamp",
      "name",
      "namespace",
      "resourceVersion",
      "uid",
    ]);
    // taking the last finalizer off, as a controller does, leaves no empty list
    const withOne = await api(
      t,
      "PATCH",
      `${base}/e`,
      { metadata: { finalizers: ["x/y"], labels: { a: "b" } } },
      {
        "content-type": "application/merge-patch+json",
      },
    );
    expect(withOne.json.metadata.finalizers).toEqual(["x/y"]);
    const json = { "content-type": "application/json-patch+json" };
    const ops = [
      { op: "remove", path: "/metadata/finalizers/0" },
      { op: "remove", path: "/metadata/labels/a" },
    ];
    const emptied = await api(t, "PATCH", `${base}/e`, ops, json);
    expect(emptied.status, emptied.text).toBe(200);
    expect(emptied.json.metadata.finalizers).toBeUndefined();
    expect(emptied.json.metadata.labels).toBeUndefined();
  });

  it("keeps the resourceVersion on an update that changes nothing, whatever the key order", async () => {
    const ns = await namespace();
    const path = `/api/v1/namespaces/${ns}/configmaps/same`;
    const created = await api(
      t,
      "POST",
      `/api/v1/namespaces/${ns}/configmaps`,
      cm("same", { a: "1", b: "2" }),
    );
    expect(created.status).toBe(201);
    const rv = created.json.metadata.resourceVersion;
    // the same object with its keys in reverse order at every level
    const reversed = (v: any): any =>
      v && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(
            Object.entries(v)
              .reverse()
              .map(([k, x]) => [k, reversed(x)]),
          )
        : v;
    const same = await api(t, "PUT", path, reversed(created.json));
    expect(same.status).toBe(200);
    expect(same.json.metadata.resourceVersion).toBe(rv);
    // a change of the same length is still a change
    const changed = await api(t, "PUT", path, { ...created.json, data: { a: "1", b: "3" } });
    expect(changed.status).toBe(200);
    expect(Number(changed.json.metadata.resourceVersion)).toBeGreaterThan(Number(rv));
  });

  it("filters lists by label and field selectors", async () => {
    const ns = await namespace();
    for (const [n, tier] of [
      ["a", "web"],
      ["b", "db"],
      ["c", "web"],
    ] as const) {
      expect((await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm(n, {}, { tier }))).status).toBe(
        201,
      );
    }
    const web = await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps?labelSelector=tier%3Dweb`);
    expect(web.json.items.map((i: any) => i.metadata.name)).toEqual(["a", "c"]);
    const notWeb = await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps?labelSelector=tier!%3Dweb`);
    // the root CA map has no tier label either
    expect(notWeb.json.items.map((i: any) => i.metadata.name)).toEqual(["b", ROOT_CA_MAP]);
    const setSel = await api(
      t,
      "GET",
      `/api/v1/namespaces/${ns}/configmaps?labelSelector=${encodeURIComponent("tier in (db,x)")}`,
    );
    expect(setSel.json.items.map((i: any) => i.metadata.name)).toEqual(["b"]);
    const byName = await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps?fieldSelector=metadata.name%3Dc`);
    expect(byName.json.items.map((i: any) => i.metadata.name)).toEqual(["c"]);
    const bad = await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps?fieldSelector=spec.bogus%3Dx`);
    expect(bad.status).toBe(400);
    expect(bad.json.message).toContain("field label not supported: spec.bogus");
  });

  it("matches selectors of hundreds of terms in full (past what SQL takes in one query)", async () => {
    const ns = await namespace();
    const labels: Record<string, string> = {};
    for (let i = 0; i < 300; i++) labels[`l${i}`] = "v";
    expect((await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm("all", {}, labels))).status).toBe(
      201,
    );
    const some = { ...labels, l299: "other" };
    expect((await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm("some", {}, some))).status).toBe(
      201,
    );
    const sel = (extra: string[]) =>
      encodeURIComponent([...Object.keys(labels).map((k) => `${k}=v`), ...extra].join(","));
    const all = await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps?labelSelector=${sel([])}`);
    expect(all.status, all.text.slice(0, 200)).toBe(200);
    // the term that tells them apart is the 300th
    expect(all.json.items.map((i: any) => i.metadata.name)).toEqual(["all"]);
    const none = await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps?labelSelector=${sel(["l0!=v"])}`);
    expect(none.status).toBe(200);
    expect(none.json.items).toEqual([]);
  });

  it("selects by the labels an object had at an older resourceVersion, and by exact values only", async () => {
    const ns = await namespace();
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const names = (r: { json: any }) => r.json.items.map((i: any) => i.metadata.name);
    expect((await api(t, "POST", path, cm("moved", {}, { tier: "web" }))).status).toBe(201);
    // a value that starts with the wanted one, and an empty value
    expect((await api(t, "POST", path, cm("lookalike", {}, { tier: "webby" }))).status).toBe(201);
    expect((await api(t, "POST", path, cm("empty", {}, { tier: "" }))).status).toBe(201);
    const before = await api(t, "GET", path);
    const rv = before.json.metadata.resourceVersion;
    const moved = await api(t, "GET", `${path}/moved`);
    moved.json.metadata.labels = { tier: "db" };
    expect((await api(t, "PUT", `${path}/moved`, moved.json)).status).toBe(200);

    const sel = (s: string, extra = "") =>
      api(t, "GET", `${path}?labelSelector=${encodeURIComponent(s)}${extra}`);
    expect(names(await sel("tier=web"))).toEqual([]);
    expect(names(await sel("tier in (web)"))).toEqual([]);
    expect(names(await sel("tier=db"))).toEqual(["moved"]);
    expect(names(await sel("tier="))).toEqual(["empty"]);
    // the list as of before the relabel: moved was still tier=web then
    const old = await sel("tier=web", `&resourceVersion=${rv}&resourceVersionMatch=Exact`);
    expect(old.status).toBe(200);
    expect(names(old)).toEqual(["moved"]);
    expect(names(await sel("tier=db", `&resourceVersion=${rv}&resourceVersionMatch=Exact`))).toEqual([]);
  });

  it("pages with limit/continue over one consistent snapshot", async () => {
    const ns = await namespace();
    for (let i = 0; i < 7; i++) {
      await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm(`p${i}`, { v: "old" }));
    }
    const p1 = await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps?limit=3`);
    // kube-root-ca.crt sorts first
    expect(p1.json.items.map((i: any) => i.metadata.name)).toEqual([ROOT_CA_MAP, "p0", "p1"]);
    expect(p1.json.metadata.continue).toBeTruthy();
    expect(p1.json.metadata.remainingItemCount).toBe(5);
    // with a selector the count is unknown, and left out as upstream does
    const filtered = await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps?limit=3&labelSelector=x!%3Dy`);
    expect(filtered.json.metadata.continue).toBeTruthy();
    expect(filtered.json.metadata.remainingItemCount).toBeUndefined();
    const snapRV = p1.json.metadata.resourceVersion;
    // change the world between pages: modify one, delete one, add one
    const p4 = (await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps/p4`)).json;
    p4.data.v = "new";
    expect((await api(t, "PUT", `/api/v1/namespaces/${ns}/configmaps/p4`, p4)).status).toBe(200);
    expect((await api(t, "DELETE", `/api/v1/namespaces/${ns}/configmaps/p5`)).status).toBe(200);
    await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm("p3a", { v: "new" }));
    const p2 = await api(
      t,
      "GET",
      `/api/v1/namespaces/${ns}/configmaps?limit=3&continue=${encodeURIComponent(p1.json.metadata.continue)}`,
    );
    expect(p2.status).toBe(200);
    expect(p2.json.metadata.resourceVersion).toBe(snapRV);
    expect(p2.json.items.map((i: any) => i.metadata.name)).toEqual(["p2", "p3", "p4"]);
    expect(p2.json.items[2].data.v).toBe("old");
    const p3 = await api(
      t,
      "GET",
      `/api/v1/namespaces/${ns}/configmaps?limit=3&continue=${encodeURIComponent(p2.json.metadata.continue)}`,
    );
    // p5, deleted after the snapshot, is still in it
    expect(p3.json.items.map((i: any) => i.metadata.name)).toEqual(["p5", "p6"]);
    expect(p3.json.metadata.continue).toBeUndefined();
    expect(p3.json.metadata.remainingItemCount).toBeUndefined();
  });

  it("watches from a resourceVersion replay the exact sequence, with selector transitions", async () => {
    const ns = await namespace();
    const base = await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps`);
    const from = base.json.metadata.resourceVersion;
    const a = (
      await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm("w", { n: "1" }, { keep: "yes" }))
    ).json;
    a.data.n = "2";
    const b = (await api(t, "PUT", `/api/v1/namespaces/${ns}/configmaps/w`, a)).json;
    b.metadata.labels = { keep: "no" };
    await api(t, "PUT", `/api/v1/namespaces/${ns}/configmaps/w`, b);
    await api(t, "DELETE", `/api/v1/namespaces/${ns}/configmaps/w`);
    const all = await readEvents(`/api/v1/namespaces/${ns}/configmaps?watch=true&resourceVersion=${from}`, 4);
    expect(all.map((e) => e.type)).toEqual(["ADDED", "MODIFIED", "MODIFIED", "DELETED"]);
    const rvs = all.map((e) => Number(e.object.metadata.resourceVersion));
    expect([...rvs].sort((x, y) => x - y)).toEqual(rvs);
    expect(all[1].object.data.n).toBe("2");
    const filtered = await readEvents(
      `/api/v1/namespaces/${ns}/configmaps?watch=true&resourceVersion=${from}&labelSelector=keep%3Dyes`,
      3,
      1500,
    );
    // the label change makes it stop matching: DELETED, and the real delete is not seen again
    expect(filtered.map((e) => e.type)).toEqual(["ADDED", "MODIFIED", "DELETED"]);
  });

  it("delivers live events to a watch in order", async () => {
    const ns = await namespace();
    const list = await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps`);
    const watching = readEvents(
      `/api/v1/namespaces/${ns}/configmaps?watch=1&resourceVersion=${list.json.metadata.resourceVersion}`,
      5,
    );
    await new Promise((r) => setTimeout(r, 200));
    for (let i = 0; i < 5; i++) await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm(`live${i}`));
    const evs = await watching;
    expect(evs.map((e) => e.object.metadata.name)).toEqual(["live0", "live1", "live2", "live3", "live4"]);
    expect(evs.every((e) => e.type === "ADDED")).toBe(true);
  });

  it("gives each of several live watchers exactly its events of writes that share commits", async () => {
    const ns = await namespace();
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const from = (await api(t, "GET", path)).json.metadata.resourceVersion;
    // three watchers see every event, two only the odd ones, one only the even ones (how a
    // commit's events are joined and shared is tested in test/unit/store/watch-publish.test.ts)
    const watch = (selector: string, n: number) =>
      readEvents(`${path}?watch=1&resourceVersion=${from}${selector}`, n, 10_000);
    const watchers = [
      watch("", 24),
      watch("", 24),
      watch("", 24),
      watch("&labelSelector=parity%3Dodd", 12),
      watch("&labelSelector=parity%3Dodd", 12),
      watch("&labelSelector=parity%3Deven", 12),
    ];
    await new Promise((r) => setTimeout(r, 300));
    const made = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        api(t, "POST", path, cm(`j${i}`, {}, { parity: i % 2 ? "odd" : "even" })),
      ),
    );
    expect(made.map((r) => r.status)).toEqual(Array(24).fill(201));
    const byRv = made
      .map((r) => r.json.metadata)
      .sort((a, b) => Number(a.resourceVersion) - Number(b.resourceVersion))
      .map((m) => m.name as string);
    const parity = (name: string) => (Number(name.slice(1)) % 2 ? "odd" : "even");
    const seen = await Promise.all(watchers);
    const names = seen.map((evs) => evs.map((e) => e.object.metadata.name as string));
    for (const n of names.slice(0, 3)) expect(n).toEqual(byRv);
    for (const n of names.slice(3, 5)) expect(n).toEqual(byRv.filter((x) => parity(x) === "odd"));
    expect(names[5]).toEqual(byRv.filter((x) => parity(x) === "even"));
  });

  it("concurrent writes, which share commits, see each other: one winner per name and version", async () => {
    const ns = await namespace();
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const target = (await api(t, "POST", path, cm("target", { n: "0" }))).json;
    const from = target.metadata.resourceVersion;
    const live = readEvents(`${path}?watch=1&resourceVersion=${from}`, 22, 10_000);
    await new Promise((r) => setTimeout(r, 200));
    // all at once: 20 distinct names, 8 creates of one name, 6 updates from the same version
    const results = await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => api(t, "POST", path, cm(`c${i}`))),
      ...Array.from({ length: 8 }, () => api(t, "POST", path, cm("dup"))),
      ...Array.from({ length: 6 }, (_, i) =>
        api(t, "PUT", `${path}/target`, { ...target, data: { n: String(i + 1) } }),
      ),
    ]);
    const codes = (from: number, to: number) =>
      results
        .slice(from, to)
        .map((r) => r.status)
        .sort();
    expect(codes(0, 20)).toEqual(Array(20).fill(201));
    expect(codes(20, 28)).toEqual([201, ...Array(7).fill(409)]);
    expect(codes(28, 34)).toEqual([200, ...Array(5).fill(409)]);
    const acked = results.filter((r) => r.status < 300);
    const rvs = acked.map((r) => Number(r.json.metadata.resourceVersion));
    expect(new Set(rvs).size).toBe(22);
    // the watch gets exactly what was acknowledged, in resourceVersion order, and a read after
    // each answer sees it
    const evs = await live;
    const seen = evs.map((e) => Number(e.object.metadata.resourceVersion));
    expect(seen).toEqual([...rvs].sort((a, b) => a - b));
    const winner = (await api(t, "GET", `${path}/target`)).json;
    expect(results.slice(28).find((r) => r.status === 200)!.json.data).toEqual(winner.data);
    const list = await api(t, "GET", path);
    expect(list.json.items).toHaveLength(22 + 1); // and kube-root-ca.crt
    expect(Number(list.json.metadata.resourceVersion)).toBeGreaterThanOrEqual(Math.max(...rvs));
  });
  it("keeps an object with finalizers until they are removed", async () => {
    const ns = await namespace();
    const obj = cm("fin");
    (obj.metadata as any).finalizers = ["example.com/hold"];
    await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, obj);
    const del = await api(t, "DELETE", `/api/v1/namespaces/${ns}/configmaps/fin`);
    expect(del.status).toBe(200);
    const held = await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps/fin`);
    expect(held.json.metadata.deletionTimestamp).toBeTruthy();
    const patched = await api(
      t,
      "PATCH",
      `/api/v1/namespaces/${ns}/configmaps/fin`,
      JSON.stringify({ metadata: { finalizers: null } }),
      {
        "content-type": "application/merge-patch+json",
      },
    );
    expect(patched.status).toBe(200);
    expect((await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps/fin`)).status).toBe(404);
  });

  it("deletes an unbound pod at once and leaves a bound one for its node", async () => {
    const ns = await namespace();
    const pod = (name: string) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name },
      spec: { containers: [{ name: "c", image: "busybox" }] },
    });
    await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, pod("free"));
    expect((await api(t, "DELETE", `/api/v1/namespaces/${ns}/pods/free`)).status).toBe(200);
    expect((await api(t, "GET", `/api/v1/namespaces/${ns}/pods/free`)).status).toBe(404);

    await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, pod("bound"));
    const bind = await api(t, "POST", `/api/v1/namespaces/${ns}/pods/bound/binding`, {
      apiVersion: "v1",
      kind: "Binding",
      metadata: { name: "bound" },
      target: { kind: "Node", name: "node-1" },
    });
    expect(bind.status).toBe(201);
    const bound = await api(t, "GET", `/api/v1/namespaces/${ns}/pods/bound`);
    expect(bound.json.spec.nodeName).toBe("node-1");
    expect(bound.json.status.conditions).toContainEqual(
      expect.objectContaining({ type: "PodScheduled", status: "True" }),
    );
    const rebind = await api(t, "POST", `/api/v1/namespaces/${ns}/pods/bound/binding`, {
      metadata: { name: "bound" },
      target: { kind: "Node", name: "node-2" },
    });
    expect(rebind.status).toBe(409);
    const del = await api(t, "DELETE", `/api/v1/namespaces/${ns}/pods/bound`);
    expect(del.status).toBe(200);
    const marked = await api(t, "GET", `/api/v1/namespaces/${ns}/pods/bound`);
    expect(marked.json.metadata.deletionTimestamp).toBeTruthy();
    expect(marked.json.metadata.deletionGracePeriodSeconds).toBe(30);
    // the node finishes it with grace period 0
    const fin = await api(t, "DELETE", `/api/v1/namespaces/${ns}/pods/bound`, { gracePeriodSeconds: 0 });
    expect(fin.status).toBe(200);
    expect((await api(t, "GET", `/api/v1/namespaces/${ns}/pods/bound`)).status).toBe(404);
  });

  it("keeps the status a Node is created with (as the kubelet registers it); resets other kinds'", async () => {
    const name = `registered-${Date.now()}`;
    const status = {
      capacity: { cpu: "4", memory: "8Gi", pods: "110" },
      conditions: [
        {
          type: "Ready",
          status: "True",
          reason: "KubeletReady",
          message: "kubelet is posting ready status",
          lastHeartbeatTime: "2026-01-01T00:00:00Z",
          lastTransitionTime: "2026-01-01T00:00:00Z",
        },
      ],
      addresses: [{ type: "InternalIP", address: "10.0.0.9" }],
      nodeInfo: {
        machineID: "m",
        systemUUID: "u",
        bootID: "b",
        kernelVersion: "6.1.0",
        osImage: "Debian GNU/Linux 12 (bookworm)",
        containerRuntimeVersion: "containerd://1.7.0",
        kubeletVersion: "v1.32.0",
        kubeProxyVersion: "",
        operatingSystem: "linux",
        architecture: "amd64",
      },
      config: { active: { configMap: { name: "old", namespace: "kube-system", kubeletConfigKey: "k" } } },
    };
    const r = await api(t, "POST", "/api/v1/nodes", {
      apiVersion: "v1",
      kind: "Node",
      metadata: { name },
      spec: { configSource: { configMap: { name: "old", namespace: "kube-system", kubeletConfigKey: "k" } } },
      status,
    });
    expect(r.status, JSON.stringify(r.json)).toBe(201);
    const { config: _dropped, ...kept } = status;
    const got = await api(t, "GET", `/api/v1/nodes/${name}`);
    for (const node of [r.json, got.json]) {
      // allocatable defaults to capacity; the retired dynamic kubelet config is dropped
      expect(node.status).toEqual({ ...kept, allocatable: status.capacity });
      expect(node.spec?.configSource).toBeUndefined();
    }
    // an update of the main resource cannot change it
    const put = await api(t, "PUT", `/api/v1/nodes/${name}`, {
      ...got.json,
      // the podCIDR node IPAM set stays (upstream refuses to change or drop it)
      spec: { ...got.json.spec, unschedulable: true },
      status: { capacity: { cpu: "1" } },
    });
    expect(put.status).toBe(200);
    expect(put.json.spec.unschedulable).toBe(true);
    expect(put.json.status.capacity).toEqual(status.capacity);
    // a Service's status is the server's to set, so a create resets it
    const ns = await namespace();
    const svc = await api(t, "POST", `/api/v1/namespaces/${ns}/services`, {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "s" },
      spec: { ports: [{ port: 80 }] },
      status: { loadBalancer: { ingress: [{ ip: "1.2.3.4" }] } },
    });
    expect(svc.status).toBe(201);
    expect(svc.json.status?.loadBalancer?.ingress).toBeUndefined();
    await api(t, "DELETE", `/api/v1/nodes/${name}`);
  });

  it("serves the scale subresource", async () => {
    const ns = await namespace();
    await api(t, "POST", `/apis/apps/v1/namespaces/${ns}/replicasets`, {
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      metadata: { name: "rs" },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: "rs" } },
        template: {
          metadata: { labels: { app: "rs" } },
          spec: { containers: [{ name: "c", image: "busybox" }] },
        },
      },
    });
    const s = await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/replicasets/rs/scale`);
    expect(s.json).toMatchObject({
      kind: "Scale",
      apiVersion: "autoscaling/v1",
      spec: { replicas: 2 },
      status: { selector: "app=rs" },
    });
    const p = await api(
      t,
      "PATCH",
      `/apis/apps/v1/namespaces/${ns}/replicasets/rs/scale`,
      JSON.stringify({ spec: { replicas: 5 } }),
      {
        "content-type": "application/merge-patch+json",
      },
    );
    expect(p.status).toBe(200);
    expect(p.json.spec.replicas).toBe(5);
    expect((await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/replicasets/rs`)).json.spec.replicas).toBe(5);
    // as a Table (kubectl get --subresource=scale): upstream's Scale columns and the object's version
    const table = await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/replicasets/rs/scale`, undefined, {
      accept: "application/json;as=Table;v=v1;g=meta.k8s.io",
    });
    expect(table.json.kind).toBe("Table");
    expect(
      table.json.columnDefinitions.map((c: { name: string; type: string }) => `${c.name}:${c.type}`),
    ).toEqual(["Name:string", "Desired:integer", "Available:integer", "Age:string"]);
    expect(table.json.rows[0].cells.slice(0, 2)).toEqual(["rs", 5]);
    expect(table.json.rows[0].object.kind).toBe("PartialObjectMetadata");
    // a Table of one object carries that object's version, not its store's latest
    const cms = `/api/v1/namespaces/${ns}/configmaps`;
    const first = await api(t, "POST", cms, { metadata: { name: "first" } });
    await api(t, "POST", cms, { metadata: { name: "second" } });
    const one = await api(t, "GET", `${cms}/first`, undefined, {
      accept: "application/json;as=Table;v=v1;g=meta.k8s.io",
    });
    expect(one.json.metadata.resourceVersion).toBe(first.json.metadata.resourceVersion);
    // the object's own version (the controller may have written its status since the patch)
    expect(Number(table.json.metadata.resourceVersion)).toBeGreaterThanOrEqual(
      Number(p.json.metadata.resourceVersion),
    );
  });
});
