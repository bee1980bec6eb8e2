// Claims and scheduling end to end: real kubectl, the scheduler's VolumeBinding, the
// PersistentVolume controller and the local-path provisioner in workerd, KWOK-style simulated
// nodes. A local-path claim is provisioned on the node its first pod is scheduled to; a pod
// whose claim is unbound in an immediate class, or bound to a volume pinned elsewhere, stays
// pending with upstream's reasons; a generic ephemeral volume's claim lives and goes with its
// pod; a StatefulSet's claim templates give each pod its claim, which go with the set or on
// scale-down as the retention policy says.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, freshNamespace, hasKubectl, kubectl, shared, until } from "../helpers/cluster";
import { rolledOut, type SimPool, startSimPool } from "../helpers/sim-pool";

const t = shared();
let pool: SimPool;
const PV = "/api/v1/persistentvolumes";
const pvcs = (ns: string, name = "") =>
  `/api/v1/namespaces/${ns}/persistentvolumeclaims${name ? `/${name}` : ""}`;
const pods = (ns: string, name = "") => `/api/v1/namespaces/${ns}/pods${name ? `/${name}` : ""}`;
const uniq = () => Math.random().toString(36).slice(2, 7);
const k = (args: string[], input?: string) => kubectl(t, args, input === undefined ? {} : { input });

beforeAll(async () => {
  pool = await startSimPool(t, "storage", 2, 100);
});
afterAll(() => pool?.stop());

function podUsing(name: string, claimName: string): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  ${pool.placement.replace(/\n\s+/g, "\n  ")}
  containers: [{name: c, image: busybox, volumeMounts: [{name: d, mountPath: /data}]}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: ${claimName}}}]
