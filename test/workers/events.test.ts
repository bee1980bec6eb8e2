// core/v1 Events and events.k8s.io/v1 Events are one store, as upstream: an event written in
// either group is read, listed, watched, selected and deleted through the other, each in its
// own shape (message/note, involvedObject/regarding, ...). Real workerd; kubectl for the
// user's view (kubectl get events reads core/v1).
import { describe, expect, it } from "vitest";
import { api, freshNamespace, hasKubectl, kubectl, shared } from "../helpers/cluster";
import { openWatch } from "../helpers/watch-stream";

const t = shared();
const V1 = (ns: string) => `/apis/events.k8s.io/v1/namespaces/${ns}/events`;
const CORE = (ns: string) => `/api/v1/namespaces/${ns}/events`;

const v1Event = (ns: string, name: string, pod: string) => ({
  apiVersion: "events.k8s.io/v1",
  kind: "Event",
  metadata: { name },
  eventTime: "2026-11-29T10:00:00.000000Z",
  reportingController: "example.com/operator",
  reportingInstance: "operator-0",
  action: "Reconcile",
  reason: "Synced",
  type: "Normal",
  note: `synced ${pod}`,
  regarding: { kind: "Pod", namespace: ns, name: pod, apiVersion: "v1" },
});

const coreEvent = (ns: string, name: string, pod: string) => ({
  apiVersion: "v1",
  kind: "Event",
  metadata: { name },
  involvedObject: { kind: "Pod", namespace: ns, name: pod, apiVersion: "v1" },
  reason: "Pulled",
  message: `pulled for ${pod}`,
  type: "Normal",
  source: { component: "kubelet", host: "node-1" },
  firstTimestamp: "2026-11-29T10:00:00Z",
  lastTimestamp: "2026-11-29T10:00:00Z",
  count: 1,
});

