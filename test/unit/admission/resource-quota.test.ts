import { describe, expect, it } from "vitest";
import { lookupGVR } from "../../../api/registry";
import type { KubeObject } from "../../../api/types";
import { addUsage, missingCompute, scopesMatch, usageOf } from "../../../workers/admission/resource-quota";

const pods = lookupGVR("", "v1", "pods")!;
const quota = (hard: Record<string, string>, used: Record<string, string> = {}): KubeObject =>
  ({ metadata: { name: "q", namespace: "ns" }, spec: { hard }, status: { hard, used } }) as KubeObject;
const pod = (containers: any[], phase?: string): KubeObject =>
  ({ metadata: { name: "p" }, spec: { containers }, status: phase ? { phase } : {} }) as KubeObject;

describe("quota usage", () => {
  it("counts a pod and sums its compute resources", () => {
    const u = usageOf(
      pods,
      pod([
        { name: "a", resources: { requests: { cpu: "250m", memory: "64Mi" }, limits: { cpu: "1" } } },
        { name: "b", resources: { requests: { cpu: "250m" } } },
      ]),
    );
    expect(u.pods).toBe(1);
    expect(u["count/pods"]).toBe(1);
    expect(u["requests.cpu"]).toBeCloseTo(0.5);
    expect(u.cpu).toBeCloseTo(0.5);
    expect(u["requests.memory"]).toBe(64 * 2 ** 20);
    expect(u["limits.cpu"]).toBe(1);
  });

  it("does not count terminal pods", () => {
    expect(usageOf(pods, pod([{ name: "a" }], "Succeeded"))).toEqual({});
  });

  it("adds a pod's overhead to its requests, and to its limits where it has one", () => {
    const p = pod([
      { name: "a", resources: { requests: { cpu: "500m", memory: "64Mi" }, limits: { cpu: "1" } } },
    ]);
    p.spec!.overhead = { cpu: "250m", memory: "32Mi" };
    const u = usageOf(pods, p);
    expect(u["requests.cpu"]).toBeCloseTo(0.75);
    expect(u["requests.memory"]).toBe(96 * 2 ** 20);
    expect(u["limits.cpu"]).toBeCloseTo(1.25);
    // no memory limit: the overhead does not make one
    expect(u["limits.memory"]).toBe(0);
  });

  it("counts group resources under count/<resource>.<group>", () => {
    const deployments = lookupGVR("apps", "v1", "deployments")!;
    expect(usageOf(deployments, { metadata: { name: "d" } } as KubeObject)).toEqual({
      "count/deployments.apps": 1,
    });
  });
});

describe("quota check", () => {
  it("adds within the limit", () => {
    const r = addUsage(quota({ pods: "3", "requests.cpu": "1" }, { pods: "2", "requests.cpu": "500m" }), {
      pods: 1,
      "requests.cpu": 0.25,
      "count/pods": 1,
    });
    expect(r).toEqual({ used: { pods: "3", "requests.cpu": "750m" } });
  });

  it("refuses past the limit with upstream's message, naming only what is exceeded", () => {
    const r = addUsage(quota({ pods: "3", "requests.cpu": "1" }, { pods: "3", "requests.cpu": "0" }), {
      pods: 1,
      "requests.cpu": 0.5,
    });
    expect(r).toEqual({ exceeded: "exceeded quota: q, requested: pods=1, used: pods=3, limited: pods=3" });
  });

  it("releases without going below zero", () => {
    expect(addUsage(quota({ pods: "3" }, { pods: "0" }), { pods: -1 })).toEqual({ used: { pods: "0" } });
  });

  it("requires compute amounts a quota tracks", () => {
    const p = pod([{ name: "a", resources: { requests: { cpu: "1" } } }, { name: "b" }]);
    expect(missingCompute(p, ["pods", "requests.cpu", "limits.memory", "cpu"])).toEqual([
      "cpu",
      "limits.memory",
      "requests.cpu",
    ]);
    const full = pod([{ name: "a", resources: { requests: { cpu: "1" }, limits: { memory: "1Gi" } } }]);
    expect(missingCompute(full, ["requests.cpu", "limits.memory"])).toEqual([]);
  });
});

describe("quota scopes", () => {
  const scoped = (spec: any): KubeObject => ({ metadata: { name: "q" }, spec }) as KubeObject;
  it("BestEffort and Terminating scopes pick pods by their spec", () => {
    const bare = pod([{ name: "a" }]);
    const sized = pod([{ name: "a", resources: { requests: { cpu: "1" } } }]);
    expect(scopesMatch(scoped({ scopes: ["BestEffort"] }), pods, bare)).toBe(true);
    expect(scopesMatch(scoped({ scopes: ["BestEffort"] }), pods, sized)).toBe(false);
    expect(scopesMatch(scoped({ scopes: ["NotBestEffort"] }), pods, sized)).toBe(true);
    const deadline = { ...bare, spec: { ...bare.spec, activeDeadlineSeconds: 30 } } as KubeObject;
    expect(scopesMatch(scoped({ scopes: ["Terminating"] }), pods, deadline)).toBe(true);
    expect(scopesMatch(scoped({ scopes: ["NotTerminating"] }), pods, deadline)).toBe(false);
    expect(scopesMatch(scoped({ hard: { pods: "1" } }), pods, bare)).toBe(true);
  });

  it("PriorityClass scope selectors", () => {
    const high = {
      ...pod([{ name: "a" }]),
      spec: { containers: [{ name: "a" }], priorityClassName: "high" },
    } as KubeObject;
    const sel = (operator: string, values?: string[]) =>
      scoped({ scopeSelector: { matchExpressions: [{ scopeName: "PriorityClass", operator, values }] } });
    expect(scopesMatch(sel("In", ["high"]), pods, high)).toBe(true);
    expect(scopesMatch(sel("NotIn", ["high"]), pods, high)).toBe(false);
    expect(scopesMatch(sel("Exists"), pods, pod([{ name: "a" }]))).toBe(false);
  });
});
