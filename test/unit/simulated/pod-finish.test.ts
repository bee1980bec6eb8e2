import { describe, expect, it } from "vitest";
import {
  EXIT_CODE_ANNOTATION as EXIT,
  finishedStatusPatch,
  lifetimeOf,
  parseRunTime,
  RUN_SECONDS_ANNOTATION as RUN,
  restarts,
  type SimPod,
} from "../../../agent/simulated/pod-finish";

const pod = (annotations: Record<string, string> = {}, owner?: string, restartPolicy = "Never"): SimPod => ({
  metadata: { annotations, ownerReferences: owner ? [{ kind: owner, controller: true }] : [] },
  spec: { restartPolicy, containers: [{ name: "c" }] },
});

describe("simulated pods' lifetimes", () => {
  it("reads seconds and one-unit Go durations; 'never'; nonsense is no answer", () => {
    expect(parseRunTime("30")).toBe(30_000);
    expect(parseRunTime("1.5")).toBe(1500);
    expect(parseRunTime("90s")).toBe(90_000);
    expect(parseRunTime("2m")).toBe(120_000);
    expect(parseRunTime("500ms")).toBe(500);
    expect(parseRunTime("never")).toBeNull();
    expect(parseRunTime("-1")).toBeUndefined();
    expect(parseRunTime("1h30m")).toBeUndefined();
  });

  it("a pod's annotations, then its node's, then the defaults; a Job's pods end after a second", () => {
    expect(lifetimeOf(pod(), undefined, {})).toBeUndefined();
    expect(lifetimeOf(pod({}, "ReplicaSet"), undefined, {})).toBeUndefined();
    expect(lifetimeOf(pod({}, "Job"), undefined, {})).toEqual({ runMs: 1000, exitCode: 0 });
    expect(lifetimeOf(pod({}, "Job"), undefined, { jobRunSeconds: 5 })).toEqual({ runMs: 5000, exitCode: 0 });
    expect(lifetimeOf(pod({}, "Job"), { [RUN]: "never" }, {})).toBeUndefined();
    expect(lifetimeOf(pod({ [RUN]: "2" }), { [RUN]: "never", [EXIT]: "7" }, {})).toEqual({
      runMs: 2000,
      exitCode: 7,
    });
    expect(lifetimeOf(pod({ [RUN]: "junk", [EXIT]: "1" }), { [RUN]: "3" }, {})).toEqual({
      runMs: 3000,
      exitCode: 1,
    });
    expect(lifetimeOf(pod({ [EXIT]: "256" }, "Job"), undefined, {})).toEqual({ runMs: 1000, exitCode: 0 });
  });

  it("restarts as the kubelet would: Always, and OnFailure after a failure", () => {
    expect(restarts(pod({}, undefined, "Always"), 0)).toBe(true);
    expect(restarts(pod({}, undefined, "OnFailure"), 0)).toBe(false);
    expect(restarts(pod({}, undefined, "OnFailure"), 2)).toBe(true);
    expect(restarts(pod({}, undefined, "Never"), 2)).toBe(false);
  });

  it("ends a pod Failed on a non-zero exit, its sidecars stopped and other conditions kept", () => {
    const p: SimPod = {
      metadata: {},
      spec: {
        containers: [{ name: "c" }],
        initContainers: [{ name: "side", restartPolicy: "Always" }, { name: "init" }],
      },
      status: {
        phase: "Running",
        conditions: [
          { type: "Ready", status: "True", lastTransitionTime: "2026-01-01T00:00:00Z" },
          { type: "PodScheduled", status: "True", lastTransitionTime: "2026-01-01T00:00:00Z" },
        ],
        containerStatuses: [
          { name: "c", ready: true, state: { running: { startedAt: "2026-01-01T00:00:01Z" } } },
        ],
        initContainerStatuses: [
          { name: "side", state: { running: { startedAt: "2026-01-01T00:00:00Z" } } },
          { name: "init", state: { terminated: { exitCode: 0, reason: "Completed" } } },
        ],
      },
    };
    const { status } = finishedStatusPatch(p, 2, Date.parse("2026-01-01T00:01:00Z")) as any;
    expect(status.phase).toBe("Failed");
    expect(status.containerStatuses[0]).toMatchObject({
      ready: false,
      state: {
        terminated: {
          exitCode: 2,
          reason: "Error",
          startedAt: "2026-01-01T00:00:01Z",
          finishedAt: "2026-01-01T00:01:00Z",
        },
      },
    });
    expect(status.initContainerStatuses[0].state.terminated.exitCode).toBe(0);
    expect(status.initContainerStatuses[1]).toEqual(p.status?.initContainerStatuses?.[1]);
    expect(status.conditions.find((c: any) => c.type === "Ready")).toMatchObject({
      status: "False",
      reason: "PodFailed",
    });
    expect(status.conditions.find((c: any) => c.type === "PodScheduled")).toMatchObject({ status: "True" });
  });
});