describe("Events: one store, two API groups", () => {
  it("an events.k8s.io event is a core event, and the other way round", async () => {
    const ns = await freshNamespace(t);
    const created = await api(t, "POST", V1(ns), v1Event(ns, "e1", "web"));
    expect(created.status, created.text).toBe(201);
    expect(created.json).toMatchObject({ apiVersion: "events.k8s.io/v1", note: "synced web" });
    expect(created.json.message).toBeUndefined();

    const core = await api(t, "GET", `${CORE(ns)}/e1`);
    expect(core.status, core.text).toBe(200);
    expect(core.json).toMatchObject({
      apiVersion: "v1",
      kind: "Event",
      message: "synced web",
      involvedObject: { kind: "Pod", name: "web", namespace: ns },
      reportingComponent: "example.com/operator",
      metadata: { uid: created.json.metadata.uid, resourceVersion: created.json.metadata.resourceVersion },
    });
    expect(core.json.note).toBeUndefined();
    // written back unchanged through events.k8s.io (converted to the stored shape, keys in
    // another order): a no-op, as upstream, so the resourceVersion stays
    const got = await api(t, "GET", `${V1(ns)}/e1`);
    const again = await api(t, "PUT", `${V1(ns)}/e1`, got.json);
    expect(again.status, again.text).toBe(200);
    expect(again.json.metadata.resourceVersion).toBe(created.json.metadata.resourceVersion);

    const c2 = await api(t, "POST", CORE(ns), {
      ...coreEvent(ns, "e2", "db"),
      metadata: { name: "e2", namespace: ns },
    });
    expect(c2.status, c2.text).toBe(201);
    const v1 = await api(t, "GET", `${V1(ns)}/e2`);
    expect(v1.status, v1.text).toBe(200);
    expect(v1.json).toMatchObject({
      apiVersion: "events.k8s.io/v1",
      note: "pulled for db",
      regarding: { kind: "Pod", name: "db" },
      deprecatedSource: { component: "kubelet", host: "node-1" },
      deprecatedCount: 1,
    });

    // lists in each shape, with each group's own field selector names
    const list = await api(t, "GET", V1(ns));
    expect(list.json).toMatchObject({ kind: "EventList", apiVersion: "events.k8s.io/v1" });
    expect(list.json.items.map((e: any) => [e.metadata.name, e.note])).toEqual([
      ["e1", "synced web"],
      ["e2", "pulled for db"],
    ]);
    const byRegarding = await api(t, "GET", `${V1(ns)}?fieldSelector=regarding.name%3Ddb`);
    expect(byRegarding.status, byRegarding.text).toBe(200);
    expect(byRegarding.json.items.map((e: any) => e.metadata.name)).toEqual(["e2"]);
    const byController = await api(
      t,
      "GET",
      `${V1(ns)}?fieldSelector=reportingController%3Dexample.com%2Foperator`,
    );
    expect(byController.json.items.map((e: any) => e.metadata.name)).toEqual(["e1"]);
    const byInvolved = await api(t, "GET", `${CORE(ns)}?fieldSelector=involvedObject.name%3Dweb`);
    expect(byInvolved.json.items.map((e: any) => e.metadata.name)).toEqual(["e1"]);
    // a core name is not an events.k8s.io field
    const wrong = await api(t, "GET", `${V1(ns)}?fieldSelector=involvedObject.name%3Dweb`);
    expect(wrong.status).toBe(400);
    expect(wrong.json.reason).toBe("BadRequest");

    // deleted through one group, gone from both
    expect((await api(t, "DELETE", `${CORE(ns)}/e1`)).status).toBe(200);
    expect((await api(t, "GET", `${V1(ns)}/e1`)).status).toBe(404);
    const del = await api(t, "DELETE", `${V1(ns)}/e2`);
    expect(del.status).toBe(200);
    expect(del.json.apiVersion).toBe("events.k8s.io/v1");
    expect((await api(t, "GET", `${CORE(ns)}/e2`)).status).toBe(404);
  });

  it("a watch in either group sees writes from both, in its own shape", async () => {
    const ns = await freshNamespace(t);
    const rv = (await api(t, "GET", CORE(ns))).json.metadata.resourceVersion;
    const v1Watch = await openWatch(t, `${V1(ns)}?watch=1&resourceVersion=${rv}`);
    const coreWatch = await openWatch(t, `${CORE(ns)}?watch=1&resourceVersion=${rv}`);
    try {
      expect((await api(t, "POST", V1(ns), v1Event(ns, "a", "web"))).status).toBe(201);
      expect((await api(t, "POST", CORE(ns), coreEvent(ns, "b", "web"))).status).toBe(201);
      const seenV1 = await v1Watch.waitFor(2);
      const seenCore = await coreWatch.waitFor(2);
      expect(seenV1.map((e) => [e.type, e.object.apiVersion, e.object.metadata.name, e.object.note])).toEqual(
        [
          ["ADDED", "events.k8s.io/v1", "a", "synced web"],
          ["ADDED", "events.k8s.io/v1", "b", "pulled for web"],
        ],
      );
      expect(
        seenCore.map((e) => [e.type, e.object.apiVersion, e.object.metadata.name, e.object.message]),
      ).toEqual([
        ["ADDED", "v1", "a", "synced web"],
        ["ADDED", "v1", "b", "pulled for web"],
      ]);
    } finally {
      v1Watch.close();
      coreWatch.close();
    }
    // a later watch from the same point replays the same, converted
    const replay = await openWatch(t, `${V1(ns)}?watch=1&resourceVersion=${rv}`);
    try {
      const ev = await replay.waitFor(2);
      expect(ev.map((e) => e.object.note)).toEqual(["synced web", "pulled for web"]);
    } finally {
      replay.close();
    }
  });

  it.skipIf(!hasKubectl)(
    "kubectl get events lists what a controller wrote through events.k8s.io",
    async () => {
      const ns = await freshNamespace(t);
      expect((await api(t, "POST", V1(ns), v1Event(ns, "op", "web"))).status).toBe(201);
      const r = await kubectl(t, ["get", "events", "-n", ns]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/Normal\s+Synced\s+pod\/web\s+synced web/);
      const both = await kubectl(t, [
        "get",
        "events.events.k8s.io",
        "-n",
        ns,
        "-o",
        "jsonpath={.items[*].note}",
      ]);
      expect(both.code, both.stderr).toBe(0);
      expect(both.stdout).toBe("synced web");
    },
  );
});
