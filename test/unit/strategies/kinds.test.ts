import { describe, expect, it } from "vitest";
import { findResource } from "../../../api/strategies";
import type { KubeObject } from "../../../api/types";

const strat = (group: string, resource: string) => findResource(group, "v1", resource)!.strategy;
const meta = { name: "x", namespace: "d" };
const fields = (causes: { field?: string; message?: string }[]) =>
  Object.fromEntries(causes.map((c) => [c.field, c.message]));

describe("deployments", () => {
  const s = strat("apps", "deployments");
  const make = (): KubeObject => ({
    metadata: { ...meta },
    spec: {
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: { containers: [{ name: "c", image: "nginx:1" }] },
      },
    },
  });

  it("defaults like apps/v1", () => {
    const d = make();
    s.defaults!(d);
    expect(d.spec).toMatchObject({
      replicas: 1,
      strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: "25%", maxSurge: "25%" } },
      revisionHistoryLimit: 10,
      progressDeadlineSeconds: 600,
    });
    const tspec = d.spec.template.spec;
    expect(tspec).toMatchObject({
      restartPolicy: "Always",
      dnsPolicy: "ClusterFirst",
      schedulerName: "default-scheduler",
      terminationGracePeriodSeconds: 30,
      securityContext: {},
    });
    expect(tspec.enableServiceLinks).toBeUndefined();
    expect(tspec.containers[0].imagePullPolicy).toBe("IfNotPresent");
    expect(s.validate!(d)).toEqual([]);
    expect(s.generation).toBe(true);
  });

  it("selector must match the template", () => {
    const d = make();
    d.spec.template.metadata.labels = { app: "other" };
    s.defaults!(d);
    expect(s.validate!(d)).toEqual([
      {
        type: "FieldValueInvalid",
        field: "spec.template.metadata.labels",
        message: 'Invalid value: {"app":"other"}: `selector` does not match template `labels`',
      },
    ]);
  });

  it("replicas, selector and strategy rules", () => {
    const d = make();
    s.defaults!(d);
    d.spec.replicas = -1;
    d.spec.strategy.rollingUpdate = { maxUnavailable: 0, maxSurge: 0 };
    delete d.spec.selector;
    const f = fields(s.validate!(d));
    expect(f["spec.replicas"]).toBe("Invalid value: -1: must be greater than or equal to 0");
    expect(f["spec.selector"]).toBe("Required value");
    expect(f["spec.strategy.rollingUpdate.maxUnavailable"]).toBe(
      "Invalid value: 0: may not be 0 when `maxSurge` is 0",
    );
  });

  it("selector is immutable", () => {
    const old = make();
    s.defaults!(old);
    const next = structuredClone(old);
    next.spec.selector = { matchLabels: { app: "web", v: "2" } };
    next.spec.template.metadata.labels = { app: "web", v: "2" };
    expect(fields(s.validate!(next, old))["spec.selector"]).toBe(
      'Invalid value: {"matchLabels":{"app":"web","v":"2"}}: field is immutable',
    );
  });
});

describe("embedded metadata's zero creationTimestamp", () => {
  const template = () => ({
    metadata: { creationTimestamp: null, labels: { app: "web" } },
    spec: { containers: [{ name: "c", image: "nginx:1" }] },
  });
  it("is dropped from pod, job and claim templates, as Go's zero time is no value", () => {
    const d: KubeObject = { metadata: { ...meta }, spec: { template: template() } };
    strat("apps", "deployments").defaults!(d);
    expect(d.spec.template.metadata).toEqual({ labels: { app: "web" } });
    const cj: KubeObject = {
      metadata: { ...meta },
      spec: {
        schedule: "* * * * *",
        jobTemplate: { metadata: { creationTimestamp: null }, spec: { template: template() } },
      },
    };
    findResource("batch", "v1", "cronjobs")!.strategy.defaults!(cj);
    expect(cj.spec.jobTemplate).not.toHaveProperty("metadata");
    expect(cj.spec.jobTemplate.spec.template.metadata).toEqual({ labels: { app: "web" } });
    const sts: KubeObject = {
      metadata: { ...meta },
      spec: {
        template: template(),
        volumeClaimTemplates: [{ metadata: { name: "data", creationTimestamp: null }, spec: {} }],
      },
    };
    strat("apps", "statefulsets").defaults!(sts);
    expect(sts.spec.volumeClaimTemplates[0].metadata).toEqual({ name: "data" });
  });
});

