// The HPA's replica calculator against cases worked by hand from upstream's algorithm
// (pkg/controller/podautoscaler/replica_calculator.go): utilization and average-value targets,
// the tolerance, missing and unready pods in the conservative direction, cpu start-up, ignored
// pods, sidecar requests and upstream's errors; then the PodMetricsList parsing and quantities.
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../api/types";
import {
  goDurationMs,
  type PodMetricsList,
  resourceMetrics,
} from "../../../durable-objects/controllers/podautoscaler/metrics-client";
import {
  groupPods,
  milliQuantity,
  DEFAULT_CALCULATOR as OPTS,
  type PodMetrics,
  replicasForAverageValue,
  replicasForUtilization,
} from "../../../durable-objects/controllers/podautoscaler/replica-calculator";

const NOW = Date.parse("2026-01-01T12:00:00Z");
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();

interface PodCase {
  phase?: string;
  /** Ready status; undefined: no Ready condition */
  ready?: boolean;
  /** seconds since the Ready condition's last transition */
  readySince?: number;
  /** seconds since start (default 10 minutes: past cpu start-up) */
  started?: number;
  deleting?: boolean;
  requests?: Record<string, string> | null;
  sidecar?: Record<string, string>;
}

function pods(cases: PodCase[]): KubeObject[] {
  return cases.map((c, i) => ({
    metadata: {
      name: `p${i}`,
      namespace: "default",
      ...(c.deleting ? { deletionTimestamp: ago(1) } : {}),
    },
    spec: {
      containers: [
        {
          name: "app",
          image: "busybox",
          resources: c.requests === null ? {} : { requests: c.requests ?? { cpu: "1" } },
        },
      ],
      ...(c.sidecar
        ? {
            initContainers: [
              { name: "side", image: "busybox", restartPolicy: "Always", resources: { requests: c.sidecar } },
            ],
          }
        : {}),
    },
    status: {
      phase: c.phase ?? "Running",
      startTime: ago(c.started ?? 600),
      conditions:
        c.ready === undefined && c.phase !== undefined
          ? []
          : [
              {
                type: "Ready",
                status: c.ready === false ? "False" : "True",
                lastTransitionTime: ago(c.readySince ?? 590),
              },
            ],
    },
  }));
}

/** samples (milli-units) for p0, p1, ...; undefined: no sample for that pod */
function samples(values: (number | undefined)[], takenAgo = 0, windowS = 30): PodMetrics {
  const m: PodMetrics = new Map();
  values.forEach((v, i) => {
    if (v !== undefined)
      m.set(`p${i}`, { value: v, timestamp: NOW - takenAgo * 1000, windowMs: windowS * 1000 });
  });
  return m;
}

const utilization = (
  current: number,
  target: number,
  ps: KubeObject[],
  m: PodMetrics,
  resource = "cpu",
  container = "",
) =>
  replicasForUtilization({
    currentReplicas: current,
    targetUtilization: target,
    resource,
    container,
    pods: ps,
    metrics: m,
    now: NOW,
  });

