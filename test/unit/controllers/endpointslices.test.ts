import { describe, expect, it } from "vitest";
import { findResource } from "../../../api/strategies";
import type { KubeObject } from "../../../api/types";
import { desiredSlices, MAX_PER_SLICE } from "../../../durable-objects/controllers/service/endpointslices";

const svc = (spec: Record<string, unknown> = {}): KubeObject => ({
  metadata: { name: "web", namespace: "d", uid: "svc-uid" },
  spec: {
    selector: { app: "web" },
    ports: [{ name: "http", port: 80, protocol: "TCP", targetPort: 8080 }],
    ...spec,
  },
});

function pod(
  name: string,
  ip: string,
  opts: { ready?: boolean; deleting?: boolean; node?: string } = {},
): KubeObject {
  return {
    metadata: {
      name,
      namespace: "d",
      uid: `uid-${name}`,
      labels: { app: "web" },
      ...(opts.deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
    },
    spec: { nodeName: opts.node ?? "n1", containers: [{ name: "c" }] },
    status: {
      phase: "Running",
      podIP: ip,
      conditions: [{ type: "Ready", status: opts.ready === false ? "False" : "True" }],
    },
  };
}

describe("endpointslice controller", () => {
  it("conditions: terminating pods stay, neither ready nor (unless published) counted ready", () => {
    const [slice] = desiredSlices(
      svc(),
      [
        pod("a", "10.0.0.1"),
        pod("b", "10.0.0.2", { ready: false }),
        pod("c", "10.0.0.3", { deleting: true }),
      ],
      (n) => (n === "n1" ? "zone-a" : undefined),
    );
    expect(slice!.ports).toEqual([{ name: "http", port: 8080, protocol: "TCP" }]);
    expect(slice!.endpoints.map((e) => [e.addresses[0], e.conditions, e.zone])).toEqual([
      ["10.0.0.1", { ready: true, serving: true, terminating: false }, "zone-a"],
      ["10.0.0.2", { ready: false, serving: false, terminating: false }, "zone-a"],
      ["10.0.0.3", { ready: false, serving: true, terminating: true }, "zone-a"],
    ]);
    const [published] = desiredSlices(svc({ publishNotReadyAddresses: true }), [
      pod("b", "10.0.0.2", { ready: false }),
    ]);
    expect(published!.endpoints[0]!.conditions).toEqual({ ready: true, serving: false, terminating: false });
  });

  it(`at most ${MAX_PER_SLICE} endpoints to a slice; an empty Service keeps one placeholder`, () => {
    const pods = Array.from({ length: 250 }, (_, i) =>
      pod(`p${i}`, `10.1.${Math.floor(i / 200)}.${i % 200}`),
    );
    const slices = desiredSlices(svc(), pods);
    expect(slices.map((s) => s.endpoints.length)).toEqual([100, 100, 50]);
    expect(new Set(slices.flatMap((s) => s.endpoints.map((e) => e.addresses[0]))).size).toBe(250);
    expect(desiredSlices(svc(), [])).toEqual([{ endpoints: [] }]);
    expect(desiredSlices({ metadata: { name: "x", namespace: "d" }, spec: { ports: [] } }, pods)).toEqual([]);
  });
});

describe("EndpointSlice validation", () => {
  const s = findResource("discovery.k8s.io", "v1", "endpointslices")!.strategy;
  const base = (o: Record<string, unknown>): KubeObject => ({
    metadata: { name: "x", namespace: "d" },
    ...o,
  });
  const fields = (o: KubeObject, old?: KubeObject) =>
    s.validate!(o, old).map((c) => `${c.field}: ${c.message}`);

  it("checks the address type, the addresses and the ports", () => {
    expect(
      fields(base({ addressType: "IPv4", endpoints: [{ addresses: ["10.0.0.1"] }], ports: [{ port: 80 }] })),
    ).toEqual([]);
    expect(fields(base({ endpoints: [] }))).toEqual(["addressType: Required value"]);
    expect(
      fields(base({ addressType: "IPv4", endpoints: [{ addresses: ["fd00::1"] }, { addresses: [] }] })),
    ).toEqual([
      'endpoints[0].addresses[0]: Invalid value: "fd00::1": must be a valid IPv4 address',
      "endpoints[1].addresses: Required value: must contain at least 1 address",
    ]);
    expect(fields(base({ addressType: "IPv4", endpoints: [], ports: [{ name: "A_B", port: 0 }] }))).toEqual([
      expect.stringMatching(/^ports\[0\]\.name: Invalid value: "A_B"/),
      expect.stringMatching(/^ports\[0\]\.port: Invalid value: 0/),
    ]);
    const old = base({ addressType: "IPv4", endpoints: [] });
    expect(fields(base({ addressType: "IPv6", endpoints: [] }), old)).toEqual([
      'addressType: Invalid value: "IPv6": field is immutable',
    ]);
  });
});
