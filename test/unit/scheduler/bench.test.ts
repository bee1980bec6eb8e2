import { describe, expect, it } from "vitest";
import { Scheduler } from "../../../durable-objects/scheduler/scheduler";
import { makeNode, makePod, seeded } from "./helpers";

function run(numNodes: number, numPods: number) {
  const s = new Scheduler({ random: seeded(1) });
  const zones = ["a", "b", "c"];
  for (let i = 0; i < numNodes; i++) {
    s.cache.addNode(
      makeNode(`node-${i}`, {
        cpu: "32",
        memory: "128Gi",
        labels: { "topology.kubernetes.io/zone": zones[i % 3] },
        images: [{ names: ["docker.io/library/nginx:1.25"], sizeBytes: 60 * 1024 * 1024 }],
      }),
    );
  }
  const pods = [];
  for (let i = 0; i < numPods; i++) {
    pods.push(
      makePod(`p-${i}`, {
        cpu: "100m",
        memory: "128Mi",
        labels: { app: `app-${i % 50}` },
        image: "nginx:1.25",
      }),
    );
  }
  const t0 = performance.now();
  let scheduled = 0;
  for (const p of pods) {
    const r = s.scheduleOne(p);
    if ("node" in r) {
      s.bindingDone(r.pod.key, true);
      scheduled++;
    }
  }
  const secs = (performance.now() - t0) / 1000;
  return { scheduled, rate: numPods / secs, secs };
}

describe("scheduler throughput", () => {
  it("schedules 10,000 pods onto 1,000 nodes", () => {
    const r = run(1000, 10000);
    console.log(`scheduler: 10000 pods / 1000 nodes in ${r.secs.toFixed(2)}s = ${Math.round(r.rate)} pods/s`);
    expect(r.scheduled).toBe(10000);
    expect(r.rate).toBeGreaterThan(200);
  }, 120_000);

  it("schedules 2,000 pods onto 5,000 nodes", () => {
    const r = run(5000, 2000);
    console.log(`scheduler: 2000 pods / 5000 nodes in ${r.secs.toFixed(2)}s = ${Math.round(r.rate)} pods/s`);
    expect(r.scheduled).toBe(2000);
    expect(r.rate).toBeGreaterThan(100);
  }, 120_000);
});

describe("scheduler throughput with constraints", () => {
  it("schedules 2,000 topology-spread + anti-affinity pods onto 1,000 nodes", () => {
    const s = new Scheduler({ random: seeded(3) });
    for (let i = 0; i < 1000; i++) {
      s.cache.addNode(
        makeNode(`node-${i}`, {
          cpu: "32",
          memory: "128Gi",
          labels: { "topology.kubernetes.io/zone": `z${i % 3}` },
        }),
      );
    }
    const t0 = performance.now();
    let scheduled = 0;
    for (let i = 0; i < 2000; i++) {
      const app = `app-${i % 20}`;
      const pod = makePod(`c-${i}`, {
        cpu: "100m",
        memory: "128Mi",
        labels: { app },
        spec: {
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: "topology.kubernetes.io/zone",
              whenUnsatisfiable: "DoNotSchedule",
              labelSelector: { matchLabels: { app } },
            },
          ],
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 10,
                  podAffinityTerm: {
                    topologyKey: "kubernetes.io/hostname",
                    labelSelector: { matchLabels: { app } },
                  },
                },
              ],
            },
          },
        },
      });
      const r = s.scheduleOne(pod);
      if ("node" in r) {
        s.bindingDone(r.pod.key, true);
        scheduled++;
      }
    }
    const secs = (performance.now() - t0) / 1000;
    console.log(
      `scheduler: 2000 constrained pods / 1000 nodes in ${secs.toFixed(2)}s = ${Math.round(2000 / secs)} pods/s`,
    );
    expect(scheduled).toBe(2000);
    // Zone spread holds exactly: each app's pods split 34/33/33 over three zones.
    const perZone = new Map<string, number>();
    s.cache.updateSnapshot(s.snapshot);
    for (const ni of s.snapshot.nodeInfoList) {
      for (const p of ni.pods) {
        if (p.labels.app !== "app-0") continue;
        const z = ni.labels["topology.kubernetes.io/zone"];
        perZone.set(z, (perZone.get(z) ?? 0) + 1);
      }
    }
    const counts = [...perZone.values()].sort();
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    expect(2000 / secs).toBeGreaterThan(20);
  }, 120_000);
});
