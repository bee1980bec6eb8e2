import { describe, expect, it } from "vitest";
import { compareObjects } from "../../../api/patch/field-walk";
import { fieldsToSet, isEmpty, keyPE, members, pathString, setToFields } from "../../../api/patch/fieldset";
import {
  MAX_UPDATE_MANAGERS,
  managedFieldsAside,
  recordUpdate,
  stripIgnored,
} from "../../../api/patch/managed-fields";
import { rootSchema } from "../../../api/patch/patch-meta";
import type { KubeObject } from "../../../api/types";

const T1 = "2026-01-01T00:00:00Z";
const T2 = "2026-01-01T00:05:00Z";

function created(): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: "default", uid: "u1", resourceVersion: "1", labels: { app: "web" } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: "web" } },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: "25%" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: { containers: [{ name: "web", image: "nginx", resources: {} }], restartPolicy: "Always" },
      },
    },
    status: { replicas: 0 },
  };
}

describe("managedFields for ordinary writes", () => {
  it("records a create like upstream: maps and items are members, non-pointer structs are not", () => {
    const obj = created();
    recordUpdate(undefined, obj, { manager: "kubectl-create", kind: "Deployment", now: T1 });
    expect(obj.metadata.managedFields).toEqual([
      {
        manager: "kubectl-create",
        operation: "Update",
        apiVersion: "apps/v1",
        time: T1,
        fieldsType: "FieldsV1",
        fieldsV1: {
          "f:metadata": { "f:labels": { ".": {}, "f:app": {} } },
          "f:spec": {
            "f:replicas": {},
            "f:selector": {},
            "f:strategy": { "f:rollingUpdate": { ".": {}, "f:maxSurge": {} }, "f:type": {} },
            "f:template": {
              "f:metadata": { "f:labels": { ".": {}, "f:app": {} } },
              "f:spec": {
                "f:containers": {
                  'k:{"name":"web"}': { ".": {}, "f:image": {}, "f:name": {}, "f:resources": {} },
                },
                "f:restartPolicy": {},
              },
            },
          },
        },
      },
    ]);
  });

  it("moves changed fields to the writer and drops removed ones", () => {
    const obj = created();
    recordUpdate(undefined, obj, { manager: "kubectl-create", kind: "Deployment", now: T1 });
    const edited: KubeObject = structuredClone(obj);
    edited.spec.template.spec.containers[0].image = "nginx:2";
    edited.metadata.labels = { app: "web", extra: "x" };
    delete edited.spec.template.spec.restartPolicy;
    recordUpdate(obj, edited, { manager: "kubectl-edit", kind: "Deployment", now: T2 });
    const [create, edit] = edited.metadata.managedFields ?? [];
    expect(create.manager).toBe("kubectl-create");
    expect(edit.manager).toBe("kubectl-edit");
    expect(edit.time).toBe(T2);
    expect(edit.fieldsV1).toEqual({
      "f:metadata": { "f:labels": { "f:extra": {} } },
      "f:spec": { "f:template": { "f:spec": { "f:containers": { 'k:{"name":"web"}': { "f:image": {} } } } } },
    });
    const createPaths = members(fieldsToSet(create.fieldsV1)).map(pathString);
    expect(createPaths).not.toContain('.spec.template.spec.containers[name="web"].image');
    expect(createPaths).not.toContain(".spec.template.spec.restartPolicy");
    expect(createPaths).toContain('.spec.template.spec.containers[name="web"].name');
  });

  it("leaves managedFields alone when a write changes nothing", () => {
    const obj = created();
    recordUpdate(undefined, obj, { manager: "a", kind: "Deployment", now: T1 });
    const same: KubeObject = structuredClone(obj);
    recordUpdate(obj, same, { manager: "b", kind: "Deployment", now: T2 });
    expect(same.metadata.managedFields).toEqual(obj.metadata.managedFields);
  });

  it("merges repeated writes by the same manager into one entry", () => {
    const obj = created();
    recordUpdate(undefined, obj, { manager: "a", kind: "Deployment", now: T1 });
    const next: KubeObject = structuredClone(obj);
    next.spec.replicas = 3;
    recordUpdate(obj, next, { manager: "a", kind: "Deployment", now: T2 });
    expect(next.metadata.managedFields).toHaveLength(1);
    expect(next.metadata.managedFields?.[0].time).toBe(T2);
  });

  it("tracks only status on the status subresource, and never status on the main resource", () => {
    const obj = created();
    recordUpdate(undefined, obj, { manager: "kubectl-create", kind: "Deployment", now: T1 });
    const create = obj.metadata.managedFields?.[0].fieldsV1 as Record<string, unknown>;
    expect(create["f:status"]).toBeUndefined();
    const withStatus: KubeObject = structuredClone(obj);
    withStatus.status = { replicas: 1, readyReplicas: 1 };
    withStatus.spec.replicas = 9; // ignored on the status subresource
    recordUpdate(obj, withStatus, {
      manager: "kube-controller-manager",
      subresource: "status",
      kind: "Deployment",
      now: T2,
    });
    const entry = withStatus.metadata.managedFields?.find((e) => e.manager === "kube-controller-manager");
    expect(entry?.subresource).toBe("status");
    expect(entry?.fieldsV1).toEqual({ "f:status": { "f:readyReplicas": {}, "f:replicas": {} } });
  });

  it("an explicit empty managedFields list resets tracking", () => {
    const obj = created();
    recordUpdate(undefined, obj, { manager: "a", kind: "Deployment", now: T1 });
    const next: KubeObject = structuredClone(obj);
    next.metadata.managedFields = [];
    next.spec.replicas = 4;
    recordUpdate(obj, next, { manager: "b", kind: "Deployment", now: T2 });
    expect(next.metadata.managedFields).toBeUndefined();
  });

  it("does not start tracking on an update of an untracked object", () => {
    const obj = created();
    const next: KubeObject = structuredClone(obj);
    next.spec.replicas = 4;
    recordUpdate(obj, next, { manager: "b", kind: "Deployment", now: T2 });
    expect(next.metadata.managedFields).toBeUndefined();
  });

  it("caps Update entries, folding the oldest into ancient-changes", () => {
    let obj: KubeObject = created();
    recordUpdate(undefined, obj, { manager: "m0", kind: "Deployment", now: T1 });
    for (let i = 1; i <= MAX_UPDATE_MANAGERS + 1; i++) {
      const next: KubeObject = structuredClone(obj);
      next.metadata.labels = { ...next.metadata.labels, [`l${i}`]: "x" };
      recordUpdate(obj, next, {
        manager: `m${i}`,
        kind: "Deployment",
        now: `2026-01-01T00:${String(i).padStart(2, "0")}:00Z`,
      });
      obj = next;
    }
    const managers = obj.metadata.managedFields?.map((e) => e.manager) ?? [];
    expect(managers).toHaveLength(MAX_UPDATE_MANAGERS);
    expect(managers).toContain("ancient-changes");
    expect(managers).not.toContain("m0");
    expect(managers).not.toContain("m1");
  });

  it("round-trips FieldsV1 with members that have children", () => {
    const fields = {
      "f:metadata": { "f:labels": { ".": {}, "f:app": {} }, "f:finalizers": { 'v:"x"': {} } },
      "f:spec": { "f:containers": { 'k:{"name":"web"}': { ".": {}, "f:image": {} } } },
    };
    expect(setToFields(fieldsToSet(fields))).toEqual(fields);
    expect(members(fieldsToSet(fields)).map(pathString)).toEqual([
      '.metadata.finalizers[="x"]',
      ".metadata.labels",
      ".metadata.labels.app",
      '.spec.containers[name="web"]',
      '.spec.containers[name="web"].image',
    ]);
  });
});

