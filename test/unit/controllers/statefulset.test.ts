import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../api/types";
import { statefulSetController } from "../../../durable-objects/controllers/statefulset/controller";
import { FakeCluster } from "./fake";

function sts(name: string, replicas: number, spec: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name, namespace: "default", uid: `uid-${name}`, generation: 1 },
    spec: {
      replicas,
      serviceName: name,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "c", image: "busybox" }] },
      },
      updateStrategy: { type: "RollingUpdate" },
      ...spec,
    },
  };
}

describe("statefulset controller", () => {
  it("Parallel: makes every missing pod in one sync, and the rolling update reads them", async () => {
    const c = new FakeCluster();
    c.add("apps/statefulsets", sts("par", 3, { podManagementPolicy: "Parallel" }));
    // a sync that throws anything but an API error fails the run
    await c.run([statefulSetController], 3);
    const made = c.writes
      .filter((w) => w.verb === "create" && w.res === "/pods")
      .map((w) => w.body.metadata.name);
    expect(made.sort()).toEqual(["par-0", "par-1", "par-2"]);
  });
});
