import { describe, expect, it } from "vitest";
import { computePodStatus, type StatusInput } from "../../../agent/edgelet/pod-status";
import type { ContainerInfo, PodRuntime } from "../../../agent/edgelet/runtime-cache";

const NOW = new Date("2026-01-01T00:00:10Z");
const S = 1e9;

function ctr(over: Partial<ContainerInfo>): ContainerInfo {
  return {
    id: "c1",
    sandboxId: "sb",
    podUid: "u",
    name: "main",
    attempt: 0,
    state: "CONTAINER_RUNNING",
    createdAt: 1,
    startedAt: Date.parse("2026-01-01T00:00:01Z") * 1e6,
    finishedAt: 0,
    exitCode: 0,
    reason: "",
    message: "",
    image: "busybox",
    imageRef: "sha256:abc",
    restartCount: 0,
    hash: "h",
    logPath: "/l",
    ...over,
  };
}

function pod(spec: any, status: any = {}) {
  return {
    metadata: { name: "p", namespace: "ns", uid: "u" },
    spec: { containers: [{ name: "main", image: "busybox" }], ...spec },
    status,
  };
}

function input(p: any, containers: ContainerInfo[], extra: Partial<StatusInput> = {}): StatusInput {
  const runtime: PodRuntime = {
    uid: "u",
    sandboxes: [
      {
        id: "sb",
        uid: "u",
        name: "p",
        namespace: "ns",
        attempt: 0,
        state: "SANDBOX_READY",
        createdAt: 1,
        ip: "10.88.0.5",
      },
    ],
    containers,
  };
  return {
    pod: p,
    runtime,
    sandboxId: "sb",
    podIP: "10.88.0.5",
    hostIP: "192.0.2.2",
    startTime: "2026-01-01T00:00:00Z",
    waiting: new Map(),
    probes: new Map(),
    now: NOW,
    ...extra,
  };
}

const cond = (st: any, type: string) => st.conditions.find((c: any) => c.type === type);

