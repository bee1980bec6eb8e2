// apps/v1 StatefulSets through real workerd: upstream's defaults, its validation and the spec
// fields an update may not change, the scale subresource, and claim templates defaulted as
// claims are, their names usable as the pods' volumes. The controller is in
// test/e2e/statefulsets.test.ts.
import { describe, expect, it } from "vitest";
import { api, causes, freshNamespace, hasKubectl, kubectl, shared } from "../helpers/cluster";

const t = shared();

function sts(name: string, spec: Record<string, unknown> = {}, podSpec: Record<string, unknown> = {}) {
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name },
    spec: {
      serviceName: name,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "c", image: "busybox" }], ...podSpec },
      },
      ...spec,
    },
  };
}

const path = (ns: string, name = "") =>
  `/apis/apps/v1/namespaces/${ns}/statefulsets${name ? `/${name}` : ""}`;
const merge = { "content-type": "application/merge-patch+json" };

describe("apps/v1 statefulsets", () => {
  it("defaults a StatefulSet as upstream", async () => {
    const ns = await freshNamespace(t);
    const r = await api(t, "POST", path(ns), sts("d"));
    expect(r.status, r.text).toBe(201);
    expect(r.json.spec).toMatchObject({
      replicas: 1,
      podManagementPolicy: "OrderedReady",
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 0 } },
      revisionHistoryLimit: 10,
      persistentVolumeClaimRetentionPolicy: { whenDeleted: "Retain", whenScaled: "Retain" },
    });
    expect(r.json.status).toEqual({ replicas: 0, availableReplicas: 0 });
    // maxUnavailable is an alpha field upstream, off by default: dropped
    const alpha = await api(
      t,
      "POST",
      path(ns),
      sts("m", { updateStrategy: { rollingUpdate: { maxUnavailable: 2 } } }),
    );
    expect(alpha.json.spec.updateStrategy).toEqual({
      type: "RollingUpdate",
      rollingUpdate: { partition: 0 },
    });
    // an explicit RollingUpdate without rollingUpdate keeps none
    const bare = await api(t, "POST", path(ns), sts("b", { updateStrategy: { type: "RollingUpdate" } }));
    expect(bare.json.spec.updateStrategy).toEqual({ type: "RollingUpdate" });
  });

  it("refuses what upstream refuses", async () => {
    const ns = await freshNamespace(t);
    const post = async (body: unknown) => causes(await api(t, "POST", path(ns), body));
    expect(await post(sts("a", { podManagementPolicy: "Sometimes" }))).toEqual([
      "spec.podManagementPolicy: Invalid value: \"Sometimes\": must be 'OrderedReady' or 'Parallel'",
    ]);
    expect(
      await post(sts("b", { updateStrategy: { type: "OnDelete", rollingUpdate: { partition: 1 } } })),
    ).toEqual([
      "spec.updateStrategy.rollingUpdate: Invalid value: {\"partition\":1}: only allowed for updateStrategy 'RollingUpdate'",
    ]);
    expect(
      await post(sts("c", { replicas: -1, updateStrategy: { rollingUpdate: { partition: -2 } } })),
    ).toEqual([
      "spec.updateStrategy.rollingUpdate.partition: Invalid value: -2: must be greater than or equal to 0",
      "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
    ]);
    expect(await post(sts("e", {}, { activeDeadlineSeconds: 3 }))).toEqual([
      "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported",
    ]);
    expect(await post(sts("f", { selector: {} }))).toContain(
      "spec.selector: Invalid value: {}: empty selector is invalid for statefulset",
    );
    expect((await api(t, "GET", path(ns))).json.items).toEqual([]);
  });

  it("takes volumeClaimTemplates: defaulted as claims, their names mountable by the pods", async () => {
    const ns = await freshNamespace(t);
    const claims = sts(
      "g",
      {
        volumeClaimTemplates: [
          {
            metadata: { name: "data" },
            spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
          },
        ],
      },
      { containers: [{ name: "c", image: "busybox", volumeMounts: [{ name: "data", mountPath: "/data" }] }] },
    );
    const r = await api(t, "POST", path(ns), claims);
    expect(r.status, r.text).toBe(201);
    expect(r.json.spec.volumeClaimTemplates[0]).toMatchObject({
      spec: { volumeMode: "Filesystem" },
      status: { phase: "Pending" },
    });
    // a mount naming neither a volume nor a claim template is still refused
    const bad = sts(
      "h",
      {},
      { containers: [{ name: "c", image: "busybox", volumeMounts: [{ name: "nope", mountPath: "/x" }] }] },
    );
    expect((await causes(await api(t, "POST", path(ns), bad))).join("\n")).toContain(
      'volumeMounts[0].name: Not found: "nope"',
    );
  });

  it("lets an update change only replicas, ordinals, template, updateStrategy, the retention policy and minReadySeconds", async () => {
    const ns = await freshNamespace(t);
    expect((await api(t, "POST", path(ns), sts("u"))).status).toBe(201);
    const ok = await api(
      t,
      "PATCH",
      path(ns, "u"),
      { spec: { replicas: 0, minReadySeconds: 2, ordinals: { start: 5 } } },
      merge,
    );
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.metadata.generation).toBe(2);
    for (const change of [
      { serviceName: "other" },
      { podManagementPolicy: "Parallel" },
      { revisionHistoryLimit: 3 },
    ])
      expect(await causes(await api(t, "PATCH", path(ns, "u"), { spec: change }, merge))).toEqual([
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
      ]);
    // the scale subresource
    const scale = await api(t, "GET", `${path(ns, "u")}/scale`);
    expect(scale.json).toMatchObject({ kind: "Scale", spec: { replicas: 0 }, status: { selector: "app=u" } });
  });

  it.skipIf(!hasKubectl)("kubectl get sts prints upstream's columns", async () => {
    const ns = await freshNamespace(t);
    expect((await api(t, "POST", path(ns), sts("w", { replicas: 0 }))).status).toBe(201);
    const get = await kubectl(t, ["get", "sts", "-n", ns, "-o", "wide"]);
    expect(get.code, get.stderr).toBe(0);
    expect(get.stdout).toMatch(/^NAME\s+READY\s+AGE\s+CONTAINERS\s+IMAGES\nw\s+0\/0\s+\d+s\s+c\s+busybox\n$/);
  });
});
