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
});
