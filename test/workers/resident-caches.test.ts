// The scheduler's and the controllers' caches live as long as the control plane, as
// upstream's informers live as long as their process: a quiet spell longer than a Durable
// Object's hibernation delay (10 s without requests) must not drop them, or the next pod
// waits while every pod is listed again (seconds, with many pods, on the one local thread).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, until } from "../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer, tempStateDir } from "../helpers/own-server";

const stateDir = tempStateDir("edgeplane-resident-");
let s: OwnServer;

beforeAll(async () => {
  s = await startOwnServer({ stateDir });
});

afterAll(async () => {
  await s?.stop();
  removeStateDir(stateDir);
});

const pod = (name: string, schedulerName?: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name },
  spec: { schedulerName, containers: [{ name: "c", image: "busybox" }] },
});

const fills = (who: string) =>
  s
    .output()
    .split("\n")
    .filter((l) => l.includes(`${who}: caches filled`));

describe("resident caches", () => {
  it("keeps the scheduler's and the controllers' caches across 15 s without a request", async () => {
    const pods = "/api/v1/namespaces/default/pods";
    // a pod for another scheduler: cached, nothing to retry, so no timer of its own pending
    expect((await api(s, "POST", pods, pod("first", "someone-else"))).status).toBe(201);
    await until(
      "both filled their caches",
      async () => fills("scheduler").length && fills("controllers").length,
    );
    await new Promise((r) => setTimeout(r, 15_000));
    expect((await api(s, "POST", pods, pod("second"))).status).toBe(201);
    // the scheduler tries it (no node fits): it heard of the pod, from the caches it kept
    await until("the scheduler's verdict on the second pod", async () => {
      const p = (await api(s, "GET", `${pods}/second`)).json;
      return p.status?.conditions?.some((c: { type: string }) => c.type === "PodScheduled");
    });
    expect({ scheduler: fills("scheduler").length, controllers: fills("controllers").length }).toEqual({
      scheduler: 1,
      controllers: 1,
    });
  }, 40_000);
});
