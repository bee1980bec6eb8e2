// A real client library's informer (@kubernetes/client-node) against the apiserver, with its
// watch connection cut mid-stream while writes go on: the watch resumes from the last
// resourceVersion and the informer sees every change once, in order, with no re-list.
import { CoreV1Api, KubeConfig, ListWatch, type V1ConfigMap, Watch } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { api, freshNamespace, ROOT_CA_MAP, rootCAIn, shared } from "../helpers/cluster";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy";
import { eventKey, openWatch, type WatchEvent } from "../helpers/watch-stream";

const t = shared();

type Op = ["create" | "update" | "delete", string];

// 30 writes over a handful of names: creates, updates, deletes and re-creates of a name.
const PHASE1: Op[] = [
  ["create", "a"],
  ["create", "b"],
  ["create", "c"],
  ["create", "d"],
  ["update", "a"],
  ["update", "b"],
  ["delete", "c"],
  ["update", "a"],
  ["create", "e"],
  ["update", "d"],
];
const PHASE2: Op[] = [
  ["update", "e"],
  ["delete", "a"],
  ["create", "c"],
  ["update", "c"],
  ["update", "b"],
  ["delete", "d"],
  ["create", "a"],
  ["update", "e"],
  ["update", "c"],
  ["delete", "b"],
];
const PHASE3: Op[] = [
  ["create", "f"],
  ["update", "f"],
  ["delete", "e"],
  ["update", "a"],
  ["create", "b"],
  ["update", "c"],
  ["delete", "f"],
  ["update", "b"],
  ["update", "a"],
  ["create", "d"],
];
const EVENT_OF = { create: "ADDED", update: "MODIFIED", delete: "DELETED" } as const;
const CALLBACK_OF: Record<string, string> = { ADDED: "add", MODIFIED: "update", DELETED: "delete" };

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Runs ops one after another; returns the resourceVersion each acknowledged write reported. */
async function runOps(ns: string, ops: Op[], counter: { n: number }): Promise<string[]> {
  const rvs: string[] = [];
  const base = `/api/v1/namespaces/${ns}/configmaps`;
  for (const [verb, name] of ops) {
    counter.n++;
    let r: Awaited<ReturnType<typeof api>>;
    if (verb === "create") {
      r = await api(t, "POST", base, {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name },
        data: { step: String(counter.n) },
      });
      expect(r.status, r.text).toBe(201);
    } else if (verb === "update") {
      const cur = await api(t, "GET", `${base}/${name}`);
      expect(cur.status, cur.text).toBe(200);
      cur.json.data = { step: String(counter.n) };
      r = await api(t, "PUT", `${base}/${name}`, cur.json);
      expect(r.status, r.text).toBe(200);
    } else {
      r = await api(t, "DELETE", `${base}/${name}`);
      expect(r.status, r.text).toBe(200);
    }
    rvs.push(r.json?.kind === "ConfigMap" ? r.json.metadata.resourceVersion : "");
  }
  return rvs;
}

