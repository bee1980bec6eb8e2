import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { api, hasKubectl, kubectl } from "../../helpers/cluster";
import type { OwnServer } from "../../helpers/own-server";
import { available, BUSYBOX, waitFor, withEdgeletNode } from "./harness";

const NODE = `edgelet-ctl-${Math.random().toString(36).slice(2, 7)}`;

describe.skipIf(!available)("workload controllers on an edgelet node", () => {
  const suite = withEdgeletNode(NODE, "ctl");
  // set by the suite's beforeAll, read by the tests
  let server: OwnServer;
  let ns: string;
  const { cri } = suite;
  beforeAll(() => {
    ({ server, ns } = suite);
  });

  /** Creates a Job whose pods run `script` on this node, waits for Complete, returns it. */
  async function runJob(name: string, script: string, spec: Record<string, unknown> = {}): Promise<any> {
    const r = await api(server, "POST", `/apis/batch/v1/namespaces/${ns}/jobs`, {
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name },
      spec: {
        ...spec,
        template: {
          spec: {
            nodeName: NODE,
            restartPolicy: "Never",
            terminationGracePeriodSeconds: 0,
            containers: [{ name: "work", image: BUSYBOX, command: ["sh", "-c", script] }],
          },
        },
      },
    });
    expect(r.status, r.text).toBe(201);
    const waited = await kubectl(server, [
      "-n",
      ns,
      "wait",
      "--for=condition=complete",
      `job/${name}`,
      "--timeout=60s",
    ]);
    expect(waited.stdout, waited.stderr).toBe(`job.batch/${name} condition met\n`);
    return (await api(server, "GET", `/apis/batch/v1/namespaces/${ns}/jobs/${name}`)).json;
  }

  it.skipIf(!hasKubectl)(
    "runs a Job's pod to completion: the Job is Complete and its log readable",
    async () => {
      const job = await runJob("once", "echo job-says-$((6*7))");
      const logs = await kubectl(server, ["-n", ns, "logs", "job/once"]);
      expect(logs.stdout, logs.stderr).toBe("job-says-42\n");
      expect(job.status).toMatchObject({ succeeded: 1, ready: 0, terminating: 0 });
      const del = await kubectl(server, ["-n", ns, "delete", "job", "once"]);
      expect(del.code, del.stderr).toBe(0);
      await waitFor(
        "the Job's pod gone",
        async () => {
          const pods = await api(
            server,
            "GET",
            `/api/v1/namespaces/${ns}/pods?labelSelector=job-name%3Donce`,
          );
          return pods.json.items.length === 0;
        },
        30_000,
      );
    },
    90_000,
  );

  it.skipIf(!hasKubectl)(
    "tells each pod of an Indexed Job its index",
    async () => {
      const job = await runJob("idx", "echo index-$JOB_COMPLETION_INDEX-on-$(hostname)", {
        completionMode: "Indexed",
        completions: 2,
        parallelism: 2,
      });
      const logs = await kubectl(server, ["-n", ns, "logs", "-l", "batch.kubernetes.io/job-name=idx"]);
      expect(logs.stdout.split("\n").filter(Boolean).sort()).toEqual([
        "index-0-on-idx-0",
        "index-1-on-idx-1",
      ]);
      expect([job.status.completedIndexes, job.status.succeeded]).toEqual(["0-1", 2]);
      expect((await kubectl(server, ["-n", ns, "delete", "job", "idx"])).code).toBe(0);
    },
    90_000,
  );

  /** The running CRI containers of the pod with this uid. */
  const running = async (uid: string) =>
    (await cri.listContainers({ label_selector: { "io.kubernetes.pod.uid": uid } })).filter(
      (c) => c.state === "CONTAINER_RUNNING",
    );

  it.skipIf(!hasKubectl)(
    "runs a DaemonSet's pod on the node, rolls it to a new template, and stops it with the DaemonSet",
    async () => {
      const manifest = (gen: string) => `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: daemon}
spec:
  selector: {matchLabels: {app: daemon}}
  template:
    metadata: {labels: {app: daemon}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - name: d
        image: ${BUSYBOX}
        command: [sh, -c, 'echo daemon-$GEN-on-$NODE; exec sleep 3600']
        env:
        - {name: GEN, value: "${gen}"}
        - name: NODE
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
`;
      const k = (args: string[], input?: string) =>
        kubectl(server, ["-n", ns, ...args], input === undefined ? {} : { input });
      const podsNow = async () =>
        (
          (await api(server, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Ddaemon`)).json
            .items as any[]
        ).filter((p) => !p.metadata.deletionTimestamp);
      const logsSay = (text: string) =>
        waitFor(
          `logs: ${text}`,
          async () => (await k(["logs", "-l", "app=daemon"])).stdout.trim() === text,
          60_000,
        );

      expect((await k(["apply", "-f", "-"], manifest("1"))).code).toBe(0);
      const status = await k(["rollout", "status", "ds/daemon", "--timeout=90s"]);
      expect(status.stdout, status.stderr).toContain('daemon set "daemon" successfully rolled out');
      await logsSay(`daemon-1-on-${NODE}`);
      const [first] = await podsNow();
      expect(first.spec.nodeName).toBe(NODE);
      expect(await running(first.metadata.uid)).toHaveLength(1);

      expect((await k(["apply", "-f", "-"], manifest("2"))).code).toBe(0);
      const rolled = await k(["rollout", "status", "ds/daemon", "--timeout=90s"]);
      expect(rolled.stdout, rolled.stderr).toContain('daemon set "daemon" successfully rolled out');
      await logsSay(`daemon-2-on-${NODE}`);
      const [second] = await podsNow();
      expect(second.metadata.uid).not.toBe(first.metadata.uid);
      await waitFor(
        "the first pod's container stopped",
        async () => (await running(first.metadata.uid)).length === 0,
      );

      expect((await k(["delete", "ds", "daemon"])).code).toBe(0);
      await waitFor("the DaemonSet's pod gone", async () => (await podsNow()).length === 0, 60_000);
      await waitFor("its container stopped", async () => (await running(second.metadata.uid)).length === 0);
    },
    240_000,
  );

  it.skipIf(!hasKubectl)(
    "keeps a StatefulSet pod's data on its local-path claim across the pod's replacement",
    async () => {
      const k = (args: string[], input?: string) =>
        kubectl(server, ["-n", ns, ...args], input === undefined ? {} : { input });
      const script =
        "if [ -f /data/first ]; then echo found-$(cat /data/first); else echo $(hostname)-$$ > /data/first; echo wrote-$(cat /data/first); fi; exec sleep 3600";
      const manifest = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: keeper}
spec:
  serviceName: keeper
  replicas: 1
  selector: {matchLabels: {app: keeper}}
  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete}
  template:
    metadata: {labels: {app: keeper}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - {name: c, image: ${BUSYBOX}, command: [sh, -c, '${script}'], volumeMounts: [{name: data, mountPath: /data}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Mi}}}
`;
      expect((await k(["apply", "-f", "-"], manifest)).code).toBe(0);
      const status = await k(["rollout", "status", "sts/keeper", "--timeout=90s"]);
      expect(status.code, status.stderr).toBe(0);
      const written = await waitFor("the first pod's log", async () => {
        const out = (await k(["logs", "keeper-0"])).stdout.trim();
        return out.startsWith("wrote-") && out;
      });
      const claim = (
        await api(server, "GET", `/api/v1/namespaces/${ns}/persistentvolumeclaims/data-keeper-0`)
      ).json;
      const pv = (await api(server, "GET", `/api/v1/persistentvolumes/${claim.spec.volumeName}`)).json;
      expect(pv.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values).toEqual([NODE]);
      const dir = pv.spec.hostPath.path as string;
      expect(readFileSync(join(dir, "first"), "utf8").trim()).toBe(written.slice("wrote-".length));
      // the pod is replaced: the new one finds what the first one wrote
      const first = (await api(server, "GET", `/api/v1/namespaces/${ns}/pods/keeper-0`)).json;
      expect((await k(["delete", "pod", "keeper-0"])).code).toBe(0);
      const found = await waitFor(
        "the new pod's log",
        async () => {
          const p = (await api(server, "GET", `/api/v1/namespaces/${ns}/pods/keeper-0`)).json;
          if (p.metadata?.uid === first.metadata.uid || p.status?.phase !== "Running") return false;
          const out = (await k(["logs", "keeper-0"])).stdout.trim();
          return out.startsWith("found-") && out;
        },
        90_000,
      );
      expect(found).toBe(`found-${written.slice("wrote-".length)}`);
      // the set goes with its claim (whenDeleted: Delete) and the provisioned volume
      expect((await k(["delete", "sts", "keeper"])).code).toBe(0);
      await waitFor(
        "the volume deleted",
        async () =>
          (await api(server, "GET", `/api/v1/persistentvolumes/${pv.metadata.name}`)).status === 404,
        60_000,
      );
      rmSync(dir, { recursive: true, force: true });
    },
    240_000,
  );

  it.skipIf(!hasKubectl)(
    "runs a pod with its RuntimeClass's handler, and reports a handler the runtime does not have",
    async () => {
      const k = (args: string[], input?: string) =>
        kubectl(server, ["-n", ns, ...args], input === undefined ? {} : { input });
      const classes = `apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: plain}
handler: runc
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: exotic}
handler: missing
`;
      expect((await k(["apply", "-f", "-"], classes)).code).toBe(0);
      const pod = (name: string, cls: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  runtimeClassName: ${cls}
  terminationGracePeriodSeconds: 0
  containers: [{name: c, image: ${BUSYBOX}, command: [sh, -c, 'echo ran-on-runc; exec sleep 3600']}]
`;
      expect(
        (await k(["apply", "-f", "-"], `${pod("sandboxed", "plain")}---\n${pod("stuck", "exotic")}`)).code,
      ).toBe(0);
      const ready = await k(["wait", "--for=condition=Ready", "pod/sandboxed", "--timeout=60s"]);
      expect(ready.code, ready.stderr).toBe(0);
      const stuck = await waitFor("FailedCreatePodSandBox", async () => {
        const evs = await api(
          server,
          "GET",
          `/api/v1/namespaces/${ns}/events?fieldSelector=involvedObject.name%3Dstuck`,
        );
        return (evs.json.items as any[]).find((e) => e.reason === "FailedCreatePodSandBox");
      });
      expect(stuck.message).toMatch(
        /^Failed to create pod sandbox: .*no runtime for "missing" is configured/,
      );
      expect((await api(server, "GET", `/api/v1/namespaces/${ns}/pods/stuck`)).json.status.phase).toBe(
        "Pending",
      );
      expect((await k(["delete", "pod", "sandboxed", "stuck", "--grace-period=0", "--force"])).code).toBe(0);
      expect((await k(["delete", "runtimeclass", "plain", "exotic"])).code).toBe(0);
    },
    120_000,
  );

  it.skipIf(!hasKubectl)("registers the node's CSINode, owned by the Node, with no drivers", async () => {
    const out = await kubectl(server, ["get", "csinode", NODE]);
    expect(out.stdout, out.stderr).toMatch(new RegExp(`^NAME\\s+DRIVERS\\s+AGE\\n${NODE}\\s+0\\s+\\S+\\n$`));
    const csinode = (await api(server, "GET", `/apis/storage.k8s.io/v1/csinodes/${NODE}`)).json;
    const node = (await api(server, "GET", `/api/v1/nodes/${NODE}`)).json;
    expect(csinode.metadata.ownerReferences).toEqual([
      { apiVersion: "v1", kind: "Node", name: NODE, uid: node.metadata.uid },
    ]);
  });
});
