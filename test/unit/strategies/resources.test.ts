import { describe, expect, it } from "vitest";
import { findByKind, findResource, RESOURCES, resolveShortName, translateAge } from "../../../api/strategies";
import type { KubeObject } from "../../../api/types";

describe("discovery facts", () => {
  it("serves every required resource once", () => {
    const keys = RESOURCES.map((r) => `${r.group}/${r.version}/${r.resource}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (const k of [
      "/v1/namespaces",
      "/v1/pods",
      "/v1/nodes",
      "/v1/configmaps",
      "/v1/secrets",
      "/v1/serviceaccounts",
      "/v1/events",
      "/v1/limitranges",
      "/v1/resourcequotas",
      "/v1/services",
      "/v1/endpoints",
      "/v1/podtemplates",
      "apps/v1/deployments",
      "apps/v1/replicasets",
      "coordination.k8s.io/v1/leases",
      "events.k8s.io/v1/events",
      "rbac.authorization.k8s.io/v1/roles",
      "rbac.authorization.k8s.io/v1/clusterroles",
      "rbac.authorization.k8s.io/v1/rolebindings",
      "rbac.authorization.k8s.io/v1/clusterrolebindings",
      "authorization.k8s.io/v1/selfsubjectaccessreviews",
      "authorization.k8s.io/v1/selfsubjectrulesreviews",
      "authorization.k8s.io/v1/subjectaccessreviews",
      "authentication.k8s.io/v1/tokenreviews",
      "authentication.k8s.io/v1/selfsubjectreviews",
    ])
      expect(keys).toContain(k);
  });

  it("short names, categories and scopes", () => {
    const short = Object.fromEntries(
      RESOURCES.filter((r) => r.shortNames).map((r) => [`${r.group}/${r.resource}`, r.shortNames]),
    );
    expect(short).toMatchObject({
      "/pods": ["po"],
      "/namespaces": ["ns"],
      "/nodes": ["no"],
      "/configmaps": ["cm"],
      "/services": ["svc"],
      "/endpoints": ["ep"],
      "/serviceaccounts": ["sa"],
      "/events": ["ev"],
      "/limitranges": ["limits"],
      "/resourcequotas": ["quota"],
      "apps/deployments": ["deploy"],
      "apps/replicasets": ["rs"],
      "events.k8s.io/events": ["ev"],
    });
    const all = RESOURCES.filter((r) => r.categories?.includes("all"))
      .map((r) => `${r.resource}${r.group ? `.${r.group}/${r.version}` : ""}`)
      .sort();
    expect(all).toEqual([
      "cronjobs.batch/v1",
      "daemonsets.apps/v1",
      "deployments.apps/v1",
      // kubectl get all asks the group's preferred version, v2
      "horizontalpodautoscalers.autoscaling/v1",
      "horizontalpodautoscalers.autoscaling/v2",
      "jobs.batch/v1",
      "pods",
      "replicasets.apps/v1",
      "replicationcontrollers",
      "services",
      "statefulsets.apps/v1",
    ]);
    expect(findResource("", "v1", "nodes")?.namespaced).toBe(false);
    expect(findResource("rbac.authorization.k8s.io", "v1", "clusterroles")?.namespaced).toBe(false);
    expect(findResource("authorization.k8s.io", "v1", "selfsubjectaccessreviews")?.verbs).toEqual(["create"]);
    expect(findResource("", "v1", "namespaces")?.verbs).not.toContain("deletecollection");
  });

  it("subresource kinds", () => {
    expect(findResource("apps", "v1", "deployments")?.subresources?.scale).toEqual({
      kind: "Scale",
      group: "autoscaling",
      version: "v1",
      verbs: ["get", "patch", "update"],
    });
    const pods = findResource("", "v1", "pods")!.subresources!;
    expect(pods.binding.kind).toBe("Binding");
    expect(pods.eviction).toMatchObject({ kind: "Eviction", group: "policy", version: "v1" });
    expect(Object.keys(pods)).toEqual(
      expect.arrayContaining(["status", "log", "exec", "attach", "portforward"]),
    );
    expect(findResource("", "v1", "serviceaccounts")?.subresources?.token).toMatchObject({
      kind: "TokenRequest",
      group: "authentication.k8s.io",
    });
    expect(findResource("", "v1", "nodes")?.subresources?.proxy.kind).toBe("NodeProxyOptions");
  });

  it("lookups", () => {
    expect(findByKind("apps/v1", "Deployment")?.resource).toBe("deployments");
    expect(findByKind("events.k8s.io/v1", "Event")?.group).toBe("events.k8s.io");
    expect(resolveShortName("deploy").map((r) => r.resource)).toEqual(["deployments"]);
    expect(resolveShortName("ev").map((r) => r.group)).toEqual(["", "events.k8s.io"]);
    expect(resolveShortName("events.events.k8s.io").map((r) => r.group)).toEqual(["events.k8s.io"]);
  });

  it("every resource's columns start with Name or are the event columns", () => {
    for (const r of RESOURCES) {
      const cols = r.strategy.columns;
      if (!cols) continue;
      expect(
        cols.some((c) => c.name === "Name"),
        r.resource,
      ).toBe(true);
    }
  });
});

describe("translateAge", () => {
  const t0 = Date.parse("2026-01-01T00:00:00Z");
  const at = (ms: number) => translateAge("2026-01-01T00:00:00Z", t0 + ms);
  it("matches apimachinery's HumanDuration", () => {
    expect(at(5_000)).toBe("5s");
    expect(at(119_000)).toBe("119s");
    expect(at(200_000)).toBe("3m20s");
    expect(at(180_000)).toBe("3m");
    expect(at(15 * 60_000)).toBe("15m");
    expect(at(179 * 60_000)).toBe("179m");
    expect(at(5 * 3600_000 + 3 * 60_000)).toBe("5h3m");
    expect(at(20 * 3600_000)).toBe("20h");
    expect(at(48 * 3600_000)).toBe("2d");
    expect(at(50 * 3600_000)).toBe("2d2h");
    expect(at(30 * 86400_000)).toBe("30d");
    expect(at((365 * 3 + 45) * 86400_000)).toBe("3y45d");
    expect(at(-500)).toBe("0s");
    expect(at(-5000)).toBe("<invalid>");
    expect(translateAge(undefined, t0)).toBe("<unknown>");
  });
});

describe("tables for other kinds", () => {
  const now = Date.parse("2026-01-01T01:00:00Z");
  const meta = { name: "x", namespace: "d", creationTimestamp: "2026-01-01T00:00:00Z" };
  const cells = (resource: string, obj: KubeObject, group = "") =>
    findResource(group, "v1", resource)!
      .strategy.columns!.filter((c) => c.priority === 0)
      .map((c) => c.cell(obj, now));

  it("deployments and replicasets", () => {
    const d = {
      metadata: meta,
      spec: {
        replicas: 3,
        selector: { matchLabels: { app: "x" } },
        template: { spec: { containers: [{ name: "a", image: "i" }] } },
      },
      status: { readyReplicas: 2, updatedReplicas: 3, availableReplicas: 2 },
    };
    expect(cells("deployments", d, "apps")).toEqual(["x", "2/3", 3, 2, "60m"]);
    const wide = findResource("apps", "v1", "deployments")!
      .strategy.columns!.filter((c) => c.priority === 1)
      .map((c) => c.cell(d, now));
    expect(wide).toEqual(["a", "i", "app=x"]);
    expect(
      cells(
        "replicasets",
        { metadata: meta, spec: { replicas: 2 }, status: { replicas: 2, readyReplicas: 1 } },
        "apps",
      ),
    ).toEqual(["x", 2, 2, 1, "60m"]);
  });

  it("services", () => {
    const svc = {
      metadata: meta,
      spec: {
        type: "NodePort",
        clusterIPs: ["10.96.0.10"],
        ports: [
          { port: 80, nodePort: 30080, protocol: "TCP" },
          { port: 53, protocol: "UDP" },
        ],
      },
    };
    expect(cells("services", svc)).toEqual([
      "x",
      "NodePort",
      "10.96.0.10",
      "<none>",
      "80:30080/TCP,53/UDP",
      "60m",
    ]);
    const lb = { metadata: meta, spec: { type: "LoadBalancer", clusterIP: "10.96.0.11", ports: [] } };
    expect(cells("services", lb).slice(2, 5)).toEqual(["10.96.0.11", "<pending>", "<none>"]);
  });

  it("nodes, namespaces, configmaps, secrets, serviceaccounts, endpoints, leases", () => {
    const node = {
      metadata: { ...meta, labels: { "node-role.kubernetes.io/control-plane": "" } },
      spec: { unschedulable: true },
      status: { conditions: [{ type: "Ready", status: "True" }], nodeInfo: { kubeletVersion: "v1.32.0" } },
    };
    expect(cells("nodes", node)).toEqual([
      "x",
      "Ready,SchedulingDisabled",
      "control-plane",
      "60m",
      "v1.32.0",
    ]);
    expect(cells("namespaces", { metadata: meta, status: { phase: "Active" } })).toEqual([
      "x",
      "Active",
      "60m",
    ]);
    expect(cells("configmaps", { metadata: meta, data: { a: "1" }, binaryData: { b: "AA==" } })).toEqual([
      "x",
      2,
      "60m",
    ]);
    expect(cells("secrets", { metadata: meta, type: "Opaque", data: { a: "MQ==" } })).toEqual([
      "x",
      "Opaque",
      1,
      "60m",
    ]);
    expect(cells("serviceaccounts", { metadata: meta })).toEqual(["x", 0, "60m"]);
    const ep = {
      metadata: meta,
      subsets: [
        { addresses: [{ ip: "10.0.0.1" }, { ip: "10.0.0.2" }], ports: [{ port: 80 }, { port: 443 }] },
      ],
    };
    expect(cells("endpoints", ep)).toEqual(["x", "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...", "60m"]);
    expect(
      cells("leases", { metadata: meta, spec: { holderIdentity: "me" } }, "coordination.k8s.io"),
    ).toEqual(["x", "me", "60m"]);
  });

  it("events", () => {
    const ev = {
      metadata: meta,
      involvedObject: { kind: "Pod", name: "web", namespace: "d" },
      reason: "Scheduled",
      message: "Successfully assigned d/web to n1 ",
      type: "Normal",
      firstTimestamp: "2026-01-01T00:30:00Z",
      lastTimestamp: "2026-01-01T00:55:00Z",
      count: 1,
    };
    expect(cells("events", ev)).toEqual([
      "5m",
      "Normal",
      "Scheduled",
      "pod/web",
      "Successfully assigned d/web to n1",
    ]);
    const v1 = {
      apiVersion: "events.k8s.io/v1",
      metadata: meta,
      regarding: { kind: "Pod", name: "web" },
      note: "hi",
      type: "Warning",
      reason: "R",
      eventTime: "2026-01-01T00:58:00.000000Z",
    };
    expect(cells("events", v1, "events.k8s.io")).toEqual(["2m", "Warning", "R", "pod/web", "hi"]);
  });

  it("rbac", () => {
    const rb = {
      metadata: meta,
      roleRef: { kind: "ClusterRole", name: "view" },
      subjects: [
        { kind: "ServiceAccount", name: "sa", namespace: "d" },
        { kind: "User", name: "bob" },
      ],
    };
    const all = findResource("rbac.authorization.k8s.io", "v1", "rolebindings")!.strategy.columns!.map((c) =>
      c.cell(rb, now),
    );
    expect(all).toEqual(["x", "ClusterRole/view", "60m", "bob", "", "d/sa"]);
    expect(cells("clusterroles", { metadata: meta }, "rbac.authorization.k8s.io")).toEqual([
      "x",
      "2026-01-01T00:00:00Z",
    ]);
  });
});
