// A cluster's object limit and the counts in its status (docs/clusters.md), on the shared
// control plane: the counts the stores publish into the root's Cluster object follow the
// cluster's creates and deletes; a create past spec.limits.objects gets upstream's
// ResourceQuota 403 (also under concurrent creates, in the resource at the limit and in
// others); one past a per-resource count/<resource>[.<group>] limit (set with kubectl) gets
// the same 403 named after that count; an idle cluster's status is not rewritten; bad limits
// are 422.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, causes, kubectl, shared, type Target, until } from "../helpers/cluster";

const CLUSTERS = "/apis/tenancy.edgeplane.dev/v1alpha1/clusters";
const root = shared();
const suffix = Math.random().toString(36).slice(2, 7);
const NAME = `q-${suffix}`;

interface Status {
  objects?: number;
  nodes?: number;
  counts?: Record<string, number>;
}

async function status(): Promise<Status & { rv: string }> {
  const r = await api(root, "GET", `${CLUSTERS}/${NAME}`);
  expect(r.status, r.text).toBe(200);
  return { ...(r.json.status ?? {}), rv: r.json.metadata.resourceVersion };
}

/** The status once it shows `want` (counts settle within a second of the last commit). */
async function statusWith(what: string, want: (s: Status) => boolean): Promise<Status & { rv: string }> {
  return until(what, async () => {
    const s = await status();
    return want(s) && s;
  });
}

const cm = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { a: "b" } });

async function setLimit(objects: number | null): Promise<void> {
  const r = await api(
    root,
    "PATCH",
    `${CLUSTERS}/${NAME}`,
    { spec: { limits: { objects } } },
    { "content-type": "application/merge-patch+json" },
  );
  expect(r.status, r.text).toBe(200);
  // each Worker isolate reads a Cluster object again after at most a second
  await new Promise((r) => setTimeout(r, 1200));
}

