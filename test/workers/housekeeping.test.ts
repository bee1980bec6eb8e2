// What the control plane does on its own over time, on a server with short periods:
// events expire after their last write, as with kube-apiserver's --event-ttl (here 2 s):
// watchers see them DELETED, an updated event lives on from its update, other resources
// are untouched (Durable Object alarms); and the cron trigger (here every 2 s instead of
// every minute) puts back the defaults a user deleted, such as the kubernetes Service.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, until } from "../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer, tempStateDir } from "../helpers/own-server";
import { openWatch } from "../helpers/watch-stream";

const stateDir = tempStateDir("edgeplane-housekeeping-");
let s: OwnServer;

beforeAll(async () => {
  s = await startOwnServer({ stateDir, vars: { EDGEPLANE_EVENT_TTL_SECONDS: "2" }, cronSeconds: 2 });
});

afterAll(async () => {
  await s?.stop();
  removeStateDir(stateDir);
});

const EVENTS = "/api/v1/namespaces/default/events";
const event = (name: string) => ({
  apiVersion: "v1",
  kind: "Event",
  metadata: { name },
  involvedObject: { kind: "Pod", namespace: "default", name: "web" },
  reason: "Test",
  message: name,
  type: "Normal",
});

describe("event TTL", () => {
  it("expires events after their last write and tells watchers", async () => {
    const rv = (await api(s, "GET", EVENTS)).json.metadata.resourceVersion;
    const watch = await openWatch(s, `${EVENTS}?watch=1&resourceVersion=${rv}`);
    try {
      for (const n of ["old", "kept"]) expect((await api(s, "POST", EVENTS, event(n))).status).toBe(201);
      const cm = await api(s, "POST", "/api/v1/namespaces/default/configmaps", {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "stays" },
      });
      expect(cm.status).toBe(201);
      // "kept" is written every half second until "old" is gone: a write restarts its TTL
      let updates = 0;
      await until(
        "old expired",
        async () => {
          const upd = await api(
            s,
            "PATCH",
            `${EVENTS}/kept`,
            { message: `again ${++updates}` },
            {
              "content-type": "application/merge-patch+json",
            },
          );
          expect(upd.status, upd.text).toBe(200);
          return (await api(s, "GET", `${EVENTS}/old`)).status === 404;
        },
        15000,
        500,
      );
      expect((await api(s, "GET", `${EVENTS}/kept`)).status).toBe(200);
      await until("kept expired", async () => (await api(s, "GET", `${EVENTS}/kept`)).status === 404, 15000);

      const seen = (await watch.waitFor(4 + updates)).map((e) => `${e.type} ${e.object.metadata.name}`);
      expect(seen.filter((e) => !e.startsWith("MODIFIED"))).toEqual([
        "ADDED old",
        "ADDED kept",
        "DELETED old",
        "DELETED kept",
      ]);
      expect(seen.filter((e) => e === "MODIFIED kept").length).toBe(updates);
      expect((await api(s, "GET", "/api/v1/namespaces/default/configmaps/stays")).status).toBe(200);
    } finally {
      watch.close();
    }
  }, 60_000);
});

describe("cron trigger", () => {
  it("recreates the kubernetes Service after it was deleted", async () => {
    const path = "/api/v1/namespaces/default/services/kubernetes";
    const before = await api(s, "GET", path);
    expect(before.status).toBe(200);
    expect((await api(s, "DELETE", path)).status).toBe(200);
    expect((await api(s, "GET", path)).status).toBe(404);
    const back = await until(
      "the kubernetes Service back",
      async () => {
        const r = await api(s, "GET", path);
        return r.status === 200 ? r.json : undefined;
      },
      15000,
      200,
    );
    expect(back.spec.clusterIP).toBe("10.96.0.1");
    expect(back.metadata.uid).not.toBe(before.json.metadata.uid);
  }, 30_000);
});