describe("recordUpdate never refuses a write", () => {
  it("drops managed fields when the object cannot be tracked", () => {
    const obj = created();
    recordUpdate(undefined, obj, { manager: "a", kind: "Deployment", now: T1 });
    const broken: KubeObject = structuredClone(obj);
    broken.spec.template.spec.containers.push({ image: "no-name" });
    expect(() => recordUpdate(obj, broken, { manager: "b", kind: "Deployment", now: T2 })).not.toThrow();
    expect(broken.metadata.managedFields).toBeUndefined();
  });
});

describe("fieldManagerFor", () => {
  it("prefers ?fieldManager and falls back to the user agent prefix", async () => {
    const { fieldManagerFor } = await import("../../../api/patch/managed-fields");
    expect(fieldManagerFor("kubectl-edit", "kubectl/v1.32.0")).toBe("kubectl-edit");
    expect(fieldManagerFor(undefined, "kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9")).toBe("kubectl");
    expect(fieldManagerFor("", "kube-controller-manager/v1.32.0")).toBe("kube-controller-manager");
    expect(fieldManagerFor(undefined, `a\u0000b${"x".repeat(200)}`)).toHaveLength(128);
  });
});

describe("a create's managed fields in one pass", () => {
  // The reference: the general walk (compare against nothing, strip, encode), which the
  // create path used to take and updates still take.
  function reference(obj: KubeObject): Record<string, unknown> | undefined {
    const schema = rootSchema(obj.kind ?? "");
    const { changed } = compareObjects(undefined, managedFieldsAside(obj) as never, schema);
    const set = stripIgnored(changed);
    return isEmpty(set) ? undefined : setToFields(set);
  }
  const pod = (): KubeObject => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: "p",
      namespace: "default",
      uid: "u",
      labels: { b: "2", a: "1" },
      annotations: { "x/y": "z" },
      ownerReferences: [{ apiVersion: "v1", kind: "ReplicaSet", name: "rs", uid: "r1", controller: true }],
      finalizers: ["b/x", "a/y"],
    },
    spec: {
      containers: [
        {
          name: "web",
          image: "nginx",
          ports: [{ containerPort: 80 }, { containerPort: 53, protocol: "UDP" }],
          env: [
            { name: "A", value: "1" },
            { name: "B", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
          ],
          resources: { limits: { cpu: "1" } },
          securityContext: {},
          command: ["sh", "-c"],
        },
        { name: "side", image: "busybox" },
      ],
      volumes: [{ name: "v", emptyDir: {} }],
      tolerations: [{ key: "k", operator: "Exists" }],
      nodeSelector: { zone: "a" },
      securityContext: {},
      affinity: null,
      dnsPolicy: "ClusterFirst",
    },
    status: { phase: "Pending" },
  });
  const cases: [string, KubeObject][] = [
    ["a pod with keyed lists, sets, maps, empty structs and a null", pod()],
    ["a deployment", created()],
    [
      "a service",
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "s", namespace: "default" },
        spec: {
          selector: { app: "a" },
          ports: [
            { port: 80, targetPort: 8080 },
            { port: 443, protocol: "TCP" },
          ],
        },
      },
    ],
    [
      "a configmap",
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { k: "v", a: "" } },
    ],
    ["an object with identity fields only", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } }],
  ];
  for (const [what, obj] of cases) {
    it(`matches the general walk for ${what}`, () => {
      const want = reference(obj);
      const o = structuredClone(obj);
      recordUpdate(undefined, o, { manager: "m", kind: obj.kind ?? "", now: T1 });
      expect(o.metadata.managedFields?.[0]?.fieldsV1).toEqual(want);
      expect(JSON.stringify(o.metadata.managedFields?.[0]?.fieldsV1)).toBe(JSON.stringify(want));
      expect(o.metadata.managedFields?.length ?? 0).toBe(want ? 1 : 0);
    });
  }

  it("takes the general walk for a list with two items of one key (merged there)", () => {
    const o = pod();
    o.spec.volumes = [
      { name: "v", emptyDir: {} },
      { name: "v", hostPath: { path: "/x" } },
    ];
    const want = reference(o);
    recordUpdate(undefined, o, { manager: "m", kind: "Pod", now: T1 });
    expect(o.metadata.managedFields?.[0]?.fieldsV1).toEqual(want);
    expect((want as Record<string, any>)["f:spec"]["f:volumes"]['k:{"name":"v"}']).toHaveProperty(
      "f:hostPath",
    );
  });

  it("drops managed fields, as before, when an item lacks its key", () => {
    const o = pod();
    o.spec.containers.push({ image: "nameless" });
    recordUpdate(undefined, o, { manager: "m", kind: "Pod", now: T1 });
    expect(o.metadata.managedFields).toBeUndefined();
  });
});

describe("keyPE", () => {
  it("writes one key field as JSON, and several in name order", () => {
    expect(keyPE({ name: 'a"b' })).toBe(`k:${JSON.stringify({ name: 'a"b' })}`);
    expect(keyPE({ port: { x: [1, "y"] } })).toBe('k:{"port":{"x":[1,"y"]}}');
    expect(keyPE({ protocol: "TCP", containerPort: 80 })).toBe('k:{"containerPort":80,"protocol":"TCP"}');
  });
});

describe("managedFieldsAside", () => {
  it("reads as the object without managedFields and leaves the object as it was", () => {
    const obj = created();
    recordUpdate(undefined, obj, { manager: "a", kind: "Deployment", now: T1 });
    const before = structuredClone(obj);
    const aside = managedFieldsAside(obj);
    const { managedFields: _, ...metadata } = before.metadata;
    expect(aside).toEqual({ ...before, metadata });
    expect(aside.metadata.managedFields).toBeUndefined();
    expect(obj).toStrictEqual(before);
    const bare = created();
    expect(managedFieldsAside(bare)).toBe(bare);
  });
});
