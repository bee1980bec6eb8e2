// The dashboard's flow logic (the browser script's FLOW part, run here as the browser runs
// it): which state, timing and reason each FLOW.md box gets from a pod, its events and,
// when the server has one, its trace.
import { describe, expect, it } from "vitest";
import { FLOW_SCRIPT } from "../../workers/dashboard/client/index";

const flow = new Function(
  `${FLOW_SCRIPT}; return { deriveFlow, flowStages, flowStageOf, formatDuration, stageLabel };`,
)();

const T0 = "2026-12-05T10:00:00Z";
const at = (s: number) => new Date(Date.parse(T0) + s * 1000).toISOString().replace(".000Z", "Z");

function pod(extra: { spec?: any; status?: any; metadata?: any } = {}) {
  return {
    metadata: { name: "web", namespace: "a", uid: "u1", creationTimestamp: T0, ...extra.metadata },
    spec: { containers: [{ name: "web", image: "busybox" }], ...extra.spec },
    status: { phase: "Pending", ...extra.status },
  };
}

const states = (stages: any[]) => Object.fromEntries(stages.map((s) => [s.id, s.state]));
const byId = (stages: any[], id: string) => stages.find((s) => s.id === id);

describe("dashboard flow stages", () => {
  it("before the pod exists every stage is pending, none waiting", () => {
    const s = flow.flowStages(null, [], null);
    expect(s).toHaveLength(13);
    expect(new Set(s.map((x: any) => x.state))).toEqual(new Set(["pending"]));
  });

  it("an unschedulable pod fails at the scheduler with its reasons and goes no further", () => {
    const p = pod({
      status: {
        conditions: [
          {
            type: "PodScheduled",
            status: "False",
            reason: "Unschedulable",
            message: "0/3 nodes are available: 3 Insufficient cpu.",
            lastTransitionTime: at(1),
          },
        ],
      },
    });
    const s = flow.flowStages(p, [], null);
    expect(states(s)).toMatchObject({
      stored: "done",
      controller: "skipped",
      scheduler: "failed",
      agent: "pending",
    });
    expect(byId(s, "scheduler").reason).toBe("Unschedulable");
    expect(byId(s, "scheduler").detail).toContain("Insufficient cpu");
  });

  it("a pod waiting on a pull shows the image stage failed with the registry's answer", () => {
    const p = pod({
      spec: { nodeName: "n1", containers: [{ name: "web", image: "127.0.0.1:5001/private/busybox:1" }] },
      status: {
        startTime: at(1),
        conditions: [
          { type: "PodScheduled", status: "True", lastTransitionTime: at(1) },
          { type: "PodReadyToStartContainers", status: "True", lastTransitionTime: at(2) },
        ],
        podIP: "10.244.0.5",
        containerStatuses: [
          {
            name: "web",
            state: { waiting: { reason: "ErrImagePull", message: "401 Unauthorized from 127.0.0.1:5001" } },
          },
        ],
      },
    });
    const events = [{ reason: "Pulling", message: "Pulling image", lastTimestamp: at(2), metadata: {} }];
    const s = flow.flowStages(p, events, null);
    expect(states(s)).toMatchObject({
      scheduler: "done",
      agent: "done",
      sandbox: "done",
      cni: "done",
      image: "failed",
    });
    expect(byId(s, "image").reason).toBe("ErrImagePull");
    expect(byId(s, "image").detail).toContain("401");
    expect(byId(s, "containers").state).toBe("pending");
    expect(byId(s, "cni").detail).toContain("10.244.0.5");
  });

  it("a ReplicaSet's running, Ready pod is done end to end, with the owner named and durations", () => {
    const p = pod({
      metadata: { ownerReferences: [{ kind: "ReplicaSet", name: "web-5d9", controller: true }] },
      spec: { nodeName: "n1" },
      status: {
        phase: "Running",
        startTime: at(2),
        podIP: "10.244.0.6",
        conditions: [
          { type: "PodScheduled", status: "True", lastTransitionTime: at(1) },
          { type: "PodReadyToStartContainers", status: "True", lastTransitionTime: at(3) },
          { type: "Initialized", status: "True", lastTransitionTime: at(3) },
          { type: "Ready", status: "True", lastTransitionTime: at(6) },
        ],
        containerStatuses: [
          { name: "web", imageID: "sha256:1", ready: true, state: { running: { startedAt: at(5) } } },
        ],
      },
    });
    const events = [
      { reason: "Pulling", lastTimestamp: at(3), metadata: {} },
      { reason: "Pulled", message: "Successfully pulled", lastTimestamp: at(4), metadata: {} },
    ];
    const s = flow.flowStages(p, events, null);
    for (const [id, st] of Object.entries(states(s))) expect(st, id).toBe(id === "init" ? "skipped" : "done");
    expect(byId(s, "controller").detail).toBe("created by ReplicaSet/web-5d9");
    expect(flow.stageLabel(byId(s, "image"))).toBe("1 s");
    expect(flow.stageLabel(byId(s, "agent"))).toBe("1 s");
    expect(flow.stageLabel(byId(s, "ready"))).toBe("1 s");
  });

  it("the first stage not reached is the one waiting; a failed init container stops the flow there", () => {
    const scheduled = pod({ spec: { nodeName: "n1" } });
    expect(states(flow.flowStages(scheduled, [], null))).toMatchObject({
      scheduler: "done",
      agent: "waiting",
      sandbox: "pending",
    });

    const p = pod({
      spec: { nodeName: "n1", initContainers: [{ name: "setup", image: "busybox" }] },
      status: {
        startTime: at(1),
        conditions: [{ type: "PodReadyToStartContainers", status: "True", lastTransitionTime: at(2) }],
        podIP: "10.244.0.7",
        initContainerStatuses: [
          {
            name: "setup",
            imageID: "sha256:1",
            state: { terminated: { exitCode: 3, reason: "Error", startedAt: at(2) } },
          },
        ],
        containerStatuses: [{ name: "web", state: { waiting: { reason: "PodInitializing" } } }],
      },
    });
    const s = flow.flowStages(p, [], null);
    expect(states(s)).toMatchObject({ init: "failed", containers: "pending", ready: "pending" });
    expect(byId(s, "init").detail).toContain("setup");
  });

  it("trace spans replace what the pod says, to the millisecond, mapped to boxes by step and name", () => {
    expect(flow.flowStageOf({ step: "2.1", name: "authentication" })).toBe("authn");
    expect(flow.flowStageOf({ step: "2.3", name: "admission: LimitRanger" })).toBe("admission");
    expect(flow.flowStageOf({ step: "3.1", name: "initializers" })).toBe("admission");
    expect(flow.flowStageOf({ step: "5.2", name: "binding" })).toBe("scheduler");
    expect(flow.flowStageOf({ step: "6.7", name: "pull secrets" })).toBe("agent");
    expect(flow.flowStageOf({ step: "6.7", name: "image pull" })).toBe("image");
    expect(flow.flowStageOf({ step: "9.5", name: "probes until Ready" })).toBe("ready");
    expect(flow.flowStageOf({ step: "9.5", name: "postStart hook" })).toBe("containers");

    const p = pod({ spec: { nodeName: "n1" } });
    const trace = {
      stages: [
        {
          step: "2.1",
          name: "authentication",
          start: "2026-12-05T10:00:00.001000000Z",
          end: "2026-12-05T10:00:00.003500000Z",
          state: "done",
        },
        {
          step: "6.7",
          name: "image pull",
          start: "2026-12-05T10:00:01.000Z",
          end: "2026-12-05T10:00:01.250Z",
          state: "failed",
          reason: "ErrImagePull",
        },
      ],
    };
    const s = flow.flowStages(p, [], trace);
    expect(byId(s, "authn").coarse).toBe(false);
    expect(flow.stageLabel(byId(s, "authn"))).toBe("3 ms");
    expect(byId(s, "image").state).toBe("failed");
    expect(byId(s, "image").reason).toBe("ErrImagePull");
    // boxes the trace does not cover still come from the pod
    expect(byId(s, "scheduler").state).toBe("done");
  });

  it("formats durations for people", () => {
    expect(flow.formatDuration(0.4, false)).toBe("< 1 ms");
    expect(flow.formatDuration(12.4, false)).toBe("12 ms");
    expect(flow.formatDuration(1234, false)).toBe("1.23 s");
    expect(flow.formatDuration(61_000, false)).toBe("1 m 1 s");
    expect(flow.formatDuration(400, true)).toBe("< 1 s");
    expect(flow.formatDuration(Number.NaN, true)).toBe("");
  });
});
