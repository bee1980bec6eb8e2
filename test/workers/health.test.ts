// /healthz, /livez and /readyz through real workerd: every check, including the store's (a
// shard answers a read), as `kubectl get --raw` shows them; one check by name; 404 for a
// check there is not. How a failing check reads is in test/unit/handlers/health.test.ts.
import { describe, expect, it } from "vitest";
import { api, hasKubectl, kubectl, shared } from "../helpers/cluster";

const t = shared();
const CHECKS = "[+]ping ok\n[+]log ok\n[+]etcd ok\n";

describe("health endpoints through workerd", () => {
  it("each endpoint runs every check: ok, or each line with ?verbose; ?exclude skips one", async () => {
    for (const endpoint of ["healthz", "livez", "readyz"]) {
      const plain = await api(t, "GET", `/${endpoint}`);
      expect([plain.status, plain.text]).toEqual([200, "ok"]);
      const verbose = await api(t, "GET", `/${endpoint}?verbose`);
      expect([verbose.status, verbose.text]).toEqual([200, `${CHECKS}${endpoint} check passed\n`]);
    }
    const some = await api(t, "GET", "/readyz?verbose&exclude=etcd");
    expect(some.text).toBe("[+]ping ok\n[+]log ok\n[+]etcd excluded: ok\nreadyz check passed\n");
  });

  it("one check by name; a check there is not is a 404 Status", async () => {
    for (const path of ["/livez/ping", "/readyz/etcd", "/healthz/log"]) {
      const r = await api(t, "GET", path);
      expect([path, r.status, r.text]).toEqual([path, 200, "ok"]);
    }
    const missing = await api(t, "GET", "/readyz/no-such-check");
    expect([missing.status, missing.json?.reason]).toEqual([404, "NotFound"]);
  });

  it.skipIf(!hasKubectl)("kubectl get --raw '/readyz?verbose' lists the checks", async () => {
    const r = await kubectl(t, ["get", "--raw", "/readyz?verbose"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${CHECKS}readyz check passed\n`);
  });
});