describe("replicas for a utilization target", () => {
  const cases: {
    name: string;
    current: number;
    target: number;
    pods: PodCase[];
    usage: (number | undefined)[];
    resource?: string;
    want: { replicas: number; utilization: number; rawAverage: number };
  }[] = [
    {
      name: "scale up: 50% of requests against 30%",
      current: 3,
      target: 30,
      pods: [{}, {}, {}],
      usage: [300, 500, 700],
      want: { replicas: 5, utilization: 50, rawAverage: 500 },
    },
    {
      name: "scale down: 28% against 50%",
      current: 5,
      target: 50,
      pods: [{}, {}, {}, {}, {}],
      usage: [100, 300, 500, 250, 250],
      want: { replicas: 3, utilization: 28, rawAverage: 280 },
    },
    {
      name: "within the tolerance: no change",
      current: 3,
      target: 100,
      pods: [{}, {}, {}],
      usage: [1010, 1030, 1020],
      want: { replicas: 3, utilization: 102, rawAverage: 1020 },
    },
    {
      name: "just outside the tolerance: a change",
      current: 3,
      target: 100,
      pods: [{}, {}, {}],
      usage: [1110, 1130, 1120],
      want: { replicas: 4, utilization: 112, rawAverage: 1120 },
    },
    {
      name: "scale up with an unready pod: it counts as idle",
      current: 3,
      target: 30,
      pods: [{ ready: false, started: 60, readySince: 60 }, {}, {}],
      usage: [300, 500, 700],
      // ready pods: 1200/2000 = 60%; with the unready one at 0: 1200/3000 = 40% -> ceil(1.33 * 3)
      want: { replicas: 4, utilization: 60, rawAverage: 600 },
    },
    {
      name: "scale down with unready pods: they are left out",
      current: 5,
      target: 50,
      pods: [
        { ready: false, started: 60, readySince: 60 },
        { ready: false, started: 60, readySince: 60 },
        {},
        {},
        {},
      ],
      usage: [100, 300, 500, 250, 250],
      // ready pods: 1000/3000 = 33% -> ceil(0.66 * 3)
      want: { replicas: 2, utilization: 33, rawAverage: 333 },
    },
    {
      name: "a pending pod is unready",
      current: 2,
      target: 50,
      pods: [{ phase: "Pending" }, {}],
      usage: [undefined, 1000],
      // 100% -> ratio 2; pending at 0: 1000/2000 = 50% -> ratio 1: within tolerance, keep 2
      want: { replicas: 2, utilization: 100, rawAverage: 1000 },
    },
    {
      name: "scale down with a missing pod: it is taken to use all it requests",
      current: 4,
      target: 50,
      pods: [{}, {}, {}, {}],
      usage: [100, 100, 100, undefined],
      // 10% -> ratio 0.2; the missing one at 1000: 1300/4000 = 32% -> ceil(0.65 * 4) (1 without it)
      want: { replicas: 3, utilization: 10, rawAverage: 100 },
    },
    {
      name: "scale down with a missing pod and a target above 100%: it is taken to use the target",
      current: 4,
      target: 200,
      pods: [{}, {}, {}, {}],
      usage: [100, 100, 100, undefined],
      // 10% -> 0.05; missing at 2000: 2300/4000 = 57% -> ceil(0.285 * 4)
      want: { replicas: 2, utilization: 10, rawAverage: 100 },
    },
    {
      name: "scale up with a missing pod: it is taken to use nothing",
      current: 4,
      target: 50,
      pods: [{}, {}, {}, {}],
      usage: [1000, 1000, 1000, undefined],
      // 100% -> 2; missing at 0: 3000/4000 = 75% -> ceil(1.5 * 4)
      want: { replicas: 6, utilization: 100, rawAverage: 1000 },
    },
    {
      name: "a missing pod that would reverse the direction keeps the count",
      current: 2,
      target: 50,
      pods: [{}, {}],
      usage: [450, undefined],
      // 45% -> 0.9 (down); the missing one at 100%: 1450/2000 = 72% -> 1.45 (up): keep
      want: { replicas: 2, utilization: 45, rawAverage: 450 },
    },
    {
      name: "failed pods and pods being deleted are ignored",
      current: 3,
      target: 50,
      pods: [{ phase: "Failed" }, { deleting: true }, {}],
      usage: [5000, 5000, 500],
      want: { replicas: 3, utilization: 50, rawAverage: 500 },
    },
    {
      name: "cpu: a pod still starting counts once ready for a whole window",
      current: 2,
      target: 50,
      pods: [{ started: 60, readySince: 20 }, {}],
      // p0's sample was taken 20 s after it became ready, its window is 30 s: not yet
      usage: [2000, 500],
      // p0 unready, p1 at 50%: ratio 1 -> keep
      want: { replicas: 2, utilization: 50, rawAverage: 500 },
    },
    {
      name: "cpu: a starting pod ready a whole window before its sample counts",
      current: 2,
      target: 50,
      pods: [{ started: 120, readySince: 100 }, {}],
      usage: [2000, 500],
      // 2500/2000 = 125% -> ceil(2.5 * 2)
      want: { replicas: 5, utilization: 125, rawAverage: 1250 },
    },
    {
      name: "cpu: past start-up, a pod not ready that was ready once still counts",
      current: 2,
      target: 50,
      pods: [{ ready: false, started: 600, readySince: 500 }, {}],
      usage: [1500, 500],
      want: { replicas: 4, utilization: 100, rawAverage: 1000 },
    },
    {
      name: "cpu: past start-up, a pod never ready is unready",
      current: 2,
      target: 50,
      pods: [{ ready: false, started: 600, readySince: 590 }, {}],
      usage: [1500, 500],
      want: { replicas: 2, utilization: 50, rawAverage: 500 },
    },
    {
      name: "memory: readiness does not matter",
      current: 2,
      target: 50,
      resource: "memory",
      pods: [
        { ready: false, started: 60, readySince: 60, requests: { memory: "100Mi" } },
        { requests: { memory: "100Mi" } },
      ],
      usage: [104857600000, 104857600000],
      want: { replicas: 4, utilization: 100, rawAverage: 104857600000 },
    },
    {
      name: "sidecars' requests count with the containers'",
      current: 2,
      // 2000 of 2000 requested: at the target (without the sidecars' requests: 200%, 4 replicas)
      target: 100,
      pods: [{ sidecar: { cpu: "1" } }, { sidecar: { cpu: "1" } }],
      usage: [2000, 2000],
      want: { replicas: 2, utilization: 100, rawAverage: 2000 },
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      expect(utilization(c.current, c.target, pods(c.pods), samples(c.usage), c.resource)).toEqual(c.want);
    });

  it("one container's usage against its own request (ContainerResource)", () => {
    const ps = pods([{ sidecar: { cpu: "1" } }, { sidecar: { cpu: "1" } }]);
    // usage of the "app" container only: 1500 of 1000 each
    expect(utilization(2, 50, ps, samples([1500, 1500]), "cpu", "app")).toEqual({
      replicas: 6,
      utilization: 150,
      rawAverage: 1500,
    });
  });

  it("fails as upstream: no pods, no usable samples, a missing request", () => {
    expect(() => utilization(1, 50, [], samples([1]))).toThrow(
      "no pods returned by selector while calculating replica count",
    );
    expect(() => utilization(1, 50, pods([{ phase: "Pending" }]), samples([1]))).toThrow(
      "did not receive metrics for targeted pods (pods might be unready)",
    );
    expect(() => utilization(2, 50, pods([{}, { requests: null }]), samples([1, 1]))).toThrow(
      "missing request for cpu in container app of Pod p1",
    );
  });

  it("groups pods as upstream", () => {
    const g = groupPods(
      pods([
        { phase: "Failed" },
        { phase: "Pending" },
        {},
        {},
        { ready: false, started: 30, readySince: 30 },
      ]),
      samples([1, 1, 1, undefined, 1]),
      "cpu",
      OPTS,
      NOW,
    );
    expect({ ...g, unready: [...g.unready], missing: [...g.missing], ignored: [...g.ignored] }).toEqual({
      readyPodCount: 1,
      unready: ["p1", "p4"],
      missing: ["p3"],
      ignored: ["p0"],
    });
  });
});