describe("computePodStatus", () => {
  it("is Pending with ContainerCreating before any container exists", () => {
    const st = computePodStatus(input(pod({}), []));
    expect(st.phase).toBe("Pending");
    expect(st.containerStatuses[0].state).toEqual({ waiting: { reason: "ContainerCreating" } });
    expect(cond(st, "PodReadyToStartContainers").status).toBe("True");
    expect(cond(st, "Ready")).toMatchObject({
      status: "False",
      reason: "ContainersNotReady",
      message: "containers with unready status: [main]",
    });
    expect(st.qosClass).toBe("BestEffort");
    expect(st.podIPs).toEqual([{ ip: "10.88.0.5" }]);
  });

  it("is Running and Ready with a running container, with ids and start time", () => {
    const st = computePodStatus(input(pod({}), [ctr({})]));
    expect(st.phase).toBe("Running");
    expect(st.containerStatuses[0]).toMatchObject({
      name: "main",
      ready: true,
      started: true,
      restartCount: 0,
      containerID: "containerd://c1",
      imageID: "sha256:abc",
      state: { running: { startedAt: "2026-01-01T00:00:01Z" } },
    });
    expect(cond(st, "Ready").status).toBe("True");
    expect(cond(st, "ContainersReady").status).toBe("True");
    expect(cond(st, "PodScheduled").status).toBe("True");
  });

  it("reports ephemeral containers beside the app containers, never ready, without changing the phase", () => {
    const debug = { name: "debugger", image: "busybox:1" };
    const p = pod({ ephemeralContainers: [debug, { name: "later", image: "busybox:1" }] });
    const st = computePodStatus(input(p, [ctr({}), ctr({ id: "e1", name: "debugger", image: "busybox:1" })]));
    expect(st.phase).toBe("Running");
    expect(cond(st, "Ready").status).toBe("True");
    expect(st.ephemeralContainerStatuses).toEqual([
      {
        name: "debugger",
        image: "busybox:1",
        imageID: "sha256:abc",
        containerID: "containerd://e1",
        ready: false,
        restartCount: 0,
        lastState: {},
        state: { running: { startedAt: "2026-01-01T00:00:01Z" } },
      },
      {
        name: "later",
        image: "busybox:1",
        imageID: "",
        ready: false,
        restartCount: 0,
        lastState: {},
        state: { waiting: { reason: "ContainerCreating" } },
      },
    ]);
    // an ephemeral container that has exited leaves the pod Running and Ready
    const done = computePodStatus(
      input(p, [ctr({}), ctr({ id: "e1", name: "debugger", state: "CONTAINER_EXITED", exitCode: 3 })]),
    );
    expect(done.phase).toBe("Running");
    expect(cond(done, "Ready").status).toBe("True");
    expect(done.ephemeralContainerStatuses[0].state.terminated).toMatchObject({
      exitCode: 3,
      reason: "Error",
    });
    // none in the spec: no field
    expect(computePodStatus(input(pod({}), [ctr({})])).ephemeralContainerStatuses).toBeUndefined();
  });

  it("keeps a running container unready until its readiness probe passes", () => {
    const st = computePodStatus(
      input(pod({}), [ctr({})], { probes: new Map([["c1", { started: true, ready: false }]]) }),
    );
    expect(st.containerStatuses[0].ready).toBe(false);
    expect(cond(st, "Ready").status).toBe("False");
    expect(st.phase).toBe("Running");
  });

  it("shows CrashLoopBackOff with the last termination and the restart count", () => {
    const exited = ctr({
      id: "c2",
      state: "CONTAINER_EXITED",
      exitCode: 3,
      finishedAt: 5 * S,
      restartCount: 2,
    });
    const st = computePodStatus(
      input(pod({}), [exited], {
        waiting: new Map([["main", { reason: "CrashLoopBackOff", message: "back-off 20s" }]]),
      }),
    );
    expect(st.phase).toBe("Running");
    expect(st.containerStatuses[0]).toMatchObject({
      restartCount: 2,
      state: { waiting: { reason: "CrashLoopBackOff", message: "back-off 20s" } },
      lastState: { terminated: { exitCode: 3, reason: "Error", containerID: "containerd://c2" } },
    });
  });

  it("reports Succeeded, Failed and OOMKilled per restartPolicy", () => {
    const done = ctr({ state: "CONTAINER_EXITED", exitCode: 0 });
    expect(computePodStatus(input(pod({ restartPolicy: "Never" }), [done])).phase).toBe("Succeeded");
    expect(computePodStatus(input(pod({ restartPolicy: "OnFailure" }), [done])).phase).toBe("Succeeded");
    const failed = ctr({ state: "CONTAINER_EXITED", exitCode: 137, reason: "OOMKilled" });
    const st = computePodStatus(input(pod({ restartPolicy: "Never" }), [failed]));
    expect(st.phase).toBe("Failed");
    expect(st.containerStatuses[0].state.terminated.reason).toBe("OOMKilled");
    expect(computePodStatus(input(pod({ restartPolicy: "OnFailure" }), [failed])).phase).toBe("Running");
    const done0 = computePodStatus(input(pod({ restartPolicy: "Never" }), [done]));
    expect(done0.containerStatuses[0].state.terminated.reason).toBe("Completed");
  });

  it("is Pending with PodInitializing while init containers run, then Initialized", () => {
    const spec = { initContainers: [{ name: "init", image: "busybox" }] };
    const running = computePodStatus(input(pod(spec), [ctr({ id: "i1", name: "init" })]));
    expect(running.phase).toBe("Pending");
    expect(running.containerStatuses[0].state.waiting.reason).toBe("PodInitializing");
    expect(cond(running, "Initialized")).toMatchObject({
      status: "False",
      reason: "ContainersNotInitialized",
    });
    const done = computePodStatus(
      input(pod(spec), [ctr({ id: "i1", name: "init", state: "CONTAINER_EXITED", exitCode: 0 })]),
    );
    expect(cond(done, "Initialized").status).toBe("True");
    expect(done.initContainerStatuses[0].state.terminated.reason).toBe("Completed");
    expect(done.containerStatuses[0].state.waiting.reason).toBe("ContainerCreating");
    const failed = computePodStatus(
      input(pod({ ...spec, restartPolicy: "Never" }), [
        ctr({ id: "i1", name: "init", state: "CONTAINER_EXITED", exitCode: 1 }),
      ]),
    );
    expect(failed.phase).toBe("Failed");
  });

  it("shows image pull errors as the waiting reason", () => {
    const st = computePodStatus(
      input(pod({}), [], {
        waiting: new Map([["main", { reason: "ImagePullBackOff", message: 'Back-off pulling image "x"' }]]),
      }),
    );
    expect(st.containerStatuses[0].state.waiting).toEqual({
      reason: "ImagePullBackOff",
      message: 'Back-off pulling image "x"',
    });
    expect(st.phase).toBe("Pending");
  });

  it("fails a pod rejected at admission with its reason", () => {
    const st = computePodStatus(
      input(pod({}), [], {
        rejected: { reason: "OutOfcpu", message: "Node didn't have enough resource: cpu" },
      }),
    );
    expect(st).toMatchObject({ phase: "Failed", reason: "OutOfcpu" });
  });

  it("fails a running pod past its deadline but still reports its containers", () => {
    const st = computePodStatus(
      input(pod({}), [ctr({ state: "CONTAINER_EXITED", exitCode: 137 })], {
        rejected: {
          reason: "DeadlineExceeded",
          message: "Pod was active on the node longer than the specified deadline",
        },
      }),
    );
    expect(st).toMatchObject({ phase: "Failed", reason: "DeadlineExceeded" });
    expect(st.containerStatuses[0].state.terminated.exitCode).toBe(137);
  });

  it("keeps lastTransitionTime of unchanged conditions and conditions it does not own", () => {
    const old = {
      conditions: [
        { type: "Ready", status: "True", lastTransitionTime: "2025-01-01T00:00:00Z" },
        { type: "PodScheduled", status: "True", lastTransitionTime: "2024-01-01T00:00:00Z" },
      ],
    };
    const st = computePodStatus(input(pod({}, old), [ctr({})]));
    expect(cond(st, "Ready").lastTransitionTime).toBe("2025-01-01T00:00:00Z");
    expect(cond(st, "PodScheduled").lastTransitionTime).toBe("2024-01-01T00:00:00Z");
    expect(cond(st, "ContainersReady").lastTransitionTime).toBe("2026-01-01T00:00:10Z");
  });
});
