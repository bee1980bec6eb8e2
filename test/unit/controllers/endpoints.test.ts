import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../api/types";
import { endpointSubsets, findPort } from "../../../durable-objects/controllers/service/endpoints";

const svc = (spec: Record<string, unknown>): KubeObject => ({
  metadata: { name: "web", namespace: "d" },
  spec: { selector: { app: "web" }, ...spec },
});

function pod(
  name: string,
  ip: string,
  opts: { ready?: boolean; ports?: any[]; labels?: Record<string, string>; extra?: any } = {},
): KubeObject {
  return {
    metadata: { name, namespace: "d", uid: `uid-${name}`, labels: opts.labels ?? { app: "web" } },
    spec: { nodeName: "n1", containers: [{ name: "c", ports: opts.ports ?? [] }], ...opts.extra?.spec },
    status: {
      phase: "Running",
      podIP: ip,
      conditions: [{ type: "Ready", status: opts.ready === false ? "False" : "True" }],
      ...opts.extra?.status,
    },
  };
}

const ref = (name: string) => ({ kind: "Pod", namespace: "d", name, uid: `uid-${name}` });

describe("endpoints controller", () => {
  it("resolves named target ports against each pod and groups pods by the ports they serve", () => {
    const http = [{ name: "http", containerPort: 8080 }];
    const alt = [{ name: "http", containerPort: 9090 }];
    const s = svc({ ports: [{ name: "web", port: 80, protocol: "TCP", targetPort: "http" }] });
    const subsets = endpointSubsets(s, [
      pod("b", "10.0.0.2", { ports: http }),
      pod("a", "10.0.0.1", { ports: http, ready: false }),
      pod("c", "10.0.0.3", { ports: alt }),
      pod("none", "10.0.0.4"), // no port named http: left out
      pod("other", "10.0.0.5", { ports: http, labels: { app: "db" } }),
    ]);
    expect(subsets).toEqual([
      {
        addresses: [{ ip: "10.0.0.2", nodeName: "n1", targetRef: ref("b") }],
        notReadyAddresses: [{ ip: "10.0.0.1", nodeName: "n1", targetRef: ref("a") }],
        ports: [{ name: "web", port: 8080, protocol: "TCP" }],
      },
      {
        addresses: [{ ip: "10.0.0.3", nodeName: "n1", targetRef: ref("c") }],
        ports: [{ name: "web", port: 9090, protocol: "TCP" }],
      },
    ]);
  });

  it("leaves out pods without an IP, finished or terminating (unless not-ready ones are published)", () => {
    const s = svc({ ports: [{ port: 80, protocol: "TCP", targetPort: 80 }] });
    const noIP = pod("x", "");
    const done = pod("y", "10.0.0.6", { extra: { status: { phase: "Succeeded" } } });
    const going = pod("z", "10.0.0.7");
    going.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
    expect(endpointSubsets(s, [noIP, done, going])).toEqual([]);
    const published = svc({
      publishNotReadyAddresses: true,
      ports: [{ port: 80, protocol: "TCP", targetPort: 80 }],
    });
    const notReady = pod("w", "10.0.0.8", { ready: false });
    expect(endpointSubsets(published, [going, notReady])).toEqual([
      {
        addresses: [
          { ip: "10.0.0.7", nodeName: "n1", targetRef: ref("z") },
          { ip: "10.0.0.8", nodeName: "n1", targetRef: ref("w") },
        ],
        ports: [{ port: 80, protocol: "TCP" }],
      },
    ]);
  });

  it("a headless Service without ports lists addresses alone; hostname follows the subdomain", () => {
    const s = svc({ clusterIP: "None" });
    const p = pod("h", "10.0.0.9", { extra: { spec: { hostname: "h0", subdomain: "web" } } });
    expect(endpointSubsets(s, [p])).toEqual([
      { addresses: [{ ip: "10.0.0.9", hostname: "h0", nodeName: "n1", targetRef: ref("h") }] },
    ]);
  });

  it("no selector, no endpoints to manage", () => {
    expect(
      endpointSubsets({ metadata: { name: "x" }, spec: { ports: [{ port: 1 }] } }, [pod("a", "1.1.1.1")]),
    ).toEqual([]);
    expect(findPort(pod("a", "1.1.1.1"), { port: 80, targetPort: "8080" })).toBe(8080);
    expect(findPort(pod("a", "1.1.1.1"), { port: 80 })).toBe(80);
  });
});