describe("replicas for an average value target", () => {
  const average = (current: number, target: number, ps: KubeObject[], m: PodMetrics) =>
    replicasForAverageValue({
      currentReplicas: current,
      targetUsage: target,
      resource: "memory",
      container: "",
      pods: ps,
      metrics: m,
      now: NOW,
    });

  it("scales by the average against the target", () => {
    // average 600 against 500 -> ceil(1.2 * 3)
    expect(average(3, 500, pods([{}, {}, {}]), samples([400, 600, 800]))).toEqual({
      replicas: 4,
      usage: 600,
    });
    // within the tolerance
    expect(average(3, 500, pods([{}, {}, {}]), samples([500, 520, 540]))).toEqual({
      replicas: 3,
      usage: 520,
    });
    // down: average 100 -> ceil(0.2 * 3)
    expect(average(3, 500, pods([{}, {}, {}]), samples([100, 100, 100]))).toEqual({
      replicas: 1,
      usage: 100,
    });
  });

  it("a missing pod is taken to use the target on a scale-down, nothing on a scale-up", () => {
    // 100 -> 0.2; missing at 500: 700/3 = 233 -> ceil(0.466 * 3)
    expect(average(3, 500, pods([{}, {}, {}]), samples([100, 100, undefined]))).toEqual({
      replicas: 2,
      usage: 100,
    });
    // 1000 -> 2; missing at 0: 2000/3 = 666 -> ceil(1.332 * 3)
    expect(average(3, 500, pods([{}, {}, {}]), samples([1000, 1000, undefined]))).toEqual({
      replicas: 4,
      usage: 1000,
    });
  });

  it("an unready pod counts as idle on a scale-up (memory: only pending pods are unready)", () => {
    // 1000 -> 2; pending at 0: 2000/3 = 666 -> ceil(1.332 * 3)
    expect(average(3, 500, pods([{ phase: "Pending" }, {}, {}]), samples([undefined, 1000, 1000]))).toEqual({
      replicas: 4,
      usage: 1000,
    });
  });
});

