// A restart with more pods than one call can carry: the controllers and the scheduler list
// what is stored when they start, and workerd refuses a call's answer over 32 MiB. Listed
// whole, that first list failed on every poke after a restart with ~20,000 ordinary pods, so
// no controller ever ran again. Here ~1,300 pods of ~28 KB each make a 36 MB list.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, freshNamespace, until } from "../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer, tempStateDir } from "../helpers/own-server";

const PODS = 1300;
const PAD = "x".repeat(28 * 1024);

const stateDir = tempStateDir("edgeplane-restart-scale-");
let server: OwnServer | undefined;

beforeAll(async () => {
  server = await startOwnServer({ stateDir });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  removeStateDir(stateDir);
});

function pod(name: string, schedulerName: string) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, annotations: { pad: PAD } },
    spec: { schedulerName, containers: [{ name: "c", image: "busybox" }] },
  };
}

describe("a restart with a store larger than one call's answer", () => {
  it("starts the controllers and the scheduler again", async () => {
    const first = server!;
    const ns = await freshNamespace(first, "big");
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < PODS) {
          const n = next++;
          const r = await api(first, "POST", `/api/v1/namespaces/${ns}/pods`, pod(`p-${n}`, "nobody"));
          expect(r.status, r.text.slice(0, 200)).toBe(201);
        }
      }),
    );
    await first.stop();
    server = await startOwnServer({ stateDir });
    const second = server;

    // the controllers run: a ReplicaSet made after the restart gets its pods
    const rs = await api(second, "POST", `/apis/apps/v1/namespaces/${ns}/replicasets`, {
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      metadata: { name: "after" },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: "after" } },
        template: {
          metadata: { labels: { app: "after" } },
          spec: { schedulerName: "nobody", containers: [{ name: "c", image: "busybox" }] },
        },
      },
    });
    expect(rs.status, rs.text.slice(0, 200)).toBe(201);
    const owned = await until(
      "the ReplicaSet's pods",
      async () => {
        const list = await api(second, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Dafter`);
        return list.json.items?.length === 2 ? list.json.items : undefined;
      },
      60_000,
    );
    expect(owned.map((p: any) => p.metadata.ownerReferences?.[0]?.name)).toEqual(["after", "after"]);

    // the scheduler runs: with no nodes at all, it says so on a pod for it (as upstream, a
    // SchedulerError: no node was there to be found unfit)
    expect(
      (await api(second, "POST", `/api/v1/namespaces/${ns}/pods`, pod("for-scheduler", "default-scheduler")))
        .status,
    ).toBe(201);
    const cond = await until(
      "the scheduler's verdict",
      async () => {
        const p = await api(second, "GET", `/api/v1/namespaces/${ns}/pods/for-scheduler`);
        return p.json.status?.conditions?.find((c: any) => c.type === "PodScheduled");
      },
      60_000,
    );
    expect(cond).toMatchObject({
      status: "False",
      reason: "SchedulerError",
      message: "no nodes available to schedule pods",
    });

    // and everything stored before the restart is still listed
    const all = await api(second, "GET", `/api/v1/namespaces/${ns}/pods?limit=2000`);
    expect(all.json.items.length).toBe(PODS + 3);
  }, 240_000);
});