async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("client-node informer", () => {
  it("sees every change exactly once and in order across a cut watch connection", async () => {
    const ns = await freshNamespace(t, "inf");
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    // the namespace's kube-root-ca.crt is in place before the informer's list
    await rootCAIn(t, ns);
    const rootCA = (await api(t, "GET", `${path}/${ROOT_CA_MAP}`)).json;
    const seed = await api(t, "POST", path, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "seed" },
      data: { step: "0" },
    });
    expect(seed.status).toBe(201);

    // The client reaches the server over https (the kubeconfig's CA) through a relay we can cut.
    const proxy: TcpProxy = await startTcpProxy(Number(new URL(t.url).port));
    cleanups.push(() => proxy.close());
    const fromFile = new KubeConfig();
    fromFile.loadFromFile(t.kubeconfigPath);
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [
        {
          name: "relay",
          server: `https://127.0.0.1:${proxy.port}`,
          caData: fromFile.getCurrentCluster()!.caData,
        },
      ],
      users: [{ name: "admin", token: t.token }],
      contexts: [{ name: "relay", cluster: "relay", user: "admin" }],
      currentContext: "relay",
    });
    const core = kc.makeApiClient(CoreV1Api);

    // makeInformer(kc, path, listFn) is exactly ListWatch(path, new Watch(kc), listFn, false);
    // built by hand here only to also record the raw events the Watch hands the cache, so a
    // duplicate the cache would swallow (same resourceVersion) still shows.
    const raw: WatchEvent[] = [];
    class RecordingWatch extends Watch {
      override watch(
        p: string,
        query: Record<string, string | number | boolean | undefined>,
        cb: (phase: string, obj: any, watchObj?: any) => void,
        done: (err: any) => void,
      ) {
        return super.watch(
          p,
          query,
          (phase, obj, w) => {
            raw.push({ type: phase, object: obj });
            cb(phase, obj, w);
          },
          done,
        );
      }
    }
    let lists = 0;
    const informer = new ListWatch<V1ConfigMap>(
      path,
      new RecordingWatch(kc),
      async () => {
        lists++;
        return core.listNamespacedConfigMap({ namespace: ns });
      },
      false,
    );
    const seen: string[] = [];
    informer.on("add", (o) => seen.push(`add ${o.metadata!.name} ${o.metadata!.resourceVersion}`));
    informer.on("update", (o) => seen.push(`update ${o.metadata!.name} ${o.metadata!.resourceVersion}`));
    informer.on("delete", (o) => seen.push(`delete ${o.metadata!.name} ${o.metadata!.resourceVersion}`));
    let errors = 0;
    let stopped = false;
    let restarts = 0;
    informer.on("error", () => {
      // what client-node's docs tell users to do: start again after a pause (keeps the RV)
      errors++;
      if (stopped) return;
      setTimeout(() => {
        if (stopped) return;
        restarts++;
        informer.start().catch(() => {});
      }, 100);
    });
    cleanups.push(() => {
      stopped = true;
      return informer.stop();
    });
    await informer.start();
    const listRV = informer.latestResourceVersion();
    expect(listRV).toMatch(/^\d+$/);
    expect(seen).toEqual([
      `add ${ROOT_CA_MAP} ${rootCA.metadata.resourceVersion}`,
      `add seed ${seed.json.metadata.resourceVersion}`,
    ]);

    // The server's own account of the sequence: a direct watch from the same resourceVersion.
    const ref = await openWatch(t, `${path}?watch=true&resourceVersion=${listRV}`);
    cleanups.push(() => ref.close());

    const counter = { n: 0 };
    const rvs1 = await runOps(ns, PHASE1, counter);
    // cut every connection (the informer's watch included) and keep refusing for a while
    const acceptedBefore = proxy.accepted();
    proxy.cutAll();
    proxy.refuse(true);
    const rvs2 = await runOps(ns, PHASE2, counter);
    await until(() => errors >= 1, 5000, "the informer noticing the cut");
    await new Promise((r) => setTimeout(r, 300)); // a few refused reconnects
    proxy.refuse(false);
    const rvs3 = await runOps(ns, PHASE3, counter);

    const all = [...PHASE1, ...PHASE2, ...PHASE3];
    const expected = await ref.waitFor(all.length, 15_000);
    const finalRV = expected[all.length - 1].object.metadata.resourceVersion;
    await until(
      () => informer.latestResourceVersion() === finalRV,
      15_000,
      `informer reaching RV ${finalRV}`,
    );
    await new Promise((r) => setTimeout(r, 300)); // room for any stray duplicate to arrive

    // the server's sequence is the scripted one, with increasing resourceVersions
    expect(expected.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(
      all.map(([v, n]) => `${EVENT_OF[v]} ${n}`),
    );
    const refRVs = expected.map((e) => Number(e.object.metadata.resourceVersion));
    for (let i = 1; i < refRVs.length; i++) expect(refRVs[i]).toBeGreaterThan(refRVs[i - 1]);
    expect(refRVs[0]).toBeGreaterThan(Number(listRV));
    // acknowledged creates/updates carry the resourceVersion their event carries
    [...rvs1, ...rvs2, ...rvs3].forEach((rv, i) => {
      if (all[i][0] !== "delete") expect(rv).toBe(expected[i].object.metadata.resourceVersion);
    });

    // the connection really was cut and re-established, and the gap was replayed, not re-listed
    expect(errors).toBeGreaterThanOrEqual(1);
    expect(restarts).toBeGreaterThanOrEqual(1);
    expect(proxy.accepted()).toBeGreaterThan(acceptedBefore);
    expect(lists).toBe(1);

    // exactly the server's events, once each, in order
    expect(raw.filter((e) => e.type !== "BOOKMARK").map(eventKey)).toEqual(expected.map(eventKey));
    expect(seen.slice(2)).toEqual(
      expected.map(
        (e) => `${CALLBACK_OF[e.type]} ${e.object.metadata.name} ${e.object.metadata.resourceVersion}`,
      ),
    );

    // and the cache holds what the server holds
    const now = await api(t, "GET", path);
    const summary = (items: readonly any[]) =>
      items.map((o) => `${o.metadata.name} ${o.metadata.resourceVersion} ${o.data?.step}`).sort();
    expect(summary(informer.list(ns))).toEqual(summary(now.json.items));
    expect(summary(now.json.items).map((s) => s.split(" ")[0])).toEqual([
      "a",
      "b",
      "c",
      "d",
      ROOT_CA_MAP,
      "seed",
    ]);
  });
});