`;
}

const claimYaml = (name: string, cls?: string) => `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: ${name}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
${cls === undefined ? "" : `  storageClassName: "${cls}"\n`}`;

/** A 1Gi ReadWriteOnce volume of class `cls` with this source (and node affinity); its name. */
async function staticVolume(cls: string, source: Record<string, unknown>): Promise<string> {
  const name = `v-${uniq()}`;
  const r = await api(t, "POST", PV, {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name },
    spec: { capacity: { storage: "1Gi" }, accessModes: ["ReadWriteOnce"], storageClassName: cls, ...source },
  });
  expect(r.status, r.text).toBe(201);
  return name;
}

/** One field of the events about an object, as `kubectl get events` prints them (space-separated). */
async function eventsAbout(ns: string, name: string, field: "reason" | "message"): Promise<string> {
  const r = await k([
    "-n",
    ns,
    "get",
    "events",
    "--field-selector",
    `involvedObject.name=${name}`,
    "-o",
    `jsonpath={.items[*].${field}}`,
  ]);
  return r.stdout;
}

async function scheduledMessage(ns: string, pod: string): Promise<string> {
  return until(`${pod} unschedulable`, async () => {
    const p = (await api(t, "GET", pods(ns, pod))).json;
    const c = (p.status?.conditions ?? []).find((x: any) => x.type === "PodScheduled");
    return c?.status === "False" && c.message;
  });
}

describe.skipIf(!hasKubectl)("storage and scheduling", () => {
  it("provisions a local-path claim on the node its first pod is scheduled to, and deletes it with the claim", async () => {
    const ns = await freshNamespace(t);
    const made = await k(
      ["-n", ns, "apply", "-f", "-"],
      `${claimYaml("data")}---\n${podUsing("user", "data")}`,
    );
    expect(made.code, made.stderr).toBe(0);
    await k(["-n", ns, "wait", "--for=condition=Ready", "pod/user", "--timeout=30s"]);
    const pod = (await api(t, "GET", pods(ns, "user"))).json;
    expect(pool.nodes).toContain(pod.spec.nodeName);
    const claim = (await api(t, "GET", pvcs(ns, "data"))).json;
    expect(claim.status.phase).toBe("Bound");
    expect(claim.metadata.annotations).toMatchObject({
      "volume.kubernetes.io/selected-node": pod.spec.nodeName,
      "volume.kubernetes.io/storage-provisioner": "edgeplane.dev/local-path",
      "pv.kubernetes.io/bind-completed": "yes",
    });
    const pvName = `pvc-${claim.metadata.uid}`;
    expect(claim.spec.volumeName).toBe(pvName);
    const pv = (await api(t, "GET", `${PV}/${pvName}`)).json;
    expect(pv.metadata.annotations["pv.kubernetes.io/provisioned-by"]).toBe("edgeplane.dev/local-path");
    expect(pv.spec).toMatchObject({
      persistentVolumeReclaimPolicy: "Delete",
      storageClassName: "local-path",
      capacity: { storage: "1Gi" },
      hostPath: { path: `/var/lib/edgeplane/storage/${pvName}_${ns}_data`, type: "DirectoryOrCreate" },
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            {
              matchExpressions: [
                { key: "kubernetes.io/hostname", operator: "In", values: [pod.spec.nodeName] },
              ],
            },
          ],
        },
      },
    });
    const reasons = (await eventsAbout(ns, "data", "reason")).split(" ");
    expect(reasons).toEqual(expect.arrayContaining(["Provisioning", "ProvisioningSucceeded"]));
    // repeats of one event, even ones recorded at the same moment, count on one Event
    expect(reasons.filter((r) => r === "ExternalProvisioning").length).toBeLessThanOrEqual(1);
    // the claim goes once its pod has; the provisioned volume goes with it
    expect((await k(["-n", ns, "delete", "pod", "user", "--grace-period=0", "--force"])).code).toBe(0);
    expect((await k(["-n", ns, "delete", "pvc", "data", "--timeout=30s"])).code).toBe(0);
    await until("the volume deleted", async () => (await api(t, "GET", `${PV}/${pvName}`)).status === 404);
  });

  it("waits for an external provisioner: the claim gets the pod's node, the pod is bound once a volume appears", async () => {
    const ns = await freshNamespace(t);
    const cls = `ext-${uniq()}`;
    const sc = await api(t, "POST", "/apis/storage.k8s.io/v1/storageclasses", {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: cls },
      provisioner: "example.com/disk",
      volumeBindingMode: "WaitForFirstConsumer",
    });
    expect(sc.status, sc.text).toBe(201);
    await k(["-n", ns, "apply", "-f", "-"], `${claimYaml("data", cls)}---\n${podUsing("user", "data")}`);
    const claim = await until("the claim handed to the provisioner on a node", async () => {
      const c = (await api(t, "GET", pvcs(ns, "data"))).json;
      const a = c.metadata.annotations ?? {};
      return a["volume.kubernetes.io/selected-node"] && a["volume.kubernetes.io/storage-provisioner"] && c;
    });
    const node = claim.metadata.annotations["volume.kubernetes.io/selected-node"];
    expect(pool.nodes).toContain(node);
    expect(claim.metadata.annotations["volume.kubernetes.io/storage-provisioner"]).toBe("example.com/disk");
    // the pod waits for its claim before it is bound
    expect((await api(t, "GET", pods(ns, "user"))).json.spec.nodeName).toBeUndefined();
    // the "provisioner" makes a volume pre-bound to the claim, on that node
    const pvName = await staticVolume(cls, {
      claimRef: { namespace: ns, name: "data", uid: claim.metadata.uid },
      hostPath: { path: "/tmp/ext" },
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: [node] }] },
          ],
        },
      },
    });
    const waited = await k(["-n", ns, "wait", "--for=condition=Ready", "pod/user", "--timeout=30s"]);
    expect(waited.code, waited.stderr).toBe(0);
    expect((await api(t, "GET", pods(ns, "user"))).json.spec.nodeName).toBe(node);
    expect((await api(t, "GET", pvcs(ns, "data"))).json.spec.volumeName).toBe(pvName);
    await k(["-n", ns, "delete", "pod", "user", "--grace-period=0", "--force"]);
    await k(["-n", ns, "delete", "pvc", "data"]);
    await api(t, "DELETE", `${PV}/${pvName}`);
    await api(t, "DELETE", `/apis/storage.k8s.io/v1/storageclasses/${cls}`);
  });

  it("keeps a pod pending while its claim is unbound in an immediate class, and schedules it once bound", async () => {
    const ns = await freshNamespace(t);
    const cls = `manual-${uniq()}`;
    await k(["-n", ns, "apply", "-f", "-"], `${claimYaml("data", cls)}---\n${podUsing("user", "data")}`);
    expect(await scheduledMessage(ns, "user")).toMatch(
      /^0\/\d+ nodes are available: pod has unbound immediate PersistentVolumeClaims\. preemption: /,
    );
    const pvName = await staticVolume(cls, { hostPath: { path: "/tmp/x" } });
    const waited = await k(["-n", ns, "wait", "--for=condition=Ready", "pod/user", "--timeout=30s"]);
    expect(waited.code, waited.stderr).toBe(0);
    await k(["-n", ns, "delete", "pod", "user", "--grace-period=0", "--force"]);
    await k(["-n", ns, "delete", "pvc", "data"]);
    await api(t, "DELETE", `${PV}/${pvName}`);
  });

  it("does not place a pod where its bound volume cannot be used (node affinity)", async () => {
    const ns = await freshNamespace(t);
    const cls = `manual-${uniq()}`;
    const pvName = await staticVolume(cls, {
      local: { path: "/mnt/disk" },
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: ["elsewhere"] }] },
          ],
        },
      },
    });
    await k(["-n", ns, "apply", "-f", "-"], claimYaml("data", cls));
    await until("bound", async () => (await api(t, "GET", pvcs(ns, "data"))).json.status.phase === "Bound");
    await k(["-n", ns, "apply", "-f", "-"], podUsing("user", "data"));
    const message = await scheduledMessage(ns, "user");
    expect(message).toMatch(/^0\/\d+ nodes are available: /);
    expect(message).toContain(`${pool.nodes.length} node(s) had volume node affinity conflict`);
    await k(["-n", ns, "delete", "pod", "user", "--grace-period=0", "--force"]);
    await k(["-n", ns, "delete", "pvc", "data"]);
    await api(t, "DELETE", `${PV}/${pvName}`);
  });

  it("makes a generic ephemeral volume's claim for its pod, and deletes it with the pod", async () => {
    const ns = await freshNamespace(t);
    const pod = `apiVersion: v1
