// edgelet end to end: a real control plane (workerd), `edgelet join` as a
// child process, real containerd. Pods are bound with spec.nodeName so no
// scheduler is involved.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { locateContainerViaCri } from "../../../agent/edgelet/lookup";
import { api, hasKubectl, KUBECTL, kubectl } from "../../helpers/cluster";
import type { OwnServer } from "../../helpers/own-server";
import { openWatch } from "../../helpers/watch-stream";
import {
  available,
  BUSYBOX,
  containerStatus,
  createPod,
  deletePod,
  type EdgeletProcess,
  getPod,
  PRIVATE,
  registryCreds,
  waitFor,
  waitPod,
  withEdgeletNode,
} from "./harness";

const NODE = `edgelet-e2e-${Math.random().toString(36).slice(2, 7)}`;

describe.skipIf(!available)("edgelet against containerd and a real control plane", () => {
  const suite = withEdgeletNode(NODE, "edgelet");
  // set by the suite's beforeAll, read by the tests
  let server: OwnServer;
  let edgelet: EdgeletProcess;
  let ns: string;
  const { cri, root } = suite;
  beforeAll(() => {
    ({ server, edgelet, ns } = suite);
  });

  it("registers its Node with capacity, addresses, nodeInfo, podCIDR and a Lease", async () => {
    const node = (await api(server, "GET", `/api/v1/nodes/${NODE}`)).json;
    expect(node.metadata.labels["kubernetes.io/hostname"]).toBe(NODE);
    expect(node.metadata.labels["kubernetes.io/os"]).toBe("linux");
    expect(node.status.capacity.cpu).toBe(String(cpus().length));
    expect(node.status.capacity.pods).toBe("110");
    expect(node.status.allocatable.memory).toMatch(/^\d+Ki$/);
    expect(node.status.nodeInfo.containerRuntimeVersion).toMatch(/^containerd:\/\/1\./);
    expect(node.status.addresses.map((a: any) => a.type)).toEqual(["InternalIP", "Hostname"]);
    expect(node.spec.podCIDR).toBe("10.88.0.0/16");
    const lease = await api(
      server,
      "GET",
      `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${NODE}`,
    );
    expect(lease.status).toBe(200);
    expect(lease.json.spec.holderIdentity).toBe(NODE);
    expect(lease.json.spec.leaseDurationSeconds).toBe(40);
  });

  it("runs an httpd pod to Running with a pod IP reachable from the host, then deletes it completely", async () => {
    const name = "web";
    const watch = await openWatch(
      server,
      `/api/v1/namespaces/${ns}/pods?watch=1&fieldSelector=metadata.name%3D${name}`,
    );
    const t0 = Date.now();
    const created = await createPod(server, ns, {
      metadata: { name },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 2,
        containers: [
          {
            name: "httpd",
            image: BUSYBOX,
            command: [
              "sh",
              "-c",
              "mkdir -p /www && echo hello-from-edgelet > /www/index.html && exec httpd -f -p 8080 -h /www",
            ],
          },
        ],
      },
    });
    let running: any;
    await waitFor(
      "Running in the watch",
      async () => {
        running = watch.events
          .map((e) => e.object)
          .find((o) => o?.status?.phase === "Running" && o.status.podIP);
        return running;
      },
      30_000,
      5,
    );
    const startMs = Date.now() - t0;
    watch.close();
    console.log(`edgelet pod start (API create -> Running observed by a watch): ${startMs} ms`);
    expect(running.status.podIP).toMatch(/^10\.88\./);
    expect(running.status.hostIP).toBeTruthy();
    expect(running.status.qosClass).toBe("BestEffort");
    const cs = containerStatus(running, "httpd");
    expect(cs.containerID).toMatch(/^containerd:\/\//);
    expect(cs.restartCount).toBe(0);
    const body = await waitFor(
      "HTTP answer",
      async () => {
        const r = await fetch(`http://${running.status.podIP}:8080/`, { signal: AbortSignal.timeout(1000) });
        return r.status === 200 ? await r.text() : undefined;
      },
      10_000,
    );
    expect(body).toBe("hello-from-edgelet\n");
    // labels as upstream's kubelet sets them
    const sandboxes = await cri.listPodSandbox({
      label_selector: { "io.kubernetes.pod.uid": created.metadata.uid },
    });
    expect(sandboxes).toHaveLength(1);
    expect(sandboxes[0]?.labels["io.kubernetes.pod.name"]).toBe(name);
    const containers = await cri.listContainers({
      label_selector: { "io.kubernetes.pod.uid": created.metadata.uid },
    });
    expect(containers[0]?.labels["io.kubernetes.container.name"]).toBe("httpd");
    expect(containers[0]?.annotations["io.kubernetes.container.restartCount"]).toBe("0");
    // the lookup a streaming tunnel uses: container id and log path by (namespace, pod, container)
    const where = await locateContainerViaCri(cri, ns, name, "httpd");
    expect(where?.containerId).toBe(cs.containerID.replace("containerd://", ""));
    expect(where?.podUid).toBe(created.metadata.uid);
    expect(where?.logPath).toBe(
      join(root, "logs", `${ns}_${name}_${created.metadata.uid}`, "httpd", "0.log"),
    );
    expect(existsSync(where?.logPath ?? "")).toBe(true);
    const ready = await waitPod(server, ns, name, "Ready", (p) =>
      p.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True"),
    );
    expect(containerStatus(ready, "httpd").ready).toBe(true);

    await deletePod(server, ns, name, 30_000);
    const left = await cri.listPodSandbox({
      label_selector: { "io.kubernetes.pod.uid": created.metadata.uid },
    });
    expect(left).toHaveLength(0);
    expect(existsSync(join(root, "pods", created.metadata.uid))).toBe(false);
  });

  it("pulls a private image with imagePullSecrets, and reports ErrImagePull/ImagePullBackOff without them", async () => {
    const { username, password } = registryCreds();
    const auth = Buffer.from(`${username}:${password}`).toString("base64");
    const dockerconfig = { auths: { "127.0.0.1:5001": { username, password, auth } } };
    const s = await api(server, "POST", `/api/v1/namespaces/${ns}/secrets`, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "regcred" },
      type: "kubernetes.io/dockerconfigjson",
      data: { ".dockerconfigjson": Buffer.from(JSON.stringify(dockerconfig)).toString("base64") },
    });
    expect(s.status).toBe(201);
    const spec = (secret: boolean) => ({
      nodeName: NODE,
      terminationGracePeriodSeconds: 0,
      ...(secret ? { imagePullSecrets: [{ name: "regcred" }] } : {}),
      containers: [{ name: "main", image: PRIVATE, imagePullPolicy: "Always", command: ["sleep", "3600"] }],
    });
    await createPod(server, ns, { metadata: { name: "private-ok" }, spec: spec(true) });
    await createPod(server, ns, { metadata: { name: "private-denied" }, spec: spec(false) });
    const ok = await waitPod(server, ns, "private-ok", "Running", (p) => p.status?.phase === "Running");
    expect(containerStatus(ok, "main").state.running).toBeTruthy();
    const reasons = new Set<string>();
    await waitPod(server, ns, "private-denied", "ImagePullBackOff", (p) => {
      const r = containerStatus(p, "main")?.state?.waiting?.reason;
      if (r) reasons.add(r);
      return r === "ImagePullBackOff";
    });
    expect(reasons.has("ImagePullBackOff")).toBe(true);
    const denied = await getPod(server, ns, "private-denied");
    expect(denied.status.phase).toBe("Pending");
    expect(containerStatus(denied, "main").state.waiting.message).toContain(PRIVATE);
    await Promise.all([deletePod(server, ns, "private-ok"), deletePod(server, ns, "private-denied")]);
  });

  it("runs init containers in order, mounts configMap, secret and emptyDir, and sets env", async () => {
    await api(server, "POST", `/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "cfg" },
      data: { "greeting.txt": "hi from configmap", COLOR: "blue" },
    });
    await api(server, "POST", `/api/v1/namespaces/${ns}/secrets`, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "sec" },
      data: { password: Buffer.from("s3cret").toString("base64") },
    });
    const pod = await createPod(server, ns, {
      metadata: { name: "init-vols", labels: { app: "iv" } },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 0,
        volumes: [
          { name: "work", emptyDir: {} },
          {
            name: "cfg",
            configMap: { name: "cfg", items: [{ key: "greeting.txt", path: "g/greeting.txt" }] },
          },
          { name: "sec", secret: { secretName: "sec", defaultMode: 0o400 } },
        ],
        initContainers: [
          {
            name: "first",
            image: BUSYBOX,
            command: ["sh", "-c", "echo first >> /work/order"],
            volumeMounts: [{ name: "work", mountPath: "/work" }],
          },
          {
            name: "second",
            image: BUSYBOX,
            command: ["sh", "-c", "sleep 0.3; echo second >> /work/order"],
            volumeMounts: [{ name: "work", mountPath: "/work" }],
          },
        ],
        containers: [
          {
            name: "main",
            image: BUSYBOX,
            command: [
              "sh",
              "-c",
              'echo "$POD_NAME|$POD_NS|$COLOR|$PASSWORD|$MY_IP|$GREETING|$(cat /cfg/g/greeting.txt)|$(cat /sec/password)|$(stat -L -c %a /sec/password)" > /work/report; touch /cfg/x 2>/dev/null && echo writable >> /work/report; echo main >> /work/order; exec sleep 3600',
            ],
            env: [
              { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
              { name: "POD_NS", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
              { name: "COLOR", valueFrom: { configMapKeyRef: { name: "cfg", key: "COLOR" } } },
              { name: "PASSWORD", valueFrom: { secretKeyRef: { name: "sec", key: "password" } } },
              { name: "MY_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
              { name: "GREETING", value: "hello $(POD_NAME)" },
            ],
            volumeMounts: [
              { name: "work", mountPath: "/work" },
              { name: "cfg", mountPath: "/cfg" },
              { name: "sec", mountPath: "/sec" },
            ],
          },
        ],
      },
    });
    const running = await waitPod(server, ns, "init-vols", "Running", (p) => p.status?.phase === "Running");
    expect(running.status.initContainerStatuses.map((s: any) => s.state.terminated?.reason)).toEqual([
      "Completed",
      "Completed",
    ]);
    expect(running.status.conditions.find((c: any) => c.type === "Initialized").status).toBe("True");
    const work = join(root, "pods", pod.metadata.uid, "volumes", "kubernetes.io~empty-dir", "work");
    const report = await waitFor(
      "report",
      async () => existsSync(join(work, "report")) && readFileSync(join(work, "report"), "utf8"),
    );
    expect(report.trim()).toBe(
      `init-vols|${ns}|blue|s3cret|${running.status.podIP}|hello init-vols|hi from configmap|s3cret|400`,
    );
    expect(readFileSync(join(work, "order"), "utf8")).toBe("first\nsecond\nmain\n");
    // the service account volume projects kube-root-ca.crt (no longer optional): the cluster CA
    const access = running.spec.volumes.find((v: any) => v.name.startsWith("kube-api-access-"));
    const projected = join(root, "pods", pod.metadata.uid, "volumes", "kubernetes.io~projected", access.name);
    expect(readFileSync(join(projected, "ca.crt"), "utf8")).toBe(server.caCert);
    expect(readFileSync(join(projected, "namespace"), "utf8")).toBe(ns);
    await deletePod(server, ns, "init-vols");
  });

  it("restarts a container whose liveness probe fails", async () => {
    await createPod(server, ns, {
      metadata: { name: "liveness" },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: "main",
            image: BUSYBOX,
            command: ["sleep", "3600"],
            livenessProbe: {
              exec: { command: ["cat", "/no/such/file"] },
              periodSeconds: 1,
              failureThreshold: 1,
              initialDelaySeconds: 1,
            },
          },
        ],
      },
    });
    const restarted = await waitPod(
      server,
      ns,
      "liveness",
      "restartCount >= 1",
      (p) => (containerStatus(p, "main")?.restartCount ?? 0) >= 1,
      40_000,
    );
    expect(containerStatus(restarted, "main").lastState.terminated).toBeTruthy();
    const events = await api(server, "GET", `/api/v1/namespaces/${ns}/events`);
    expect(
      events.json.items.some((e: any) => e.reason === "Unhealthy" && e.involvedObject.name === "liveness"),
    ).toBe(true);
    await deletePod(server, ns, "liveness");
  });

  it("restarts a container killed out of band, runs postStart and preStop hooks", async () => {
    const hostDir = join(root, "hook-out");
    const pod = await createPod(server, ns, {
      metadata: { name: "hooks" },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 5,
        volumes: [{ name: "out", hostPath: { path: hostDir, type: "DirectoryOrCreate" } }],
        containers: [
          {
            name: "main",
            image: BUSYBOX,
            command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"],
            volumeMounts: [{ name: "out", mountPath: "/out" }],
            lifecycle: {
              postStart: { exec: { command: ["sh", "-c", "echo started >> /out/poststart"] } },
              preStop: { exec: { command: ["sh", "-c", "echo stopping > /out/prestop"] } },
            },
          },
        ],
      },
    });
    const running = await waitPod(server, ns, "hooks", "Running", (p) => p.status?.phase === "Running");
    expect(readFileSync(join(hostDir, "poststart"), "utf8")).toBe("started\n");
    const id = containerStatus(running, "main").containerID.replace("containerd://", "");
    await cri.stopContainer(id, 0); // out of band: edgelet notices by relisting
    const again = await waitPod(
      server,
      ns,
      "hooks",
      "restarted",
      (p) => containerStatus(p, "main")?.restartCount === 1 && !!containerStatus(p, "main")?.state?.running,
      20_000,
    );
    expect(containerStatus(again, "main").lastState.terminated.exitCode).toBe(137);
    expect(readFileSync(join(hostDir, "poststart"), "utf8")).toBe("started\nstarted\n");
    await deletePod(server, ns, "hooks");
    expect(readFileSync(join(hostDir, "prestop"), "utf8")).toBe("stopping\n");
    expect(
      await cri.listPodSandbox({ label_selector: { "io.kubernetes.pod.uid": pod.metadata.uid } }),
    ).toHaveLength(0);
  });

  it("backs off a crashing container (CrashLoopBackOff) and keeps its termination message", async () => {
    await createPod(server, ns, {
      metadata: { name: "crasher" },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 0,
        containers: [
          {
            name: "main",
            image: BUSYBOX,
            command: ["sh", "-c", "echo goodbye > /dev/termination-log; exit 3"],
          },
        ],
      },
    });
    const p = await waitPod(
      server,
      ns,
      "crasher",
      "CrashLoopBackOff",
      (x) => containerStatus(x, "main")?.state?.waiting?.reason === "CrashLoopBackOff",
      30_000,
    );
    const cs = containerStatus(p, "main");
    expect(cs.restartCount).toBeGreaterThanOrEqual(1);
    expect(cs.lastState.terminated).toMatchObject({ exitCode: 3, reason: "Error", message: "goodbye\n" });
    expect(cs.state.waiting.message).toMatch(/^back-off \d+s restarting failed container=main pod=crasher_/);
    await deletePod(server, ns, "crasher");
  });

  it("fails a pod past its activeDeadlineSeconds and stops its containers", async () => {
    const pod = await createPod(server, ns, {
      metadata: { name: "deadline" },
      spec: {
        nodeName: NODE,
        activeDeadlineSeconds: 2,
        terminationGracePeriodSeconds: 0,
        containers: [{ name: "main", image: BUSYBOX, command: ["sleep", "3600"] }],
      },
    });
    const p = await waitPod(server, ns, "deadline", "Failed", (x) => x.status?.phase === "Failed", 20_000);
    expect(p.status.reason).toBe("DeadlineExceeded");
    await waitFor(
      "container stopped",
      async () => {
        const cs = await cri.listContainers({
          label_selector: { "io.kubernetes.pod.uid": pod.metadata.uid },
        });
        return cs.length > 0 && cs.every((c) => c.state === "CONTAINER_EXITED");
      },
      10_000,
    );
    await deletePod(server, ns, "deadline");
  });

  it("puts the pod cgroup under its QoS parent with pod-level limits", async () => {
    const pod = await createPod(server, ns, {
      metadata: { name: "limited" },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 0,
        containers: [
          {
            name: "main",
            image: BUSYBOX,
            command: ["sleep", "3600"],
            resources: { requests: { cpu: "100m", memory: "32Mi" }, limits: { cpu: "500m", memory: "64Mi" } },
          },
        ],
      },
    });
    const p = await waitPod(server, ns, "limited", "Running", (x) => x.status?.phase === "Running");
    expect(p.status.qosClass).toBe("Burstable");
    const v1 = existsSync("/sys/fs/cgroup/memory/edgeplane");
    if (!v1) {
      console.warn("cgroup v1 hierarchies not found: pod cgroup limits not checked");
    } else {
      const dir = (ctl: string) => `/sys/fs/cgroup/${ctl}/edgeplane/burstable/pod${pod.metadata.uid}`;
      expect(readFileSync(`${dir("memory")}/memory.limit_in_bytes`, "utf8").trim()).toBe(
        String(64 * 1024 * 1024),
      );
      expect(readFileSync(`${dir("cpu")}/cpu.cfs_quota_us`, "utf8").trim()).toBe("50000");
      expect(readFileSync(`${dir("cpu")}/cpu.shares`, "utf8").trim()).toBe("102");
    }
    await deletePod(server, ns, "limited");
    if (v1)
      await waitFor(
        "pod cgroup removed",
        async () => !existsSync(`/sys/fs/cgroup/memory/edgeplane/burstable/pod${pod.metadata.uid}`),
        15_000,
      );
  });

  it("rejects a pod that does not fit the node (OutOfcpu)", async () => {
    await createPod(server, ns, {
      metadata: { name: "too-big" },
      spec: {
        nodeName: NODE,
        containers: [
          { name: "main", image: BUSYBOX, command: ["sleep", "1"], resources: { requests: { cpu: "1000" } } },
        ],
      },
    });
    const p = await waitPod(server, ns, "too-big", "Failed", (x) => x.status?.phase === "Failed");
    expect(p.status.reason).toBe("OutOfcpu");
    await deletePod(server, ns, "too-big");
  });

  it.skipIf(!hasKubectl)(
    "kubectl debug runs an ephemeral container in the target's process namespace, once, and attaches to it",
    async () => {
      await createPod(server, ns, {
        metadata: { name: "debuggee" },
        spec: {
          nodeName: NODE,
          terminationGracePeriodSeconds: 0,
          containers: [{ name: "app", image: BUSYBOX, command: ["sleep", "3601"] }],
        },
      });
      await waitPod(server, ns, "debuggee", "Running", (p) => p.status?.phase === "Running");
      // not interactive: kubectl adds the container and returns; its output is in its log
      const added = await kubectl(server, [
        "debug",
        "-n",
        ns,
        "debuggee",
        `--image=${BUSYBOX}`,
        "--target=app",
        "--container=peek",
        "--",
        "ps",
        "-o",
        "pid,args",
      ]);
      expect(added.code, added.stderr).toBe(0);
      const done = await waitPod(
        server,
        ns,
        "debuggee",
        "peek terminated",
        (p) => p.status?.ephemeralContainerStatuses?.[0]?.state?.terminated,
      );
      expect(done.status.ephemeralContainerStatuses[0]).toMatchObject({
        name: "peek",
        ready: false,
        state: { terminated: { exitCode: 0, reason: "Completed" } },
      });
      expect(done.status.phase).toBe("Running");
      expect(done.status.conditions.find((c: any) => c.type === "Ready").status).toBe("True");
      // the target's processes are visible: it shares the app container's PID namespace
      const logs = await kubectl(server, ["logs", "-n", ns, "debuggee", "-c", "peek"]);
      expect(logs.code, logs.stderr).toBe(0);
      expect(logs.stdout).toMatch(/^\s*1\s+sleep 3601$/m);
      // interactive, as a user types: kubectl waits for it to run and attaches; the shell answers
      // each line. (stdin stays open until the answer: an attach whose stdin ends is closed
      // by containerd at once, before what the shell writes after can reach it, as upstream.)
      const shell = spawn(KUBECTL, [
        "--kubeconfig",
        server.kubeconfigPath,
        ...["debug", "-n", ns, "debuggee", "-i", `--image=${BUSYBOX}`, "--container=shell", "--", "sh"],
      ]);
      let out = "";
      shell.stdout.on("data", (d) => (out += d));
      const exited = new Promise<number | null>((r) => shell.on("close", r));
      shell.stdin.write("echo hello-from-$(hostname)\n");
      await waitFor("the shell's answer", async () => out.includes("hello-from-debuggee"), 30_000, 100).catch(
        (e) => {
          shell.kill();
          throw e;
        },
      );
      shell.stdin.end("exit 7\n");
      expect(await exited).toBe(0);
      const after = await waitPod(
        server,
        ns,
        "debuggee",
        "shell terminated",
        (p) => p.status?.ephemeralContainerStatuses?.[1]?.state?.terminated,
      );
      expect(after.status.ephemeralContainerStatuses[1].state.terminated.exitCode).toBe(7);
      // never restarted: still one container each after further syncs
      await new Promise((r) => setTimeout(r, 2500));
      const uid = after.metadata.uid;
      for (const name of ["peek", "shell"]) {
        const list = await cri.listContainers({
          label_selector: { "io.kubernetes.pod.uid": uid, "io.kubernetes.container.name": name },
        });
        expect(list, name).toHaveLength(1);
      }
      const app = containerStatus(await getPod(server, ns, "debuggee"), "app");
      expect(app.restartCount).toBe(0);
      await deletePod(server, ns, "debuggee");
    },
    90_000,
  );

  it("adopts running pods after a restart instead of starting them again", async () => {
    const pod = await createPod(server, ns, {
      metadata: { name: "survivor" },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 0,
        containers: [{ name: "main", image: BUSYBOX, command: ["sleep", "3600"] }],
      },
    });
    const orphan = await createPod(server, ns, {
      metadata: { name: "orphan" },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 0,
        containers: [{ name: "main", image: BUSYBOX, command: ["sleep", "3600"] }],
      },
    });
    const before = await waitPod(server, ns, "survivor", "Running", (p) => p.status?.phase === "Running");
    await waitPod(server, ns, "orphan", "Running", (p) => p.status?.phase === "Running");
    const id = containerStatus(before, "main").containerID;
    await edgelet.stop();
    // deleted for good while edgelet is away: its sandbox is an orphan edgelet must clean up
    const forced = await api(server, "DELETE", `/api/v1/namespaces/${ns}/pods/orphan`, {
      gracePeriodSeconds: 0,
    });
    expect(forced.status).toBe(200);
    expect(await getPod(server, ns, "orphan")).toBeUndefined();
    edgelet.start();
    // after the restart the node reports again and the pod is re-synced
    await waitFor(
      "edgelet up again",
      async () => edgelet.output.split("RUNTIME: containerd").length > 2,
      30_000,
      100,
    );
    await new Promise((r) => setTimeout(r, 3000));
    const after = await getPod(server, ns, "survivor");
    expect(after.status.phase).toBe("Running");
    expect(containerStatus(after, "main").containerID).toBe(id);
    expect(containerStatus(after, "main").restartCount).toBe(0);
    const sandboxes = await cri.listPodSandbox({
      label_selector: { "io.kubernetes.pod.uid": pod.metadata.uid },
    });
    expect(sandboxes).toHaveLength(1);
    await waitFor(
      "orphan sandbox removed",
      async () =>
        (await cri.listPodSandbox({ label_selector: { "io.kubernetes.pod.uid": orphan.metadata.uid } }))
          .length === 0,
      20_000,
    );
    // and still manages it: deletion goes through
    await deletePod(server, ns, "survivor");
    // grace 0: the API object may go first; the sandbox follows within a relist or two
    await waitFor(
      "sandbox removed",
      async () =>
        (await cri.listPodSandbox({ label_selector: { "io.kubernetes.pod.uid": pod.metadata.uid } }))
          .length === 0,
      10_000,
    );
  });
});