describe("replicasets", () => {
  const s = strat("apps", "replicasets");
  it("defaults replicas and exposes status.replicas", () => {
    const rs: KubeObject = {
      metadata: { ...meta },
      spec: {
        selector: { matchLabels: { a: "b" } },
        template: { metadata: { labels: { a: "b" } }, spec: { containers: [{ name: "c", image: "i" }] } },
      },
    };
    s.defaults!(rs);
    expect(rs.spec.replicas).toBe(1);
    expect(s.validate!(rs)).toEqual([]);
    expect(s.fields!({ ...rs, status: { replicas: 3 } })).toEqual({ "status.replicas": "3" });
  });
});

describe("services", () => {
  const s = strat("", "services");
  it("defaults", () => {
    const svc: KubeObject = {
      metadata: { ...meta },
      spec: { selector: { app: "x" }, ports: [{ port: 80 }] },
    };
    s.defaults!(svc);
    s.prepareForCreate!(svc);
    expect(svc.spec).toEqual({
      selector: { app: "x" },
      ports: [{ port: 80, protocol: "TCP", targetPort: 80 }],
      type: "ClusterIP",
      sessionAffinity: "None",
      internalTrafficPolicy: "Cluster",
      ipFamilyPolicy: "SingleStack",
      ipFamilies: ["IPv4"],
    });
    expect(s.validate!(svc)).toEqual([]);
  });

  it("requires ports, checks ranges and names", () => {
    const svc: KubeObject = {
      metadata: { name: "1bad", namespace: "d" },
      spec: { type: "ClusterIP", ports: [] },
    };
    const f = fields(s.validate!(svc));
    expect(f["spec.ports"]).toBe("Required value");
    expect(f["metadata.name"]).toMatch(/a DNS-1035 label must consist of/);
    const two: KubeObject = {
      metadata: { ...meta },
      spec: {
        type: "ClusterIP",
        ports: [
          { port: 0, protocol: "TCP" },
          { port: 80, protocol: "TCP", name: "http" },
        ],
      },
    };
    const g = fields(s.validate!(two));
    expect(g["spec.ports[0].port"]).toBe("Invalid value: 0: must be between 1 and 65535, inclusive");
    expect(g["spec.ports[0].name"]).toBe("Required value");
  });

  it("cluster IP cannot change", () => {
    const old: KubeObject = {
      metadata: { ...meta },
      spec: {
        type: "ClusterIP",
        clusterIP: "10.96.0.5",
        clusterIPs: ["10.96.0.5"],
        ports: [{ port: 80, protocol: "TCP" }],
      },
    };
    const next = structuredClone(old);
    next.spec.clusterIP = "10.96.0.6";
    next.spec.clusterIPs = ["10.96.0.6"];
    expect(s.validate!(next, old)).toEqual([
      {
        type: "FieldValueInvalid",
        field: "spec.clusterIPs[0]",
        message: 'Invalid value: ["10.96.0.6"]: may not change once set',
      },
    ]);
  });
});

describe("configmaps and secrets", () => {
  it("config keys and size", () => {
    const s = strat("", "configmaps");
    const f = fields(
      s.validate!({ metadata: { ...meta }, data: { "bad key": "v", big: "x".repeat(1024 * 1024 + 1) } }),
    );
    expect(f["data[bad key]"]).toMatch(
      /^Invalid value: "bad key": a valid config key must consist of alphanumeric characters/,
    );
    expect(f[""]).toBe("Too long: may not be more than 1048576 bytes");
  });

  it("immutable configmaps", () => {
    const s = strat("", "configmaps");
    const old = { metadata: { ...meta }, immutable: true, data: { a: "1" } };
    expect(fields(s.validate!({ ...old, data: { a: "2" } }, old)).data).toBe(
      "Forbidden: field is immutable when `immutable` is set",
    );
  });

  it("secret type default, required keys, field", () => {
    const s = strat("", "secrets");
    const sec: KubeObject = { metadata: { ...meta }, data: {} };
    s.defaults!(sec);
    expect(sec.type).toBe("Opaque");
    expect(s.fields!(sec)).toEqual({ type: "Opaque" });
    const tls = { metadata: { ...meta }, type: "kubernetes.io/tls", data: { "tls.crt": "YQ==" } };
    expect(s.validate!(tls)).toEqual([
      { type: "FieldValueRequired", field: "data[tls.key]", message: "Required value" },
    ]);
    expect(fields(s.validate!({ ...sec, type: "Other" }, sec)).type).toBe(
      'Invalid value: "Other": field is immutable',
    );
  });
});