kind: Pod
metadata: {name: scratch}
spec:
  ${pool.placement.replace(/\n\s+/g, "\n  ")}
  containers: [{name: c, image: busybox, volumeMounts: [{name: tmp, mountPath: /tmp}]}]
  volumes:
  - name: tmp
    ephemeral:
      volumeClaimTemplate:
        metadata: {labels: {kind: scratch}}
        spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`;
    expect((await k(["-n", ns, "apply", "-f", "-"], pod)).code).toBe(0);
    const waited = await k(["-n", ns, "wait", "--for=condition=Ready", "pod/scratch", "--timeout=30s"]);
    expect(waited.code, waited.stderr).toBe(0);
    const p = (await api(t, "GET", pods(ns, "scratch"))).json;
    const claim = (await api(t, "GET", pvcs(ns, "scratch-tmp"))).json;
    expect(claim.metadata.labels).toEqual({ kind: "scratch" });
    expect(claim.metadata.ownerReferences).toEqual([
      {
        apiVersion: "v1",
        kind: "Pod",
        name: "scratch",
        uid: p.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(claim.status.phase).toBe("Bound");
    expect(claim.metadata.annotations["volume.kubernetes.io/selected-node"]).toBe(p.spec.nodeName);
    // the pod goes: its claim goes with it, and the provisioned volume
    expect((await k(["-n", ns, "delete", "pod", "scratch", "--grace-period=0", "--force"])).code).toBe(0);
    await until("the claim gone", async () => (await api(t, "GET", pvcs(ns, "scratch-tmp"))).status === 404);
    await until(
      "the volume gone",
      async () => (await api(t, "GET", `${PV}/${claim.spec.volumeName}`)).status === 404,
    );
  });

  it("gives each StatefulSet pod its own claim, deleted on scale-down and with the set as the policy says", async () => {
    const ns = await freshNamespace(t);
    const sts = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete, whenScaled: Delete}
  template:
    metadata: {labels: {app: db}}
    spec:
      ${pool.placement}
      containers: [{name: c, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
  volumeClaimTemplates:
  - metadata: {name: data, labels: {kind: disk}}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`;
    expect((await k(["-n", ns, "apply", "-f", "-"], sts)).code).toBe(0);
    await rolledOut(t, ns, "sts/db");
    const claims = (await api(t, "GET", pvcs(ns))).json.items as any[];
    expect(claims.map((c) => [c.metadata.name, c.status.phase, c.metadata.labels]).sort()).toEqual([
      ["data-db-0", "Bound", { app: "db", kind: "disk" }],
      ["data-db-1", "Bound", { app: "db", kind: "disk" }],
    ]);
    expect(claims[0].metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: "StatefulSet", name: "db" }),
    ]);
    const pod0 = (await api(t, "GET", pods(ns, "db-0"))).json;
    expect(pod0.spec.volumes[0]).toEqual({ name: "data", persistentVolumeClaim: { claimName: "data-db-0" } });
    expect(await eventsAbout(ns, "db", "message")).toContain(
      "create Claim data-db-0 Pod db-0 in StatefulSet db success",
    );
    // scale-down: the condemned pod's claim goes with it
    await k(["-n", ns, "scale", "sts/db", "--replicas=1"]);
    await until("data-db-1 gone", async () => (await api(t, "GET", pvcs(ns, "data-db-1"))).status === 404);
    expect((await api(t, "GET", pvcs(ns, "data-db-0"))).status).toBe(200);
    // the set goes: so does the rest
    await k(["-n", ns, "delete", "sts", "db"]);
    await until(
      "claims gone",
      async () => ((await api(t, "GET", pvcs(ns))).json.items as any[]).length === 0,
    );
  });
});
