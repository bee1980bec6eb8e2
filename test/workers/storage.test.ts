// Storage through real workerd and kubectl: PersistentVolumes, PersistentVolumeClaims and
// StorageClasses with upstream's defaults, validation and tables; the admission plugins (the
// default class, the protection finalizers, expansion only where the class allows it); the
// PersistentVolume controller binding a claim to the smallest matching volume both ways,
// releasing and reclaiming volumes; and the protection controllers holding a claim a scheduled
// pod uses and a volume that is bound. Scheduling with claims is in test/e2e/storage.test.ts.
import { describe, expect, it } from "vitest";
import { api, causes, freshNamespace, hasKubectl, kubectl, shared, until } from "../helpers/cluster";

const t = shared();
const SC = "/apis/storage.k8s.io/v1/storageclasses";
const PV = "/api/v1/persistentvolumes";
const pvcs = (ns: string, name = "") =>
  `/api/v1/namespaces/${ns}/persistentvolumeclaims${name ? `/${name}` : ""}`;
const merge = { "content-type": "application/merge-patch+json" };
const uniq = () => Math.random().toString(36).slice(2, 7);

function volume(name: string, spec: Record<string, unknown>, labels?: Record<string, string>) {
  return {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name, ...(labels ? { labels } : {}) },
    spec: { accessModes: ["ReadWriteOnce"], hostPath: { path: `/tmp/${name}` }, ...spec },
  };
}

function claim(name: string, spec: Record<string, unknown>) {
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name },
    spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } }, ...spec },
  };
}

async function get(path: string): Promise<any> {
  const r = await api(t, "GET", path);
  expect(r.status, r.text).toBe(200);
  return r.json;
}

async function eventsOf(ns: string, name: string): Promise<string[]> {
  const r = await api(
    t,
    "GET",
    `/api/v1/namespaces/${ns}/events?fieldSelector=involvedObject.name%3D${name}`,
  );
  // every one names its object by kind too (kubectl describe finds them by it)
  for (const e of r.json.items as any[])
    expect(["PersistentVolumeClaim", "PersistentVolume"]).toContain(e.involvedObject.kind);
  return (r.json.items as any[]).map((e) => `${e.type} ${e.reason} ${e.message}`);
}

