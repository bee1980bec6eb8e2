// A pod's flow trace through a real node (docs/trace.md): `kubectl run` on an edgelet over
// the machine's containerd gives every FLOW.md stage from authentication to Ready, in order,
// not overlapping, consistent with the pod's own timestamps, and the CLI prints it; a pod
// whose pull secret is missing shows the failing image pull with the registry's answer; a
// crash-looping container shows one span per restart with its exit and back-off.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { api, hasKubectl, kubectl } from "../../helpers/cluster";
import {
  available,
  BUSYBOX,
  createPod,
  getPod,
  PRIVATE,
  REPO,
  waitFor,
  waitPod,
  withEdgeletNode,
} from "./harness";

const run = promisify(execFile);
const NODE = `trace-${process.pid}-${Math.random().toString(36).slice(2, 6)}`;

const traceOf = async (s: { server: any }, ns: string, name: string) =>
  (await api(s.server, "GET", `/apis/trace.edgeplane.dev/v1alpha1/namespaces/${ns}/podtraces/${name}`)).json;

describe.skipIf(!available || !hasKubectl)("flow trace on a containerd node", () => {
  const s = withEdgeletNode(NODE, "trace");

  it("kubectl run: every stage from authentication to Ready, in order, matching the pod", async () => {
    const r = await kubectl(s.server, [
      "run",
      "traced",
      "-n",
      s.ns,
      `--image=${BUSYBOX}`,
      "--restart=Never",
      "--",
      "sleep",
      "3600",
    ]);
    expect(r.stderr).toBe("");
    const pod = await waitPod(s.server, s.ns, "traced", "Ready", (p) =>
      p.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True"),
    );
    const t = await waitFor("the trace reaches Ready", async () => {
      const x = await traceOf(s, s.ns, "traced");
      return x?.stages?.some((st: any) => st.step === "6.2") && x;
    });
    const stages: any[] = t.stages;
    const steps = stages.map((st) => st.step);
    const wanted = [
      "1.3",
      "2.1",
      "2.2",
      "2.3",
      "2.4",
      "3.1",
      "5.1",
      "5.2",
      "5.3",
      "6.1",
      "6.3",
      "6.5",
      "6.6",
      "6.7",
      "6.4",
      "7.1",
      "8.1",
      "9.2",
      "9.3",
      "9.5",
      "6.2",
    ];
    expect(steps).toEqual(wanted);
    expect(stages.every((st) => st.state === "done")).toBe(true);
    let last = 0;
    for (const st of stages) {
      const start = Date.parse(st.start);
      const end = Date.parse(st.end);
      expect(start, `${st.step} ${st.name} starts after the stage before ends`).toBeGreaterThanOrEqual(last);
      expect(end).toBeGreaterThanOrEqual(start);
      last = end;
    }
    const by = (step: string) => stages.find((st) => st.step === step);
    expect(by("1.3").detail.userAgent).toMatch(/^kubectl\//);
    expect(by("2.1").detail.user).toBeTruthy();
    expect(by("5.1").detail.node).toBe(NODE);
    expect(by("6.1").detail.afterBindingMs).toBeGreaterThanOrEqual(0);
    expect(by("8.1").detail.ip).toBe(pod.status.podIP);
    expect(by("9.2").detail.image).toBe(BUSYBOX);
    expect(typeof by("9.2").detail.cached).toBe("boolean");
    // the pod's own timestamps (whole seconds) agree with the trace
    const second = (ms: number) => Math.floor(ms / 1000) * 1000;
    const created = Date.parse(pod.metadata.creationTimestamp);
    expect(created).toBeGreaterThanOrEqual(second(Date.parse(by("2.1").start)));
    expect(created).toBeLessThanOrEqual(Date.parse(by("2.4").end));
    const scheduled = pod.status.conditions.find((c: any) => c.type === "PodScheduled");
    expect(Date.parse(scheduled.lastTransitionTime)).toBe(second(Date.parse(by("5.3").end)));
    expect(Date.parse(pod.status.startTime)).toBeGreaterThanOrEqual(second(Date.parse(by("6.1").start)));
    expect(Date.parse(pod.status.startTime)).toBeLessThanOrEqual(Date.parse(by("6.5").end));
    const ready = pod.status.conditions.find((c: any) => c.type === "Ready");
    expect(Date.parse(ready.lastTransitionTime)).toBeGreaterThanOrEqual(second(Date.parse(by("9.5").end)));
    expect(Date.parse(ready.lastTransitionTime)).toBeLessThanOrEqual(Date.parse(by("6.2").end));
    const started = pod.status.containerStatuses[0].state.running.startedAt;
    expect(Date.parse(started)).toBeGreaterThanOrEqual(second(Date.parse(by("9.3").end)));

    const cli = await run(process.execPath, ["cli/bin/edgeplane.mjs", "trace", "pod/traced", "-n", s.ns], {
      cwd: REPO,
      env: { ...process.env, KUBECONFIG: s.server.kubeconfigPath, NO_COLOR: "1" },
    });
    for (const line of [
      "2.1 authentication",
      "5.1 scheduling",
      "7.1 sandbox",
      "8.1 network (CNI)",
      "9.2 image pull traced",
      "6.2 ready",
    ])
      expect(cli.stdout).toContain(line);
    expect(cli.stdout).toMatch(/◀ slowest/);
  });

  it("a missing pull secret: the image pull fails with the registry's answer", async () => {
    await createPod(s.server, s.ns, {
      metadata: { name: "nosecret" },
      spec: {
        nodeName: NODE,
        imagePullSecrets: [{ name: "does-not-exist" }],
        containers: [{ name: "c", image: PRIVATE, imagePullPolicy: "Always", command: ["sleep", "3600"] }],
      },
    });
    const t = await waitFor("the failed pull in the trace", async () => {
      const x = await traceOf(s, s.ns, "nosecret");
      return x?.stages?.some((st: any) => st.step === "9.2" && st.state === "failed") && x;
    });
    const pull = t.stages.find((st: any) => st.step === "9.2");
    expect(pull.name).toBe("image pull c");
    expect(pull.reason).toMatch(/^ErrImagePull: /);
    expect(pull.reason).toContain("127.0.0.1:5001");
    expect(pull.reason).toMatch(/401|unauthorized/i);
    const secrets = t.stages.find((st: any) => st.step === "6.7");
    expect(secrets.detail).toMatchObject({ secrets: ["does-not-exist"], missing: ["does-not-exist"] });
    expect(t.stages.some((st: any) => st.step === "6.2")).toBe(false);
    const cli = await run(process.execPath, ["cli/bin/edgeplane.mjs", "trace", "pod/nosecret", "-n", s.ns], {
      cwd: REPO,
      env: { ...process.env, KUBECONFIG: s.server.kubeconfigPath, NO_COLOR: "1" },
    });
    expect(cli.stdout).toMatch(/9\.2 image pull c .*failed: ErrImagePull: .*127\.0\.0\.1:5001/);
  });

  it("a crash-looping container: one span per restart, after the first start, with its exit and back-off", async () => {
    await createPod(s.server, s.ns, {
      metadata: { name: "crashy" },
      spec: {
        nodeName: NODE,
        restartPolicy: "Always",
        containers: [{ name: "c", image: BUSYBOX, command: ["sh", "-c", "exit 1"] }],
      },
    });
    // restart 1 comes at once, restart 2 after the kubelet's first back-off (10 s)
    const t = await waitFor(
      "two restarts in the trace",
      async () => {
        const x = await traceOf(s, s.ns, "crashy");
        return (
          (x?.stages ?? []).filter((st: any) => st.step === "9.3" && st.detail?.restart).length >= 2 && x
        );
      },
      60_000,
    );
    const stages: any[] = t.stages;
    const restarts = stages.filter((st) => st.step === "9.3" && st.detail?.restart);
    expect(restarts.map((st) => st.name).slice(0, 2)).toEqual(["start c (restart 1)", "start c (restart 2)"]);
    // the first start is traced once (create, start), the restarts after it, in order
    expect(stages.filter((st) => st.name === "create c")).toHaveLength(1);
    const firstStart = stages.findIndex((st) => st.name === "start c");
    expect(firstStart).toBeGreaterThan(-1);
    expect(stages.indexOf(restarts[0])).toBeGreaterThan(firstStart);
    let last = Date.parse(stages[firstStart].end);
    for (const r of restarts) {
      expect(r.component).toBe("edgelet");
      expect(r.state).toBe("done");
      expect(Date.parse(r.start)).toBeGreaterThanOrEqual(last);
      expect(Date.parse(r.end)).toBeGreaterThanOrEqual(Date.parse(r.start));
      last = Date.parse(r.end);
      expect(r.detail).toMatchObject({ container: "c", cause: "exited", exitCode: 1, reason: "Error" });
      expect(r.detail.previousContainerId).toMatch(/^[0-9a-f]{13}$/);
    }
    expect(restarts[0].detail.backOffMs).toBe(0);
    expect(restarts[1].detail.backOffMs).toBe(10_000);
    // the second waited its back-off: the span runs from the previous exit to the new start
    expect(restarts[1].durationMs).toBeGreaterThanOrEqual(9_000);
    const pod = await getPod(s.server, s.ns, "crashy");
    expect(pod.status.containerStatuses[0].restartCount).toBeGreaterThanOrEqual(2);

    const cli = await run(process.execPath, ["cli/bin/edgeplane.mjs", "trace", "pod/crashy", "-n", s.ns], {
      cwd: REPO,
      env: { ...process.env, KUBECONFIG: s.server.kubeconfigPath, NO_COLOR: "1" },
    });
    expect(cli.stdout).toMatch(/9\.3 start c \(restart 1\) .*exit 1 \(Error\), no back-off/);
    expect(cli.stdout).toMatch(/9\.3 start c \(restart 2\) .*exit 1 \(Error\), back-off 10\.00s/);
    expect(cli.stdout).toMatch(/^restarts: [2-9] in the trace$/m);
  }, 90_000);
});