describe("namespaces", () => {
  const s = strat("", "namespaces");
  it("labels, finalizers and phase", () => {
    const ns: KubeObject = { metadata: { name: "team-a" } };
    s.defaults!(ns);
    s.prepareForCreate!(ns);
    expect(ns.metadata.labels).toEqual({ "kubernetes.io/metadata.name": "team-a" });
    expect(ns.spec).toEqual({ finalizers: ["kubernetes"] });
    expect(ns.status).toEqual({ phase: "Active" });
    expect(s.validate!(ns)).toEqual([]);
    expect(s.fields!(ns)).toEqual({ "status.phase": "Active" });
  });
  it("names are DNS labels", () => {
    expect(fields(s.validate!({ metadata: { name: "a.b" } }))["metadata.name"]).toMatch(
      /^Invalid value: "a.b": a lowercase RFC 1123 label/,
    );
  });
});

describe("nodes", () => {
  it("allocatable follows capacity; unschedulable field", () => {
    const s = strat("", "nodes");
    const n: KubeObject = { metadata: { name: "n1" }, status: { capacity: { cpu: "2" } } };
    s.defaults!(n);
    expect(n.status.allocatable).toEqual({ cpu: "2" });
    expect(s.fields!(n)).toEqual({ "spec.unschedulable": "false" });
    expect(s.validate!(n)).toEqual([]);
  });
});

describe("events", () => {
  const s = strat("", "events");
  const ev: KubeObject = {
    metadata: { name: "e1", namespace: "d" },
    involvedObject: {
      kind: "Pod",
      name: "web",
      namespace: "d",
      uid: "u1",
      apiVersion: "v1",
      fieldPath: "spec.containers{c}",
    },
    reason: "Pulled",
    type: "Normal",
    source: { component: "kubelet" },
  };
  it("field selectors", () => {
    expect(s.fields!(ev)).toMatchObject({
      "involvedObject.kind": "Pod",
      "involvedObject.name": "web",
      "involvedObject.uid": "u1",
      "involvedObject.fieldPath": "spec.containers{c}",
      reason: "Pulled",
      source: "kubelet",
      type: "Normal",
    });
  });
  it("namespace must match the involved object", () => {
    expect(s.validate!(ev)).toEqual([]);
    const bad = { ...ev, involvedObject: { ...ev.involvedObject, namespace: "other" } };
    expect(s.validate!(bad)).toEqual([
      {
        type: "FieldValueInvalid",
        field: "involvedObject.namespace",
        message: 'Invalid value: "other": does not match event.namespace',
      },
    ]);
  });
  it("events.k8s.io requires reporting fields", () => {
    const s2 = strat("events.k8s.io", "events");
    const f = fields(
      s2.validate!({
        apiVersion: "events.k8s.io/v1",
        metadata: { name: "e", namespace: "d" },
        eventTime: "2026-01-01T00:00:00.000000Z",
        regarding: { namespace: "d" },
        type: "Bad",
      }),
    );
    expect(f).toMatchObject({
      reportingController: "Required value",
      reportingInstance: "Required value",
      action: "Required value",
      reason: "Required value",
      type: 'Invalid value: "": has invalid value: Bad',
    });
  });
});

