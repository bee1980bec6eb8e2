// core/v1 ReplicationControllers through real workerd and kubectl: upstream's defaults (the
// selector and labels from the template), validation and table, the ReplicaSet controller's
// loop keeping their pods, the scale subresource, and `kubectl cluster-info dump`, which
// lists them in every namespace it dumps.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { api, freshNamespace, hasKubectl, kubectl, shared, until } from "../helpers/cluster";

const t = shared();
const rcPath = (ns: string, name = "") =>
  `/api/v1/namespaces/${ns}/replicationcontrollers${name ? `/${name}` : ""}`;

function rc(name: string, spec: Record<string, unknown> = {}) {
  return {
    apiVersion: "v1",
    kind: "ReplicationController",
    metadata: { name },
    spec: {
      replicas: 2,
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "c", image: "busybox" }] },
      },
      ...spec,
    },
  };
}

const podsOf = async (ns: string, app: string) =>
  (await api(t, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=app%3D${app}`)).json.items as any[];

describe("core/v1 replicationcontrollers", () => {
  it("defaults the selector and labels from the template, and refuses what upstream refuses", async () => {
    const ns = await freshNamespace(t);
    const r = await api(t, "POST", rcPath(ns), rc("d", { replicas: undefined }));
    expect(r.status, r.text).toBe(201);
    expect(r.json.spec.selector).toEqual({ app: "d" });
    expect(r.json.metadata.labels).toEqual({ app: "d" });
    expect(r.json.spec.replicas).toBe(1);
    expect(r.json.status).toEqual({ replicas: 0 });
    const bad = await api(
      t,
      "POST",
      rcPath(ns),
      rc("b", {
        selector: { app: "other" },
        template: {
          metadata: { labels: { app: "b" } },
          spec: { restartPolicy: "Never", containers: [{ name: "c", image: "busybox" }] },
        },
      }),
    );
    expect(bad.status, bad.text).toBe(422);
    expect((bad.json.details.causes as any[]).map((c) => `${c.field}: ${c.message}`)).toEqual([
      'spec.template.metadata.labels: Invalid value: {"app":"b"}: `selector` does not match template `labels`',
      'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
    ]);
  });

  it("keeps its pods, scales through /scale, and takes them with it when deleted", async () => {
    const ns = await freshNamespace(t);
    expect((await api(t, "POST", rcPath(ns), rc("web"))).status).toBe(201);
    const pods = await until("2 pods", async () => {
      const p = await podsOf(ns, "web");
      return p.length === 2 && p;
    });
    expect(pods[0].metadata.generateName).toBe("web-");
    expect(pods[0].metadata.ownerReferences[0]).toMatchObject({
      apiVersion: "v1",
      kind: "ReplicationController",
      name: "web",
      controller: true,
    });
    const scale = await api(t, "GET", `${rcPath(ns, "web")}/scale`);
    expect(scale.json).toMatchObject({ spec: { replicas: 2 }, status: { replicas: 2, selector: "app=web" } });
    const put = await api(t, "PUT", `${rcPath(ns, "web")}/scale`, { ...scale.json, spec: { replicas: 3 } });
    expect(put.status, put.text).toBe(200);
    await until("3 pods", async () => (await podsOf(ns, "web")).length === 3);
    await until(
      "status.replicas 3",
      async () => (await api(t, "GET", rcPath(ns, "web"))).json.status.replicas === 3,
    );
    expect((await api(t, "DELETE", rcPath(ns, "web"))).status).toBe(200);
    await until("pods gone", async () => (await podsOf(ns, "web")).length === 0);
  });

  it.skipIf(!hasKubectl)("kubectl get rc, scale rc, and cluster-info dump, which lists them", async () => {
    const ns = await freshNamespace(t);
    expect((await api(t, "POST", rcPath(ns), rc("kc"))).status).toBe(201);
    expect((await kubectl(t, ["scale", "rc", "kc", "-n", ns, "--replicas=1"])).stdout).toBe(
      "replicationcontroller/kc scaled\n",
    );
    const get = await until("1 current", async () => {
      const r = await kubectl(t, ["get", "rc", "-n", ns, "-o", "wide"]);
      return /\nkc\s+1\s+1\s/.test(r.stdout) && r.stdout;
    });
    expect(get).toMatch(/^NAME\s+DESIRED\s+CURRENT\s+READY\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR\n/);
    expect(get).toMatch(/\sc\s+busybox\s+app=kc\n$/);
    const dir = mkdtempSync(join(tmpdir(), "dump-"));
    try {
      const dump = await kubectl(t, ["cluster-info", "dump", "--namespaces", ns, "--output-directory", dir]);
      expect(dump.code, dump.stderr).toBe(0);
      const listed = JSON.parse(readFileSync(join(dir, ns, "replication-controllers.json"), "utf8"));
      expect(listed.items.map((i: any) => i.metadata.name)).toEqual(["kc"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
