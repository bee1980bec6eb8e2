// The metrics API's pure parts: quantities and durations written as Kubernetes writes them,
// the report format's checks, the simulated nodes' figures, and the edgelet's /proc reading.
import { describe, expect, it } from "vitest";
import { machineCpu, machineWorkingSet } from "../../agent/edgelet/metrics";
import type { Pod } from "../../agent/lib/kube-types";
import {
  CPU_USAGE_ANNOTATION,
  MEMORY_USAGE_ANNOTATION,
  simulatedPodUsage,
  simulatedReport,
} from "../../agent/simulated/metrics";
import { cpuQuantity, goDuration, memoryQuantity, podUsageTotal } from "../../api/metrics";
import type { KubeObject } from "../../api/types";
import { parseMetricsReport } from "../../api/wire/metrics";

describe("metrics quantities", () => {
  it("writes CPU in the smallest decimal suffix that keeps it whole", () => {
    expect(cpuQuantity(0)).toBe("0");
    expect(cpuQuantity(1_234_567)).toBe("1234567n");
    expect(cpuQuantity(5_000)).toBe("5u");
    expect(cpuQuantity(250_000_000)).toBe("250m");
    expect(cpuQuantity(2_000_000_000)).toBe("2");
    expect(cpuQuantity(12.6)).toBe("13n");
  });

  it("writes memory in the largest power-of-1024 suffix that divides it", () => {
    expect(memoryQuantity(0)).toBe("0");
    expect(memoryQuantity(1000)).toBe("1000");
    expect(memoryQuantity(1024)).toBe("1Ki");
    expect(memoryQuantity(1536 * 1024)).toBe("1536Ki");
    expect(memoryQuantity(64 * 1024 ** 2)).toBe("64Mi");
    expect(memoryQuantity(2 * 1024 ** 3)).toBe("2Gi");
    expect(memoryQuantity(123_456_789)).toBe("123456789");
  });

  it("writes windows as Go durations", () => {
    expect(goDuration(15_000)).toBe("15s");
    expect(goDuration(20_040)).toBe("20.04s");
    expect(goDuration(60_500)).toBe("1m0.5s");
    expect(goDuration(3_600_000)).toBe("1h0m0s");
    expect(goDuration(250)).toBe("250ms");
  });

  it("sums a PodMetrics' containers for its table", () => {
    const pm = {
      metadata: { name: "p" },
      containers: [
        { usage: { cpu: "250m", memory: "64Mi" } },
        { usage: { cpu: "1234567n", memory: "10Mi" } },
      ],
    } as unknown as KubeObject;
    expect(podUsageTotal(pm)).toEqual({ cpu: "251234567n", memory: "74Mi" });
  });
});

describe("metrics reports", () => {
  const good = {
    intervalSeconds: 15,
    node: { cpu: 1, memory: 2, timestamp: 3, windowMs: 4 },
    pods: [
      {
        namespace: "a",
        name: "b",
        uid: "c",
        timestamp: 1,
        windowMs: 1,
        containers: [{ name: "x", cpu: 0, memory: 0 }],
      },
    ],
  };
  it("takes a well-formed report and says what is wrong with others", () => {
    expect(parseMetricsReport(good)).toBe(good);
    expect(parseMetricsReport(null)).toMatch(/JSON object/);
    expect(parseMetricsReport({ ...good, intervalSeconds: 0 })).toMatch(/intervalSeconds/);
    expect(parseMetricsReport({ ...good, node: { cpu: -1 } })).toMatch(/^node/);
    expect(parseMetricsReport({ ...good, pods: [{ ...good.pods[0], uid: "" }] })).toMatch(/pods\[0\]/);
    expect(
      parseMetricsReport({ ...good, pods: [{ ...good.pods[0], containers: [{ name: "x", cpu: "1" }] }] }),
    ).toMatch(/containers\[0\]/);
  });
});

describe("simulated nodes' figures", () => {
  const pod = (annotations: Record<string, string>, requests: (Record<string, string> | undefined)[]): Pod =>
    ({
      metadata: { name: "p", namespace: "n", uid: "u", annotations },
      spec: {
        containers: requests.map((r, i) => ({
          name: `c${i}`,
          image: "i",
          resources: r ? { requests: r } : {},
        })),
      },
    }) as Pod;

  it("uses half the CPU request and 60% of the memory request, or defaults", () => {
    expect(simulatedPodUsage(pod({}, [{ cpu: "200m", memory: "100Mi" }, undefined]))).toEqual([
      { name: "c0", cpu: 100_000_000, memory: Math.round(60 * 1024 ** 2) },
      { name: "c1", cpu: 10_000_000, memory: 16 * 1024 ** 2 },
    ]);
  });

  it("splits the annotations' figures by the requests, or evenly", () => {
    const p = pod({ [CPU_USAGE_ANNOTATION]: "300m", [MEMORY_USAGE_ANNOTATION]: "96Mi" }, [
      { cpu: "100m" },
      { cpu: "200m" },
    ]);
    expect(simulatedPodUsage(p)).toEqual([
      { name: "c0", cpu: 100_000_000, memory: 48 * 1024 ** 2 },
      { name: "c1", cpu: 200_000_000, memory: 48 * 1024 ** 2 },
    ]);
    // an annotation that is no quantity is ignored
    expect(simulatedPodUsage(pod({ [CPU_USAGE_ANNOTATION]: "lots" }, [{ cpu: "100m" }]))[0].cpu).toBe(
      50_000_000,
    );
  });

  it("reports a node as a base plus its pods", () => {
    const r = simulatedReport(
      [pod({ [CPU_USAGE_ANNOTATION]: "1", [MEMORY_USAGE_ANNOTATION]: "1Gi" }, [undefined])],
      15,
      1000,
    );
    expect(r.node).toEqual({
      cpu: 1_100_000_000,
      memory: (1024 + 256) * 1024 ** 2,
      timestamp: 1000,
      windowMs: 15_000,
    });
    expect(r.pods[0]).toMatchObject({ namespace: "n", name: "p", uid: "u", windowMs: 15_000 });
  });
});

describe("the edgelet's machine figures", () => {
  it("reads busy and total CPU time from /proc/stat (ticks of 10 ms)", () => {
    const stat = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3\n";
    expect(machineCpu(stat)).toEqual({ busy: 150 * 1e7, total: 1000 * 1e7 });
  });
  it("takes the working set as memory in use less inactive file pages", () => {
    const meminfo =
      "MemTotal:        1000 kB\nMemFree:          200 kB\nMemAvailable:     500 kB\nInactive(file):   100 kB\n";
    expect(machineWorkingSet(meminfo)).toBe(700 * 1024);
  });
});
