// The two local engines run the same bundle on the same state layout: state written under
// the default engine (workerd through Miniflare) is read back under `wrangler dev`
// (EDGEPLANE_DEV_ENGINE=wrangler), through the same front door, by kubectl as a user runs it.
import { afterAll, describe, expect, it } from "vitest";
import { startDevServer } from "../../local-engine/devserver";
import { api, hasKubectl, kubectl } from "../helpers/cluster";
import { type OwnServer, removeStateDir, tempStateDir } from "../helpers/own-server";

const dir = tempStateDir("edgeplane-engines-");
afterAll(() => removeStateDir(dir));

describe("local engines", () => {
  it("wrangler dev reads what the default engine wrote, and both serve kubectl", async () => {
    const first = (await startDevServer({ stateDir: dir, quiet: true })) as OwnServer;
    let rv: string;
    try {
      const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "kept" }, data: { a: "1" } };
      const r = await api(first, "POST", "/api/v1/namespaces/default/configmaps", cm);
      expect(r.status).toBe(201);
      rv = r.json.metadata.resourceVersion;
    } finally {
      await first.stop();
    }
    const second = (await startDevServer({ stateDir: dir, quiet: true, engine: "wrangler" })) as OwnServer;
    try {
      const got = await api(second, "GET", "/api/v1/namespaces/default/configmaps/kept");
      expect(got.status).toBe(200);
      expect(got.json.metadata.resourceVersion).toBe(rv);
      expect(got.json.data).toEqual({ a: "1" });
      // the head revision carried over: a new write comes after the old one
      const next = await api(second, "POST", "/api/v1/namespaces/default/configmaps", {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "later" },
      });
      expect(next.status).toBe(201);
      expect(Number(next.json.metadata.resourceVersion)).toBeGreaterThan(Number(rv));
      if (!hasKubectl) return;
      const k = await kubectl(second, ["get", "configmaps", "-o", "name"]);
      expect(k.code).toBe(0);
      expect(k.stdout).toContain("configmap/kept");
    } finally {
      await second.stop();
    }
  }, 120_000);
});