describe("rbac", () => {
  it("rules need verbs", () => {
    const s = strat("rbac.authorization.k8s.io", "roles");
    expect(s.validate!({ metadata: { ...meta }, rules: [{ apiGroups: [""], resources: ["pods"] }] })).toEqual(
      [
        {
          type: "FieldValueRequired",
          field: "rules[0].verbs",
          message: "Required value: verbs must contain at least one value",
        },
      ],
    );
  });
  it("cluster role names may contain colons", () => {
    const s = strat("rbac.authorization.k8s.io", "clusterroles");
    expect(
      s.validate!({
        metadata: { name: "system:node" },
        rules: [{ verbs: ["get"], nonResourceURLs: ["/healthz"] }],
      }),
    ).toEqual([]);
  });
  it("binding defaults and checks", () => {
    const s = strat("rbac.authorization.k8s.io", "clusterrolebindings");
    const b: KubeObject = {
      metadata: { name: "b" },
      roleRef: { kind: "ClusterRole", name: "view" },
      subjects: [
        { kind: "User", name: "bob" },
        { kind: "ServiceAccount", name: "sa" },
      ],
    };
    s.defaults!(b);
    expect(b.roleRef.apiGroup).toBe("rbac.authorization.k8s.io");
    expect(b.subjects[0].apiGroup).toBe("rbac.authorization.k8s.io");
    expect(b.subjects[1].apiGroup).toBe("");
    expect(s.validate!(b)).toEqual([
      { type: "FieldValueRequired", field: "subjects[1].namespace", message: "Required value" },
    ]);
    const changed = { ...b, roleRef: { ...b.roleRef, name: "edit" } };
    expect(fields(s.validate!(changed, b)).roleRef).toMatch(/cannot change roleRef$/);
  });
});

describe("leases and reviews", () => {
  it("lease duration must be positive", () => {
    const s = strat("coordination.k8s.io", "leases");
    expect(s.validate!({ metadata: { ...meta }, spec: { leaseDurationSeconds: 0 } })).toEqual([
      {
        type: "FieldValueInvalid",
        field: "spec.leaseDurationSeconds",
        message: "Invalid value: 0: must be greater than 0",
      },
    ]);
  });
  it("access reviews need exactly one attribute set", () => {
    const s = strat("authorization.k8s.io", "selfsubjectaccessreviews");
    expect(
      s.validate!({ metadata: {}, spec: { resourceAttributes: { verb: "get", resource: "pods" } } }),
    ).toEqual([]);
    expect(s.validate!({ metadata: {}, spec: {} })[0].field).toBe("spec.resourceAttributes");
  });
});

describe("limit ranges", () => {
  it("container defaults come from max", () => {
    const s = strat("", "limitranges");
    const lr: KubeObject = {
      metadata: { ...meta },
      spec: { limits: [{ type: "Container", max: { cpu: "1" }, min: { memory: "1Mi" } }] },
    };
    s.defaults!(lr);
    expect(lr.spec.limits[0].default).toEqual({ cpu: "1" });
    expect(lr.spec.limits[0].defaultRequest).toEqual({ cpu: "1", memory: "1Mi" });
  });
});

describe("scale", () => {
  it("shows a deployment as autoscaling/v1 Scale", async () => {
    const { scaleOf, validateScale } = await import("../../../api/strategies/workloads");
    const d: KubeObject = {
      metadata: { name: "web", namespace: "d", uid: "u", resourceVersion: "7" },
      spec: { replicas: 3, selector: { matchLabels: { app: "web" } } },
      status: { replicas: 2 },
    };
    expect(scaleOf(d)).toEqual({
      apiVersion: "autoscaling/v1",
      kind: "Scale",
      metadata: { name: "web", namespace: "d", uid: "u", resourceVersion: "7", creationTimestamp: undefined },
      spec: { replicas: 3 },
      status: { replicas: 2, selector: "app=web" },
    });
    expect(validateScale({ metadata: {}, spec: { replicas: -1 } })[0].message).toBe(
      "Invalid value: -1: must be greater than or equal to 0",
    );
  });
});

describe("event conversion", () => {
  it("renames fields between core/v1 and events.k8s.io/v1", async () => {
    const { toCoreEvent, toEventsV1 } = await import("../../../api/strategies/events");
    const core: KubeObject = {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: "e", namespace: "d" },
      involvedObject: { kind: "Pod", name: "web" },
      message: "hi",
      source: { component: "kubelet" },
      count: 2,
      reason: "Pulled",
      reportingComponent: "kubelet",
    };
    const v1 = toEventsV1(core);
    expect(v1).toEqual({
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { name: "e", namespace: "d" },
      regarding: { kind: "Pod", name: "web" },
      note: "hi",
      deprecatedSource: { component: "kubelet" },
      deprecatedCount: 2,
      reason: "Pulled",
      reportingController: "kubelet",
    });
    expect(toCoreEvent(v1)).toEqual(core);
  });
});