describe("storage: the API", () => {
  it("validates volumes, claims and classes as upstream", async () => {
    const ns = await freshNamespace(t);
    expect(
      await causes(
        await api(t, "POST", PV, {
          apiVersion: "v1",
          kind: "PersistentVolume",
          metadata: { name: `v-${uniq()}` },
          spec: {},
        }),
      ),
    ).toEqual([
      "spec.accessModes: Required value",
      "spec.capacity: Required value",
      'spec.capacity: Unsupported value: null: supported values: "storage"',
      "spec: Required value: must specify a volume type",
    ]);
    const two = volume(`v-${uniq()}`, {
      capacity: { storage: "0" },
      accessModes: ["ReadWriteOncePod", "ReadWriteOnce", "Sometimes"],
      nfs: { server: "nas", path: "/x" },
      persistentVolumeReclaimPolicy: "Keep",
    });
    expect(await causes(await api(t, "POST", PV, two))).toEqual([
      'spec.accessModes: Unsupported value: "Sometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
      "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
      'spec.capacity[storage]: Invalid value: "0": must be greater than zero',
      'spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", "Retain"',
      "spec.nfs: Forbidden: may not specify more than 1 volume type",
    ]);
    const local = {
      ...volume(`v-${uniq()}`, { capacity: { storage: "1Gi" }, local: { path: "/mnt/../x" } }),
    };
    delete (local.spec as any).hostPath;
    expect(await causes(await api(t, "POST", PV, local))).toEqual([
      "spec.local.path: Invalid value: \"/mnt/../x\": must not contain '..'",
    ]);
    (local.spec as any).local.path = "/mnt/x";
    expect(await causes(await api(t, "POST", PV, local))).toEqual([
      "spec.nodeAffinity: Required value: Local volume requires node affinity",
    ]);
    const bad = {
      ...claim("c", { accessModes: [], volumeMode: "Raw" }),
      spec: { accessModes: [], volumeMode: "Raw" },
    };
    expect(await causes(await api(t, "POST", pvcs(ns), bad))).toEqual([
      "spec.accessModes: Required value: at least 1 access mode is required",
      "spec.resources[storage]: Required value",
      'spec.volumeMode: Unsupported value: "Raw": supported values: "Block", "Filesystem"',
    ]);
    // a claim's spec does not change once made, but for a bound claim's request
    expect((await api(t, "POST", pvcs(ns), claim("u", { storageClassName: "" }))).status).toBe(201);
    const grown = await api(
      t,
      "PATCH",
      pvcs(ns, "u"),
      { spec: { resources: { requests: { storage: "2Gi" } } } },
      merge,
    );
    const [immutable] = await causes(grown);
    expect(immutable).toMatch(
      /^spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n/,
    );
    const sc = (name: string, more: Record<string, unknown>) => ({
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name },
      provisioner: "example.com/disk",
      ...more,
    });
    expect(
      await causes(
        await api(
          t,
          "POST",
          SC,
          sc(`s-${uniq()}`, { provisioner: "", reclaimPolicy: "Recycle", volumeBindingMode: "Later" }),
        ),
      ),
    ).toEqual([
      "provisioner: Required value",
      'reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"',
      'volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"',
    ]);
    const name = `s-${uniq()}`;
    const made = await api(t, "POST", SC, sc(name, { parameters: { type: "ssd" } }));
    expect(made.status, made.text).toBe(201);
    expect(made.json).toMatchObject({ reclaimPolicy: "Delete", volumeBindingMode: "Immediate" });
    const changed = await api(
      t,
      "PATCH",
      `${SC}/${name}`,
      { parameters: { type: "hdd" }, volumeBindingMode: "WaitForFirstConsumer", allowVolumeExpansion: true },
      merge,
    );
    expect(await causes(changed)).toEqual([
      "parameters: Forbidden: updates to parameters are forbidden.",
      'volumeBindingMode: Invalid value: "WaitForFirstConsumer": field is immutable',
    ]);
    expect((await api(t, "PATCH", `${SC}/${name}`, { allowVolumeExpansion: true }, merge)).status).toBe(200);
    expect((await api(t, "DELETE", `${SC}/${name}`)).status).toBe(200);
  });

  it("defaults volumes and claims, adds the protection finalizers and the default class", async () => {
    const ns = await freshNamespace(t);
    const name = `v-${uniq()}`;
    const pv = await api(
      t,
      "POST",
      PV,
      volume(name, { capacity: { storage: "1Gi" }, storageClassName: `none-${uniq()}` }),
    );
    expect(pv.status, pv.text).toBe(201);
    expect(pv.json.spec).toMatchObject({ persistentVolumeReclaimPolicy: "Retain", volumeMode: "Filesystem" });
    expect(pv.json.metadata.finalizers).toEqual(["kubernetes.io/pv-protection"]);
    expect(pv.json.status.phase).toBe("Pending");
    expect(pv.json.status.lastPhaseTransitionTime).toBeTruthy();
    const avail = await until("the volume Available", async () => {
      const v = await get(`${PV}/${name}`);
      return v.status.phase === "Available" && v;
    });
    expect(avail.status.lastPhaseTransitionTime).toBeTruthy();
    // no class named: the default one; "" is no class at all
    const c = await api(t, "POST", pvcs(ns), claim("d", {}));
    expect(c.status, c.text).toBe(201);
    expect(c.json.spec).toMatchObject({ storageClassName: "local-path", volumeMode: "Filesystem" });
    expect(c.json.status).toEqual({ phase: "Pending" });
    expect(c.json.metadata.finalizers).toEqual(["kubernetes.io/pvc-protection"]);
    const none = await api(t, "POST", pvcs(ns), claim("n", { storageClassName: "" }));
    expect(none.json.spec.storageClassName).toBe("");
    // a local-path claim waits for the first pod that uses it
    expect(
      await until(
        "WaitForFirstConsumer",
        async () => (await eventsOf(ns, "d")).length > 0 && eventsOf(ns, "d"),
      ),
    ).toEqual(["Normal WaitForFirstConsumer waiting for first consumer to be created before binding"]);
    expect(
      await until("FailedBinding", async () => (await eventsOf(ns, "n")).length > 0 && eventsOf(ns, "n")),
    ).toEqual([
      "Normal FailedBinding no persistent volumes available for this claim and no storage class is set",
    ]);
    await api(t, "DELETE", `${PV}/${name}`);
  });

  it.skipIf(!hasKubectl)("prints upstream's columns with kubectl get", async () => {
    const ns = await freshNamespace(t);
    const cls = `manual-${uniq()}`;
    const name = `v-${uniq()}`;
    await api(
      t,
      "POST",
      PV,
      volume(name, {
        capacity: { storage: "2Gi" },
        storageClassName: cls,
        accessModes: ["ReadWriteMany", "ReadWriteOnce"],
      }),
    );
    await api(t, "POST", pvcs(ns), claim("data", { storageClassName: cls }));
    await until("bound", async () => (await get(pvcs(ns, "data"))).status.phase === "Bound");
    const pvs = await kubectl(t, ["get", "pv", name, "-o", "wide"]);
    expect(pvs.stdout.split("\n")[0].split(/\s{2,}/)).toEqual([
      "NAME",
      "CAPACITY",
      "ACCESS MODES",
      "RECLAIM POLICY",
      "STATUS",
      "CLAIM",
      "STORAGECLASS",
      "VOLUMEATTRIBUTESCLASS",
      "REASON",
      "AGE",
      "VOLUMEMODE",
    ]);
    expect(pvs.stdout.split("\n")[1]).toMatch(
      new RegExp(
        `^${name}\\s+2Gi\\s+RWO,RWX\\s+Retain\\s+Bound\\s+${ns}/data\\s+${cls}\\s+<unset>\\s+\\S+\\s+Filesystem$`,
      ),
    );
    const claims = await kubectl(t, ["-n", ns, "get", "pvc"]);
    expect(claims.stdout.split("\n")[1]).toMatch(
      new RegExp(`^data\\s+Bound\\s+${name}\\s+2Gi\\s+RWO,RWX\\s+${cls}\\s+<unset>\\s+\\S+$`),
    );
    const classes = await kubectl(t, ["get", "sc", "local-path"]);
    expect(classes.stdout).toMatch(
      /^NAME\s+PROVISIONER\s+RECLAIMPOLICY\s+VOLUMEBINDINGMODE\s+ALLOWVOLUMEEXPANSION\s+AGE\nlocal-path \(default\)\s+edgeplane.dev\/local-path\s+Delete\s+WaitForFirstConsumer\s+false\s+\S+\n$/,
    );
    await api(t, "DELETE", pvcs(ns, "data"));
  });
});