describe("reading PodMetrics", () => {
  const list = (items: PodMetricsList["items"]) => ({ list: async () => ({ items }) });

  it("sums the containers' usage per pod; a pod missing the resource in a container has no sample", async () => {
    const r = await resourceMetrics(
      list([
        {
          metadata: { name: "a" },
          timestamp: "2026-01-01T12:00:00Z",
          window: "1m0s",
          containers: [
            { name: "app", usage: { cpu: "250m", memory: "10Mi" } },
            { name: "side", usage: { cpu: "1500000n", memory: "1Mi" } },
          ],
        },
        {
          metadata: { name: "b" },
          timestamp: "2026-01-01T12:00:05Z",
          window: "10.5s",
          containers: [{ name: "app", usage: { memory: "1Mi" } }],
        },
        { metadata: { name: "c" }, timestamp: "2026-01-01T12:00:05Z", window: "2s", containers: [] },
      ]),
      "default",
      "app=web",
      "cpu",
      "",
    );
    expect([...r.metrics]).toEqual([["a", { value: 252, timestamp: NOW, windowMs: 60_000 }]]);
    expect(r.timestamp).toBe(NOW);
    const side = await resourceMetrics(
      list([
        {
          metadata: { name: "a" },
          timestamp: "2026-01-01T12:00:00Z",
          window: "2s",
          containers: [{ name: "side", usage: { cpu: "1" } }],
        },
      ]),
      "default",
      "",
      "cpu",
      "side",
    );
    expect(side.metrics.get("a")?.value).toBe(1000);
  });

  it("fails as upstream's metrics client", async () => {
    await expect(resourceMetrics(list([]), "default", "", "cpu", "")).rejects.toThrow(
      "no metrics returned from resource metrics API",
    );
    const broken = {
      list: async () => {
        throw new Error("the server could not find the requested resource (get pods.metrics.k8s.io)");
      },
    };
    await expect(resourceMetrics(broken, "default", "", "cpu", "")).rejects.toThrow(
      "unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)",
    );
  });

  it("parses Go durations and prints quantities as upstream", () => {
    expect([
      goDurationMs("1m0s"),
      goDurationMs("10.5s"),
      goDurationMs("250ms"),
      goDurationMs("1h2m"),
      goDurationMs("x"),
    ]).toEqual([60_000, 10_500, 250, 3_720_000, 0]);
    expect([
      milliQuantity(0),
      milliQuantity(250),
      milliQuantity(1500),
      milliQuantity(2000),
      milliQuantity(104857600000),
      milliQuantity(2e12),
    ]).toEqual(["0", "250m", "1500m", "2", "104857600", "2G"]);
  });
});
