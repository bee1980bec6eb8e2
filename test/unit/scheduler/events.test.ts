import { describe, expect, it } from "vitest";
import {
  bindingFor,
  failedSchedulingEvent,
  failedSchedulingStatus,
  scheduledEvent,
  toCoreV1Event,
  truncateMessage,
} from "../../../durable-objects/scheduler/events";
import { makePod } from "./helpers";

const NOW = Date.parse("2026-11-29T12:00:00.123Z");

describe("scheduler write-backs", () => {
  const pod = makePod("web", { ns: "prod" });

  it("builds the Binding DefaultBinder posts", () => {
    expect(bindingFor(pod, "node-1")).toEqual({
      apiVersion: "v1",
      kind: "Binding",
      metadata: { name: "web", namespace: "prod", uid: pod.metadata.uid },
      target: { kind: "Node", name: "node-1" },
    });
  });

  it("emits Scheduled as events.k8s.io/v1 from default-scheduler", () => {
    const ev = scheduledEvent(pod, "node-1", { now: NOW, reportingInstance: "default-scheduler-x" });
    expect(ev).toMatchObject({
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      type: "Normal",
      reason: "Scheduled",
      action: "Binding",
      note: "Successfully assigned prod/web to node-1",
      reportingController: "default-scheduler",
      reportingInstance: "default-scheduler-x",
      eventTime: "2026-11-29T12:00:00.123000Z",
      regarding: { kind: "Pod", apiVersion: "v1", namespace: "prod", name: "web", uid: pod.metadata.uid },
    });
    expect(ev.metadata.namespace).toBe("prod");
    expect(ev.metadata.name).toBe(`web.${(BigInt(NOW) * 1000000n).toString(16)}`);
    const core = toCoreV1Event(ev);
    expect(core).toMatchObject({
      apiVersion: "v1",
      reason: "Scheduled",
      message: ev.note,
      reportingComponent: "default-scheduler",
    });
    expect(core.involvedObject.name).toBe("web");
  });

  it("emits FailedScheduling as a Warning with the FitError message, truncated to 1024", () => {
    const ev = failedSchedulingEvent(pod, "0/1 nodes are available: 1 Insufficient cpu.", { now: NOW });
    expect(ev).toMatchObject({ type: "Warning", reason: "FailedScheduling", action: "Scheduling" });
    expect(ev.note).toBe("0/1 nodes are available: 1 Insufficient cpu.");
    const long = "x".repeat(2000);
    expect(truncateMessage(long)).toHaveLength(1024);
    expect(truncateMessage(long).endsWith(" ...")).toBe(true);
  });

  it("sets PodScheduled=False/Unschedulable and keeps the transition time on repeats", () => {
    const st = failedSchedulingStatus(pod, "0/1 nodes are available: 1 Insufficient cpu.", NOW)!;
    expect(st.conditions).toEqual([
      {
        type: "PodScheduled",
        status: "False",
        reason: "Unschedulable",
        message: "0/1 nodes are available: 1 Insufficient cpu.",
        lastProbeTime: null,
        lastTransitionTime: "2026-11-29T12:00:00Z",
      },
    ]);
    const again = { ...pod, status: st };
    expect(
      failedSchedulingStatus(again, "0/1 nodes are available: 1 Insufficient cpu.", NOW + 60_000),
    ).toBeNull();
    const changed = failedSchedulingStatus(
      again,
      "0/2 nodes are available: 2 Insufficient cpu.",
      NOW + 60_000,
      {
        nominatedNodeName: "n2",
      },
    )!;
    expect((changed.conditions as { lastTransitionTime: string }[])[0].lastTransitionTime).toBe(
      "2026-11-29T12:00:00Z",
    );
    expect(changed.nominatedNodeName).toBe("n2");
    const err = failedSchedulingStatus(pod, "boom", NOW, { reason: "SchedulerError" })!;
    expect((err.conditions as { reason: string }[])[0].reason).toBe("SchedulerError");
  });
});