describe("storage: binding and reclaiming", () => {
  it("binds a claim to the smallest matching volume, both ways, and releases it when the claim goes", async () => {
    const ns = await freshNamespace(t);
    const cls = `manual-${uniq()}`;
    const [small, big, other] = [`v-${uniq()}`, `v-${uniq()}`, `v-${uniq()}`];
    await api(t, "POST", PV, volume(big, { capacity: { storage: "5Gi" }, storageClassName: cls }));
    await api(t, "POST", PV, volume(small, { capacity: { storage: "1Gi" }, storageClassName: cls }));
    // too small, and of another class
    await api(t, "POST", PV, volume(other, { capacity: { storage: "100Mi" }, storageClassName: cls }));
    const r = await api(
      t,
      "POST",
      pvcs(ns),
      claim("data", { storageClassName: cls, resources: { requests: { storage: "500Mi" } } }),
    );
    expect(r.status, r.text).toBe(201);
    const bound = await until("the claim Bound", async () => {
      const c = await get(pvcs(ns, "data"));
      return c.status.phase === "Bound" && c;
    });
    expect(bound.spec.volumeName).toBe(small);
    expect(bound.metadata.annotations).toMatchObject({
      "pv.kubernetes.io/bind-completed": "yes",
      "pv.kubernetes.io/bound-by-controller": "yes",
    });
    expect(bound.status).toEqual({
      phase: "Bound",
      accessModes: ["ReadWriteOnce"],
      capacity: { storage: "1Gi" },
    });
    const pv = await until("the volume Bound", async () => {
      const v = await get(`${PV}/${small}`);
      return v.status.phase === "Bound" && v;
    });
    expect(pv.spec.claimRef).toMatchObject({
      kind: "PersistentVolumeClaim",
      namespace: ns,
      name: "data",
      uid: bound.metadata.uid,
    });
    expect(pv.metadata.annotations["pv.kubernetes.io/bound-by-controller"]).toBe("yes");
    expect((await get(`${PV}/${big}`)).status.phase).toBe("Available");
    // Retain: the volume stays, Released, still naming the claim
    expect((await api(t, "DELETE", pvcs(ns, "data"))).status).toBe(200);
    const released = await until("Released", async () => {
      const v = await get(`${PV}/${small}`);
      return v.status.phase === "Released" && v;
    });
    expect(released.spec.claimRef.name).toBe("data");
    for (const v of [small, big, other]) await api(t, "DELETE", `${PV}/${v}`);
  });

  it("tells why a claim cannot have the volume it names, and fails a static volume it cannot delete", async () => {
    const ns = await freshNamespace(t);
    const cls = `manual-${uniq()}`;
    const tiny = `v-${uniq()}`;
    await api(t, "POST", PV, volume(tiny, { capacity: { storage: "100Mi" }, storageClassName: cls }));
    await api(t, "POST", pvcs(ns), claim("named", { storageClassName: cls, volumeName: tiny }));
    expect(
      await until(
        "VolumeMismatch",
        async () => (await eventsOf(ns, "named")).length > 0 && eventsOf(ns, "named"),
      ),
    ).toEqual([
      `Warning VolumeMismatch Cannot bind to requested volume "${tiny}": requested PV is too small`,
    ]);
    // reclaim policy Delete on a volume no provisioner made: nothing can delete it
    const doomed = `v-${uniq()}`;
    await api(
      t,
      "POST",
      PV,
      volume(doomed, {
        capacity: { storage: "1Gi" },
        storageClassName: `${cls}-d`,
        persistentVolumeReclaimPolicy: "Delete",
      }),
    );
    await api(t, "POST", pvcs(ns), claim("temp", { storageClassName: `${cls}-d` }));
    await until("bound", async () => (await get(pvcs(ns, "temp"))).status.phase === "Bound");
    await api(t, "DELETE", pvcs(ns, "temp"));
    const failed = await until("Failed", async () => {
      const v = await get(`${PV}/${doomed}`);
      return v.status.phase === "Failed" && v;
    });
    expect(failed.status.message).toBe(
      `error getting deleter volume plugin for volume "${doomed}": no deletable volume plugin matched`,
    );
    for (const v of [tiny, doomed]) await api(t, "DELETE", `${PV}/${v}`);
  });

  it("holds a claim a scheduled pod uses, and a bound volume, until they are free", async () => {
    const ns = await freshNamespace(t);
    const cls = `manual-${uniq()}`;
    const name = `v-${uniq()}`;
    await api(t, "POST", PV, volume(name, { capacity: { storage: "1Gi" }, storageClassName: cls }));
    await api(t, "POST", pvcs(ns), claim("held", { storageClassName: cls }));
    await until("bound", async () => (await get(pvcs(ns, "held"))).status.phase === "Bound");
    const pod = await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "user" },
      spec: {
        nodeName: "nowhere",
        containers: [{ name: "c", image: "busybox" }],
        volumes: [{ name: "d", persistentVolumeClaim: { claimName: "held" } }],
      },
    });
    expect(pod.status, pod.text).toBe(201);
    // the bound volume cannot go yet either
    expect((await api(t, "DELETE", `${PV}/${name}`)).status).toBe(200);
    expect((await api(t, "DELETE", pvcs(ns, "held"))).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1000));
    const terminating = await get(pvcs(ns, "held"));
    expect(terminating.metadata.deletionTimestamp).toBeTruthy();
    expect(terminating.metadata.finalizers).toEqual(["kubernetes.io/pvc-protection"]);
    expect((await get(`${PV}/${name}`)).metadata.finalizers).toEqual(["kubernetes.io/pv-protection"]);
    // the pod goes: the claim goes, the volume is released and goes too
    await api(t, "DELETE", `/api/v1/namespaces/${ns}/pods/user?gracePeriodSeconds=0`);
    await until("the claim gone", async () => (await api(t, "GET", pvcs(ns, "held"))).status === 404);
    await until("the volume gone", async () => (await api(t, "GET", `${PV}/${name}`)).status === 404);
  });

  it("lets a bound claim grow only when its class allows expansion", async () => {
    const ns = await freshNamespace(t);
    const cls = `manual-${uniq()}`;
    const name = `v-${uniq()}`;
    await api(t, "POST", PV, volume(name, { capacity: { storage: "1Gi" }, storageClassName: cls }));
    await api(t, "POST", pvcs(ns), claim("grow", { storageClassName: cls }));
    await until("bound", async () => (await get(pvcs(ns, "grow"))).status.phase === "Bound");
    const r = await api(
      t,
      "PATCH",
      pvcs(ns, "grow"),
      { spec: { resources: { requests: { storage: "2Gi" } } } },
      merge,
    );
    expect(r.status, r.text).toBe(403);
    expect(r.json.message).toBe(
      'persistentvolumeclaims "grow" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize',
    );
    await api(t, "DELETE", pvcs(ns, "grow"));
    await api(t, "DELETE", `${PV}/${name}`);
  });
});

