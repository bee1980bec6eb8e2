// /healthz, /livez and /readyz through real workerd: every check, including the store's (a
// shard answers a read), as `kubectl get --raw` shows them; one check by name; 404 for a
// check there is not. How a failing check reads is in test/unit/handlers/health.test.ts.
// And componentstatuses (`kubectl get cs`), which probes the scheduler, the controller
// manager and the store at each request.
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

  const DEPRECATED = '299 - "v1 ComponentStatus is deprecated in v1.19+"';
  const healthy = (name: string) => ({
    kind: "ComponentStatus",
    apiVersion: "v1",
    metadata: { name, creationTimestamp: null },
    conditions: [{ type: "Healthy", status: "True", message: "ok" }],
  });

  it("componentstatuses: each part probed, get and list only, with upstream's deprecation warning", async () => {
    const list = await api(t, "GET", "/api/v1/componentstatuses");
    expect(list.status).toBe(200);
    expect(list.headers.get("warning")).toBe(DEPRECATED);
    expect(list.json).toEqual({
      kind: "ComponentStatusList",
      apiVersion: "v1",
      metadata: {},
      items: ["controller-manager", "etcd-0", "scheduler"].map(healthy),
    });
    const one = await api(t, "GET", "/api/v1/componentstatuses/scheduler");
    expect([one.status, one.json]).toEqual([200, healthy("scheduler")]);
    const table = await api(t, "GET", "/api/v1/componentstatuses", undefined, {
      accept: "application/json;as=Table;v=v1;g=meta.k8s.io",
    });
    expect(table.headers.get("content-type")).toBe("application/json;as=Table;v=v1;g=meta.k8s.io");
    expect(table.headers.get("warning")).toBe(DEPRECATED);
    expect(table.json.columnDefinitions.map((c: { name: string }) => c.name)).toEqual([
      "Name",
      "Status",
      "Message",
      "Error",
    ]);
    expect(table.json.rows.map((r: { cells: unknown[] }) => r.cells)).toEqual([
      ["controller-manager", "Healthy", "ok", ""],
      ["etcd-0", "Healthy", "ok", ""],
      ["scheduler", "Healthy", "ok", ""],
    ]);
    // metadata.name is its one selectable field; it has no labels
    const byName = await api(t, "GET", "/api/v1/componentstatuses?fieldSelector=metadata.name%3Detcd-0");
    expect(byName.json.items).toEqual([healthy("etcd-0")]);
    const byLabel = await api(t, "GET", "/api/v1/componentstatuses?labelSelector=tier%3Dcontrol-plane");
    expect(byLabel.json.items).toEqual([]);
    const missing = await api(t, "GET", "/api/v1/componentstatuses/etcd-1");
    expect([missing.status, missing.json.reason, missing.json.message]).toEqual([
      404,
      "NotFound",
      'componentstatuses "etcd-1" not found',
    ]);
    for (const [method, path] of [
      ["POST", "/api/v1/componentstatuses"],
      ["DELETE", "/api/v1/componentstatuses/etcd-0"],
      ["GET", "/api/v1/componentstatuses?watch=1"],
    ]) {
      const r = await api(t, method!, path!, method === "POST" ? healthy("x") : undefined);
      expect([method, path, r.status, r.json?.reason]).toEqual([method, path, 405, "MethodNotAllowed"]);
    }
  });

  it.skipIf(!hasKubectl)("kubectl get cs prints each component's health, and the warning", async () => {
    const r = await kubectl(t, ["get", "cs"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe("Warning: v1 ComponentStatus is deprecated in v1.19+\n");
    expect(r.stdout.split("\n").map((l) => l.trimEnd())).toEqual([
      "NAME                 STATUS    MESSAGE   ERROR",
      "controller-manager   Healthy   ok",
      "etcd-0               Healthy   ok",
      "scheduler            Healthy   ok",
      "",
    ]);
  });
});