describe("cluster object limits and counts", () => {
  let t: Target;

  beforeAll(async () => {
    const made = await api(root, "POST", CLUSTERS, {
      apiVersion: "tenancy.edgeplane.dev/v1alpha1",
      kind: "Cluster",
      metadata: { name: NAME },
    });
    expect(made.status, made.text).toBe(201);
    const tr = await api(root, "POST", `${CLUSTERS}/${NAME}/token`, {});
    expect(tr.status, tr.text).toBe(201);
    t = { ...root, url: `${root.url}/clusters/${NAME}`, token: tr.json.status.token };
  });

  afterAll(async () => {
    await api(root, "DELETE", `${CLUSTERS}/${NAME}`);
  });

  it("publishes the cluster's object and node counts in its status, following creates and deletes", async () => {
    expect((await api(t, "GET", "/api/v1/namespaces")).status).toBe(200); // bootstraps it
    const first = await statusWith("the bootstrap objects counted", (s) => (s.counts?.namespaces ?? 0) >= 4);
    expect(first.objects).toBe(Object.values(first.counts ?? {}).reduce((a, b) => a + b, 0));
    expect(first.nodes).toBe(0);
    for (const n of ["c1", "c2", "c3"])
      expect((await api(t, "POST", "/api/v1/namespaces/default/configmaps", cm(n))).status).toBe(201);
    const node = await api(t, "POST", "/api/v1/nodes", {
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: `n-${suffix}` },
    });
    expect(node.status, node.text).toBe(201);
    const mine = await api(t, "GET", "/api/v1/configmaps");
    const cms = mine.json.items.length;
    const after = await statusWith(
      "the new objects counted",
      (s) => s.counts?.configmaps === cms && s.nodes === 1,
    );
    expect(after.counts?.nodes).toBe(1);
    expect(after.objects).toBe(Object.values(after.counts ?? {}).reduce((a, b) => a + b, 0));
    expect((await api(t, "DELETE", "/api/v1/namespaces/default/configmaps/c3")).status).toBe(200);
    expect((await api(t, "DELETE", `/api/v1/nodes/n-${suffix}`)).status).toBe(200);
    await statusWith("the deletes counted", (s) => s.counts?.configmaps === cms - 1 && s.nodes === 0);
    // the root sees the counts in its table too
    const table = await api(root, "GET", `${CLUSTERS}/${NAME}`, undefined, {
      accept: "application/json;as=Table;v=v1;g=meta.k8s.io",
    });
    expect(table.json.columnDefinitions.map((c: { name: string }) => c.name)).toEqual(
      expect.arrayContaining(["Objects", "Nodes"]),
    );
  });

  it("does not rewrite an idle cluster's status", async () => {
    const settled = await status();
    await new Promise((r) => setTimeout(r, 2500));
    const later = await status();
    expect(later.rv).toBe(settled.rv);
    // nor is the root's table of clusters asking the cluster anything: its status is stored
  });

  it("refuses a create past spec.limits.objects with upstream's ResourceQuota 403", async () => {
    const now = await status();
    await setLimit(now.objects! + 3);
    // ten at once, three places left: the shard counts what it stages, so exactly three pass
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        api(t, "POST", "/api/v1/namespaces/default/configmaps", cm(`p${i}`)),
      ),
    );
    const codes = answers.map((r) => r.status).sort();
    expect(codes.filter((c) => c === 201)).toHaveLength(3);
    expect(codes.filter((c) => c === 403)).toHaveLength(7);
    const refused = answers.find((r) => r.status === 403)!;
    expect(refused.json).toMatchObject({
      kind: "Status",
      status: "Failure",
      reason: "Forbidden",
      code: 403,
      details: { kind: "configmaps" },
    });
    expect(refused.json.message).toMatch(
      new RegExp(
        `^configmaps "p\\d" is forbidden: exceeded quota: ${NAME}, requested: objects=1, used: objects=${now.objects! + 3}, limited: objects=${now.objects! + 3}$`,
      ),
    );
    // another resource is held to the same total, once the counts are published
    await statusWith("the limit reached in status", (s) => s.objects === now.objects! + 3);
    await new Promise((r) => setTimeout(r, 1200));
    const secret = await api(t, "POST", "/api/v1/namespaces/default/secrets", {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "s1" },
    });
    expect(secret.status, secret.text).toBe(403);
    expect(secret.json.message).toContain('secrets "s1" is forbidden: exceeded quota');
    // kubectl-style server-side apply is held to it too
    const applied = await api(
      t,
      "PATCH",
      "/api/v1/namespaces/default/configmaps/by-apply?fieldManager=test",
      JSON.stringify(cm("by-apply")),
      { "content-type": "application/apply-patch+yaml" },
    );
    expect(applied.status, applied.text).toBe(403);
    // updates and deletes are not creates: they pass
    const upd = await api(
      t,
      "PATCH",
      "/api/v1/namespaces/default/configmaps/c1",
      { data: { a: "c" } },
      {
        "content-type": "application/merge-patch+json",
      },
    );
    expect(upd.status, upd.text).toBe(200);
    expect((await api(t, "DELETE", "/api/v1/namespaces/default/configmaps/c1")).status).toBe(200);
    // a freed place is usable again
    const again = await api(t, "POST", "/api/v1/namespaces/default/configmaps", cm("after-delete"));
    expect(again.status, again.text).toBe(201);
    // without the limit, creates pass again
    await setLimit(null);
    expect((await api(t, "POST", "/api/v1/namespaces/default/configmaps", cm("free"))).status).toBe(201);
    // and the root cluster was never held to it
    const rootCm = await api(root, "POST", "/api/v1/namespaces/default/configmaps", cm(`root-${suffix}`));
    expect(rootCm.status).toBe(201);
    await api(root, "DELETE", `/api/v1/namespaces/default/configmaps/root-${suffix}`);
  });

  it("refuses a create past spec.limits count/<resource> with upstream's ResourceQuota 403", async () => {
    const secrets = (await api(t, "GET", "/api/v1/secrets")).json.items.length;
    const patch = (limits: Record<string, number | null>) =>
      kubectl(root, [
        "patch",
        "clusters.tenancy.edgeplane.dev",
        NAME,
        "--type=merge",
        "-p",
        JSON.stringify({ spec: { limits } }),
      ]);
    const set = await patch({ "count/secrets": secrets + 2, "count/deployments.apps": 0 });
    expect(set.code, set.stderr).toBe(0);
    const stored = (await api(root, "GET", `${CLUSTERS}/${NAME}`)).json.spec.limits;
    expect(stored).toMatchObject({ "count/secrets": secrets + 2, "count/deployments.apps": 0 });
    await new Promise((r) => setTimeout(r, 1200));
    // five at once, two places left: the secrets' shard counts exactly
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        api(t, "POST", "/api/v1/namespaces/default/secrets", {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: `q${i}` },
        }),
      ),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([201, 201, 403, 403, 403]);
    const refused = answers.find((r) => r.status === 403)!;
    expect(refused.json).toMatchObject({
      kind: "Status",
      reason: "Forbidden",
      code: 403,
      details: { kind: "secrets" },
    });
    expect(refused.json.message).toMatch(
      new RegExp(
        `^secrets "q\\d" is forbidden: exceeded quota: ${NAME}, requested: count/secrets=1, used: count/secrets=${secrets + 2}, limited: count/secrets=${secrets + 2}$`,
      ),
    );
    // a resource of a group, limited to none
    const deploy = await api(t, "POST", "/apis/apps/v1/namespaces/default/deployments", {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "d1" },
      spec: {
        selector: { matchLabels: { app: "d1" } },
        template: {
          metadata: { labels: { app: "d1" } },
          spec: { containers: [{ name: "c", image: "busybox" }] },
        },
      },
    });
    expect(deploy.status, deploy.text).toBe(403);
    expect(deploy.json.message).toContain(
      `deployments.apps "d1" is forbidden: exceeded quota: ${NAME}, requested: count/deployments.apps=1`,
    );
    // other resources are not held to them
    const other = await api(t, "POST", "/api/v1/namespaces/default/configmaps", cm(`unlimited-${suffix}`));
    expect(other.status, other.text).toBe(201);
    // removed, creates pass again
    const unset = await patch({ "count/secrets": null, "count/deployments.apps": null });
    expect(unset.code, unset.stderr).toBe(0);
    await new Promise((r) => setTimeout(r, 1200));
    const again = await api(t, "POST", "/api/v1/namespaces/default/secrets", {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "q-after" },
    });
    expect(again.status, again.text).toBe(201);
  });

  it("answers a bad count/<resource> limit with 422 Invalid", async () => {
    for (const [key, bad] of [
      ["count/pods", -1],
      ["count/pods", 1.5],
      ["count/pods", "10"],
      ["count/Pods", 1],
      ["count/", 1],
      ["count/pods..apps", 1],
    ] as const) {
      const r = await api(
        root,
        "PATCH",
        `${CLUSTERS}/${NAME}`,
        { spec: { limits: { [key]: bad } } },
        { "content-type": "application/merge-patch+json" },
      );
      expect(r.status, `${key}: ${JSON.stringify(bad)}`).toBe(422);
      expect(r.json.reason).toBe("Invalid");
      expect(causes(r)).toEqual([expect.stringContaining(`spec.limits[${key}]`)]);
    }
  });

  it("answers a bad limit with 422 Invalid", async () => {
    for (const bad of [0, -1, 1.5, "10"]) {
      const r = await api(
        root,
        "PATCH",
        `${CLUSTERS}/${NAME}`,
        { spec: { limits: { objects: bad } } },
        { "content-type": "application/merge-patch+json" },
      );
      expect(r.status, JSON.stringify(bad)).toBe(422);
      expect(causes(r)).toEqual([expect.stringContaining("spec.limits.objects")]);
    }
  });
});
