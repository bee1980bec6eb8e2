import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../api/types";
import {
  aggregate,
  applyLimitRangeDefaults,
  claimViolations,
  LIMIT_RANGER_ANNOTATION,
  limitRangeViolations,
} from "../../../workers/admission/limit-ranger";

const lr = (limits: any[]): KubeObject => ({ metadata: { name: "lr" }, spec: { limits } }) as KubeObject;
const pod = (containers: any[], initContainers?: any[]): KubeObject =>
  ({ metadata: { name: "p" }, spec: { containers, initContainers } }) as KubeObject;

describe("LimitRanger defaults", () => {
  it("fills missing requests and limits and records them in the annotation", () => {
    const p = pod([
      { name: "c" },
      { name: "d", resources: { limits: { cpu: "2" }, requests: { cpu: "1" } } },
    ]);
    const set = applyLimitRangeDefaults(p, [
      lr([{ type: "Container", default: { cpu: "500m", memory: "256Mi" }, defaultRequest: { cpu: "100m" } }]),
    ]);
    expect(set).toBe(true);
    expect(p.spec.containers[0].resources).toEqual({
      limits: { cpu: "500m", memory: "256Mi" },
      requests: { cpu: "100m" },
    });
    expect(p.spec.containers[1].resources.requests.cpu).toBe("1");
    expect(p.spec.containers[1].resources.limits).toEqual({ cpu: "2", memory: "256Mi" });
    expect(p.metadata.annotations?.[LIMIT_RANGER_ANNOTATION]).toBe(
      "LimitRanger plugin set: cpu request for container c; cpu, memory limit for container c; memory limit for container d",
    );
  });

  it("sets nothing without Container items", () => {
    const p = pod([{ name: "c" }]);
    expect(applyLimitRangeDefaults(p, [lr([{ type: "Pod", max: { cpu: "1" } }])])).toBe(false);
    expect(p.metadata.annotations).toBeUndefined();
  });
});

describe("LimitRanger validation", () => {
  it("reports max, min and ratio violations in upstream's words", () => {
    const ranges = [
      lr([
        { type: "Container", max: { cpu: "1" }, min: { memory: "64Mi" }, maxLimitRequestRatio: { cpu: "2" } },
      ]),
    ];
    const p = pod([
      { name: "c", resources: { limits: { cpu: "2" }, requests: { cpu: "500m", memory: "32Mi" } } },
    ]);
    expect(limitRangeViolations(p, ranges)).toEqual([
      "minimum memory usage per Container is 64Mi, but request is 32Mi",
      "maximum cpu usage per Container is 1, but limit is 2",
      "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000",
    ]);
    const none = pod([{ name: "c" }]);
    expect(limitRangeViolations(none, ranges)).toEqual([
      "minimum memory usage per Container is 64Mi.  No request is specified",
      "maximum cpu usage per Container is 1.  No limit is specified",
      "cpu max limit to request ratio per Container is 2, but no request is specified or request is 0",
    ]);
    expect(
      limitRangeViolations(
        pod([{ name: "c", resources: { limits: { cpu: "1" }, requests: { cpu: "1", memory: "1Gi" } } }]),
        ranges,
      ),
    ).toEqual([]);
  });

  it("checks Pod items against the sums over containers", () => {
    const ranges = [lr([{ type: "Pod", max: { cpu: "1" } }])];
    const two = pod([
      { name: "a", resources: { limits: { cpu: "600m" } } },
      { name: "b", resources: { limits: { cpu: "600m" } } },
    ]);
    expect(limitRangeViolations(two, ranges)).toEqual(["maximum cpu usage per Pod is 1, but limit is 1200m"]);
  });

  it("aggregates like utilerrors", () => {
    expect(aggregate(["a"])).toBe("a");
    expect(aggregate(["a", "b"])).toBe("[a, b]");
  });
});

describe("LimitRanger claims", () => {
  it("bounds the storage a claim requests", () => {
    const ranges = [
      lr([{ type: "PersistentVolumeClaim", max: { storage: "2Gi" }, min: { storage: "1Gi" } }]),
    ];
    const claim = (storage: string) =>
      ({ metadata: { name: "c" }, spec: { resources: { requests: { storage } } } }) as KubeObject;
    expect(claimViolations(claim("5Gi"), ranges)).toEqual([
      "maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi",
    ]);
    expect(claimViolations(claim("500Mi"), ranges)).toEqual([
      "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi",
    ]);
    expect(claimViolations(claim("1Gi"), ranges)).toEqual([]);
  });
});
