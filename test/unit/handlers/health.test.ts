// Health endpoints' answers as kube-apiserver words them (workers/handlers/health.ts), with
// stand-in checks so that a failing one can be shown; the real checks run through workerd in
// test/workers/health.test.ts.
import { describe, expect, it, vi } from "vitest";
import type { Env } from "../../../durable-objects/env";
import {
  HEALTH_CHECKS,
  type HealthCheck,
  healthCheckResponse,
  healthResponse,
} from "../../../workers/handlers/health";

const env = {} as Env;
const pass = (name: string): HealthCheck => ({ name, run: async () => {} });
const fail = (name: string): HealthCheck => ({
  name,
  run: async () => {
    throw new Error("store unreachable: secret-ish detail");
  },
});
const ask = async (endpoint: string, query: string, checks: HealthCheck[]) => {
  const res = await healthResponse(endpoint, new URL(`http://x/${endpoint}${query}`), env, checks);
  return { status: res.status, type: res.headers.get("content-type"), body: await res.text() };
};

describe("health endpoints", () => {
  it("all passing: ok, or each check with ?verbose", async () => {
    const checks = [pass("ping"), pass("etcd")];
    expect(await ask("livez", "", checks)).toEqual({
      status: 200,
      type: "text/plain; charset=utf-8",
      body: "ok",
    });
    expect((await ask("readyz", "?verbose", checks)).body).toBe(
      "[+]ping ok\n[+]etcd ok\nreadyz check passed\n",
    );
  });

  it("a failing check: 500 naming it, its reason withheld, verbose or not", async () => {
    const checks = [pass("ping"), fail("etcd")];
    for (const q of ["", "?verbose"])
      expect(await ask("readyz", q, checks)).toMatchObject({
        status: 500,
        body: "[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed\n",
      });
  });

  it("?exclude skips a check (even a failing one); names that match nothing are warned of", async () => {
    const checks = [pass("ping"), fail("etcd")];
    expect(await ask("livez", "?verbose&exclude=etcd&exclude=nope&exclude=also", checks)).toMatchObject({
      status: 200,
      body: '[+]ping ok\n[+]etcd excluded: ok\nwarn: some health checks cannot be excluded: no matches for "also","nope"\nlivez check passed\n',
    });
  });

  it("one check by name: ok, its error as a 500, and 404 for a check there is not", async () => {
    const checks = [pass("ping"), fail("etcd")];
    const ok = await healthCheckResponse("ping", env, checks);
    expect([ok.status, await ok.text()]).toEqual([200, "ok"]);
    const bad = await healthCheckResponse("etcd", env, checks);
    expect([bad.status, await bad.text()]).toEqual([
      500,
      "internal server error: store unreachable: secret-ish detail\n",
    ]);
    await expect(healthCheckResponse("nope", env, checks)).rejects.toMatchObject({
      code: 404,
      reason: "NotFound",
    });
  });

  it("the store check reads through a store shard, and keeps its result for a second", async () => {
    let up = false;
    let reads = 0;
    const stub = {
      get: async () => {
        reads++;
        if (!up) throw new Error("shard unreachable");
        return { ok: false, status: { code: 404, reason: "NotFound", message: "", details: {} } };
      },
    };
    const storeEnv = {
      EDGEPLANE_CLUSTER: "c",
      STORE: { idFromName: (n: string) => ({ name: n }), get: () => stub },
    } as unknown as Env;
    vi.useFakeTimers();
    try {
      const readyz = async () =>
        (await healthResponse("readyz", new URL("http://x/readyz"), storeEnv)).status;
      expect(await readyz()).toBe(500);
      up = true;
      expect(await readyz()).toBe(500); // the failure is kept a second, and the shard not asked again
      expect(reads).toBe(1);
      vi.advanceTimersByTime(1000);
      expect(await readyz()).toBe(200);
      expect(reads).toBe(2);
    } finally {
      vi.useRealTimers();
    }
    expect(HEALTH_CHECKS.map((c) => c.name)).toEqual(["ping", "log", "etcd"]);
  });
});