describe("storage: quotas", () => {
  it("counts claims and their storage, in all and per class, against a namespace's quota", async () => {
    const ns = await freshNamespace(t);
    const perClass = "local-path.storageclass.storage.k8s.io/persistentvolumeclaims";
    const q = await api(t, "POST", `/api/v1/namespaces/${ns}/resourcequotas`, {
      apiVersion: "v1",
      kind: "ResourceQuota",
      metadata: { name: "disks" },
      spec: { hard: { "requests.storage": "3Gi", persistentvolumeclaims: "5", [perClass]: "1" } },
    });
    expect(q.status, q.text).toBe(201);
    expect((await api(t, "POST", pvcs(ns), claim("one", {}))).status).toBe(201);
    const second = await api(t, "POST", pvcs(ns), claim("two", {}));
    expect(second.status, second.text).toBe(403);
    expect(second.json.message).toBe(
      `persistentvolumeclaims "two" is forbidden: exceeded quota: disks, requested: ${perClass}=1, used: ${perClass}=1, limited: ${perClass}=1`,
    );
    const big = await api(
      t,
      "POST",
      pvcs(ns),
      claim("big", { storageClassName: "", resources: { requests: { storage: "5Gi" } } }),
    );
    expect(big.status, big.text).toBe(403);
    expect(big.json.message).toBe(
      'persistentvolumeclaims "big" is forbidden: exceeded quota: disks, requested: requests.storage=5Gi, used: requests.storage=1Gi, limited: requests.storage=3Gi',
    );
    const used = (await get(`/api/v1/namespaces/${ns}/resourcequotas/disks`)).status.used;
    expect(used).toEqual({ "requests.storage": "1Gi", persistentvolumeclaims: "1", [perClass]: "1" });
  });
});
