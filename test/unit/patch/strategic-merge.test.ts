import { describe, expect, it } from "vitest";
import { StatusError } from "../../../api/errors";
import { strategicMergePatch } from "../../../api/patch/strategic-merge";

type Any = any;

function deployment(): Any {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: {
      name: "web",
      labels: { app: "web", tier: "front" },
      annotations: { "kubectl.kubernetes.io/last-applied-configuration": "{}" },
      finalizers: ["a", "b"],
    },
    spec: {
      replicas: 2,
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: "25%", maxUnavailable: "25%" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: {
          containers: [
            {
              name: "web",
              image: "nginx:1.25",
              env: [
                { name: "A", value: "1" },
                { name: "B", value: "2" },
              ],
              ports: [{ containerPort: 80, protocol: "TCP" }],
              args: ["--x", "--y"],
            },
            { name: "sidecar", image: "busybox:1" },
          ],
          volumes: [{ name: "data", emptyDir: {} }],
          tolerations: [{ key: "k1", operator: "Exists" }],
        },
      },
    },
  };
}

function fails(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StatusError);
    return e as StatusError;
  }
  throw new Error("expected a StatusError");
}

describe("strategic merge patch: kubectl apply patches", () => {
  it("changes one container's image, keeping the other and the order", () => {
    const patch = {
      metadata: { annotations: { "kubectl.kubernetes.io/last-applied-configuration": '{"new":true}' } },
      spec: {
        template: {
          spec: {
            "$setElementOrder/containers": [{ name: "web" }, { name: "sidecar" }],
            containers: [{ image: "nginx:1.26", name: "web" }],
          },
        },
      },
    };
    const original = deployment();
    const out = strategicMergePatch(original, patch, "Deployment") as Any;
    const containers = out.spec.template.spec.containers;
    expect(containers.map((c: Any) => c.name)).toEqual(["web", "sidecar"]);
    expect(containers[0].image).toBe("nginx:1.26");
    expect(containers[0].env).toHaveLength(2);
    expect(containers[1]).toEqual({ name: "sidecar", image: "busybox:1" });
    expect(out.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]).toBe('{"new":true}');
    // input untouched
    expect(original).toEqual(deployment());
  });

  it("removes a label with null", () => {
    const out = strategicMergePatch(
      deployment(),
      { metadata: { labels: { tier: null } } },
      "Deployment",
    ) as Any;
    expect(out.metadata.labels).toEqual({ app: "web" });
  });

  it("removes a container and an env var with $patch: delete", () => {
    const patch = {
      spec: {
        template: {
          spec: {
            "$setElementOrder/containers": [{ name: "web" }],
            containers: [
              {
                "$setElementOrder/env": [{ name: "A" }],
                name: "web",
                env: [{ $patch: "delete", name: "B" }],
              },
              { $patch: "delete", name: "sidecar" },
            ],
          },
        },
      },
    };
    const out = strategicMergePatch(deployment(), patch, "Deployment") as Any;
    const containers = out.spec.template.spec.containers;
    expect(containers).toHaveLength(1);
    expect(containers[0].env).toEqual([{ name: "A", value: "1" }]);
  });

  it("adds a container in $setElementOrder position", () => {
    const patch = {
      spec: {
        template: {
          spec: {
            "$setElementOrder/containers": [{ name: "init" }, { name: "web" }, { name: "sidecar" }],
            containers: [{ name: "init", image: "x", env: [{ name: "Z", value: null }] }],
          },
        },
      },
    };
    const out = strategicMergePatch(deployment(), patch, "Deployment") as Any;
    const containers = out.spec.template.spec.containers;
    expect(containers.map((c: Any) => c.name)).toEqual(["init", "web", "sidecar"]);
    expect(containers[0]).toEqual({ name: "init", image: "x", env: [{ name: "Z" }] });
  });

  it("reorders a merging list with $setElementOrder alone", () => {
    const patch = {
      spec: { template: { spec: { "$setElementOrder/containers": [{ name: "sidecar" }, { name: "web" }] } } },
    };
    const out = strategicMergePatch(deployment(), patch, "Deployment") as Any;
    expect(out.spec.template.spec.containers.map((c: Any) => c.name)).toEqual(["sidecar", "web"]);
  });

  it("keeps server-only items next to the items they followed", () => {
    const original = { spec: { containers: [{ name: "a" }, { name: "injected" }, { name: "b" }] } };
    const patch = {
      spec: {
        "$setElementOrder/containers": [{ name: "a" }, { name: "b" }],
        containers: [{ name: "b", image: "b2" }],
      },
    };
    const out = strategicMergePatch(original, patch, "Pod") as Any;
    expect(out.spec.containers).toEqual([{ name: "a" }, { name: "injected" }, { name: "b", image: "b2" }]);
  });

  it("replaces a volume's source with $retainKeys", () => {
    const patch = {
      spec: {
        template: {
          spec: {
            "$setElementOrder/volumes": [{ name: "data" }],
            volumes: [{ $retainKeys: ["configMap", "name"], configMap: { name: "cfg" }, name: "data" }],
          },
        },
      },
    };
    const out = strategicMergePatch(deployment(), patch, "Deployment") as Any;
    expect(out.spec.template.spec.volumes).toEqual([{ name: "data", configMap: { name: "cfg" } }]);
  });

  it("switches the deployment strategy with $retainKeys", () => {
    const patch = { spec: { strategy: { $retainKeys: ["type"], rollingUpdate: null, type: "Recreate" } } };
    const out = strategicMergePatch(deployment(), patch, "Deployment") as Any;
    expect(out.spec.strategy).toEqual({ type: "Recreate" });
  });

  it("rejects a patch whose keys are missing from $retainKeys", () => {
    const patch = { spec: { strategy: { $retainKeys: ["type"], rollingUpdate: { maxSurge: 1 } } } };
    const err = fails(() => strategicMergePatch(deployment(), patch, "Deployment"));
    expect(err.code).toBe(400);
    expect(err.message).toBe("invalid patch format of retainKeys");
  });

  it("merges, deletes from and orders primitive merge lists (finalizers)", () => {
    const add = strategicMergePatch(
      deployment(),
      { metadata: { finalizers: ["c", "a"] } },
      "Deployment",
    ) as Any;
    // upstream order: patch items in patch order, live-only items where the live list had them
    expect(add.metadata.finalizers).toEqual(["c", "a", "b"]);
    const del = strategicMergePatch(
      deployment(),
      { metadata: { "$deleteFromPrimitiveList/finalizers": ["a"], "$setElementOrder/finalizers": ["b"] } },
      "Deployment",
    ) as Any;
    expect(del.metadata.finalizers).toEqual(["b"]);
  });

  it("replaces lists without a merge strategy (args, tolerations)", () => {
    const patch = {
      spec: {
        template: {
          spec: {
            containers: [{ name: "web", args: ["--z"] }],
            tolerations: [{ key: "k2", operator: "Exists" }],
          },
        },
      },
    };
    const out = strategicMergePatch(deployment(), patch, "Deployment") as Any;
    expect(out.spec.template.spec.containers[0].args).toEqual(["--z"]);
    expect(out.spec.template.spec.tolerations).toEqual([{ key: "k2", operator: "Exists" }]);
  });

  it("merges container ports by containerPort and env by name", () => {
    const patch = {
      spec: {
        template: {
          spec: {
            containers: [
              {
                name: "web",
                ports: [{ containerPort: 443 }],
                env: [{ name: "A", value: "one" }],
              },
            ],
          },
        },
      },
    };
    const out = strategicMergePatch(deployment(), patch, "Deployment") as Any;
    const web = out.spec.template.spec.containers[0];
    // a new item lands before live-only items, as upstream's ordering does
    expect(web.ports.map((p: Any) => p.containerPort)).toEqual([443, 80]);
    expect(web.env).toEqual([
      { name: "A", value: "one" },
      { name: "B", value: "2" },
    ]);
  });

  it("merges service ports by port and node conditions by type", () => {
    const svc = { spec: { ports: [{ port: 80, targetPort: 8080 }, { port: 443 }] } };
    const out = strategicMergePatch(
      svc,
      { spec: { ports: [{ port: 80, targetPort: 9090 }] } },
      "Service",
    ) as Any;
    expect(out.spec.ports).toEqual([{ port: 80, targetPort: 9090 }, { port: 443 }]);

    const node = {
      status: {
        conditions: [
          { type: "Ready", status: "False" },
          { type: "MemoryPressure", status: "False" },
        ],
        addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
      },
    };
    const patched = strategicMergePatch(
      node,
      {
        status: {
          conditions: [{ type: "Ready", status: "True" }],
          addresses: [{ type: "Hostname", address: "n1" }],
        },
      },
      "Node",
    ) as Any;
    expect(patched.status.conditions).toEqual([
      { type: "Ready", status: "True" },
      { type: "MemoryPressure", status: "False" },
    ]);
    expect(patched.status.addresses).toHaveLength(2);
  });

  it("replaces node taints (no merge strategy upstream)", () => {
    const node = { spec: { taints: [{ key: "a", effect: "NoSchedule" }] } };
    const out = strategicMergePatch(
      node,
      { spec: { taints: [{ key: "b", effect: "NoExecute" }] } },
      "Node",
    ) as Any;
    expect(out.spec.taints).toEqual([{ key: "b", effect: "NoExecute" }]);
  });

  it("merges ownerReferences by uid", () => {
    const cm = { metadata: { ownerReferences: [{ uid: "1", name: "a" }] } };
    const out = strategicMergePatch(
      cm,
      { metadata: { ownerReferences: [{ uid: "2", name: "b" }] } },
      "ConfigMap",
    ) as Any;
    expect(out.metadata.ownerReferences.map((o: Any) => o.uid)).toEqual(["2", "1"]);
  });

  it("honours $patch: replace on maps and lists", () => {
    const mapReplace = strategicMergePatch(
      deployment(),
      { metadata: { labels: { $patch: "replace", only: "this" } } },
      "Deployment",
    ) as Any;
    expect(mapReplace.metadata.labels).toEqual({ only: "this" });
    const listReplace = strategicMergePatch(
      deployment(),
      { spec: { template: { spec: { containers: [{ $patch: "replace" }, { name: "solo", image: "s" }] } } } },
      "Deployment",
    ) as Any;
    expect(listReplace.spec.template.spec.containers).toEqual([{ name: "solo", image: "s" }]);
  });

  it("empties a map with $patch: delete", () => {
    const out = strategicMergePatch(
      deployment(),
      { metadata: { labels: { $patch: "delete" } } },
      "Deployment",
    ) as Any;
    expect(out.metadata.labels).toEqual({});
  });

  it("config maps merge data keys and delete with null", () => {
    const cm = { data: { a: "1", b: "2" } };
    const out = strategicMergePatch(cm, { data: { b: null, c: "3" } }, "ConfigMap");
    expect(out).toEqual({ data: { a: "1", c: "3" } });
  });

  it("treats unknown kinds as merge-by-map, replace-lists", () => {
    const out = strategicMergePatch(
      { spec: { items: [1, 2], m: { a: 1 } } },
      { spec: { items: [3], m: { b: 2 } } },
      "Widget",
    );
    expect(out).toEqual({ spec: { items: [3], m: { a: 1, b: 2 } } });
  });

  it("reports malformed patches", () => {
    expect(fails(() => strategicMergePatch({}, [1], "Pod")).code).toBe(400);
    const labelled = { metadata: { labels: { a: "b" } } };
    expect(
      fails(() => strategicMergePatch(labelled, { metadata: { labels: { $patch: "bogus" } } }, "Pod")).code,
    ).toBe(500);
    // a directive map for a field the original lacks is dropped, as upstream does
    expect(strategicMergePatch({}, { metadata: { labels: { $patch: "bogus" } } }, "Pod")).toEqual({
      metadata: {},
    });
    const noKey = fails(() =>
      strategicMergePatch(
        { spec: { containers: [{ name: "a" }] } },
        { spec: { containers: [{ image: "x" }] } },
        "Pod",
      ),
    );
    expect(noKey.message).toContain("does not contain declared merge key: name");
    expect(
      fails(() =>
        strategicMergePatch(
          { spec: { containers: [{ name: "a" }] } },
          { spec: { "$setElementOrder/containers": 1 } },
          "Pod",
        ),
      ).code,
    ).toBe(400);
    const lists = fails(() =>
      strategicMergePatch({ metadata: { finalizers: ["a"] } }, { metadata: { finalizers: [["x"]] } }, "Pod"),
    );
    expect(lists.code).toBe(422);
  });

  it("rejects a patch list out of $setElementOrder order", () => {
    const original = { spec: { containers: [{ name: "a" }, { name: "b" }] } };
    const patch = {
      spec: {
        "$setElementOrder/containers": [{ name: "a" }, { name: "b" }],
        containers: [{ name: "b" }, { name: "a" }],
      },
    };
    expect(fails(() => strategicMergePatch(original, patch, "Pod")).message).toContain(
      "doesn't match $setElementOrder list",
    );
  });
});
