import { describe, expect, it } from "vitest";
import { StatusError } from "../../../api/errors";
import { applyPatch } from "../../../api/patch/apply";
import { recordUpdate } from "../../../api/patch/managed-fields";
import type { KubeObject } from "../../../api/types";

const T1 = "2026-01-01T00:00:00Z";
const T2 = "2026-01-01T00:01:00.123Z";
const T3 = "2026-01-01T00:02:00Z";

function config(image = "nginx:1.25", extra: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: "default", labels: { app: "web", ...extra } },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: { containers: [{ name: "web", image }] },
      },
    },
  };
}

const kubectl = (now: string, force = false) => ({ manager: "kubectl", force, kind: "Deployment", now });

function conflictOf(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StatusError);
    return e as StatusError;
  }
  throw new Error("expected a conflict");
}

describe("server-side apply", () => {
  it("creates with an Apply entry in upstream's FieldsV1 shape", () => {
    const out = applyPatch(undefined, config(), kubectl(T1));
    expect(out.spec.template.spec.containers).toEqual([{ name: "web", image: "nginx:1.25" }]);
    expect(out.metadata.managedFields).toEqual([
      {
        manager: "kubectl",
        operation: "Apply",
        apiVersion: "apps/v1",
        time: T1,
        fieldsType: "FieldsV1",
        fieldsV1: {
          "f:metadata": { "f:labels": { "f:app": {} } },
          "f:spec": {
            "f:replicas": {},
            "f:selector": {},
            "f:template": {
              "f:metadata": { "f:labels": { "f:app": {} } },
              "f:spec": {
                "f:containers": { 'k:{"name":"web"}': { ".": {}, "f:image": {}, "f:name": {} } },
              },
            },
          },
        },
      },
    ]);
  });

  it("is idempotent: applying the same configuration twice changes nothing", () => {
    const first = applyPatch(undefined, config(), kubectl(T1));
    const second = applyPatch(first, config(), kubectl(T2));
    expect(second).toEqual(first);
    expect(second.metadata.managedFields?.[0].time).toBe(T1);
  });

  it("leaves the live object as it was, whatever the apply changes, prunes or takes over", () => {
    const live = applyPatch(undefined, config("nginx:1.25", { tier: "front" }), kubectl(T1));
    const other = { manager: "editor", force: false, kind: "Deployment", now: T2 };
    const shared = applyPatch(live, config("nginx:1.25", { team: "a" }), other);
    const before = JSON.stringify(shared);
    // kubectl drops its label, changes the image and forces the shared field over
    const out = applyPatch(
      shared,
      { ...config("nginx:1.27"), spec: { ...config().spec, replicas: 5 } },
      kubectl(T3, true),
    );
    expect(out.metadata.labels).toEqual({ app: "web", team: "a" });
    expect(out.spec.replicas).toBe(5);
    expect(JSON.stringify(shared)).toBe(before);
  });

  it("applies a change and stamps the time", () => {
    const first = applyPatch(undefined, config(), kubectl(T1));
    const second = applyPatch(first, config("nginx:1.26"), kubectl(T2));
    expect(second.spec.template.spec.containers[0].image).toBe("nginx:1.26");
    expect(second.metadata.managedFields?.[0].time).toBe("2026-01-01T00:01:00Z");
    expect(first.spec.template.spec.containers[0].image).toBe("nginx:1.25"); // input untouched
  });

  it("removes fields the manager stops applying", () => {
    const first = applyPatch(undefined, config("nginx:1.25", { tier: "front" }), kubectl(T1));
    expect(first.metadata.labels).toEqual({ app: "web", tier: "front" });
    const second = applyPatch(first, config(), kubectl(T2));
    expect(second.metadata.labels).toEqual({ app: "web" });
    const fields = second.metadata.managedFields?.[0].fieldsV1 as Record<string, Record<string, unknown>>;
    expect(fields["f:metadata"]).toEqual({ "f:labels": { "f:app": {} } });
  });

  it("removes a list item the manager stops applying", () => {
    const two = config();
    two.spec.template.spec.containers.push({ name: "sidecar", image: "busybox" });
    const first = applyPatch(undefined, two, kubectl(T1));
    const second = applyPatch(first, config(), kubectl(T2));
    expect(second.spec.template.spec.containers.map((c: { name: string }) => c.name)).toEqual(["web"]);
  });

  it("keeps fields another manager also owns", () => {
    const first = applyPatch(undefined, config("nginx:1.25", { tier: "front" }), kubectl(T1));
    const other = applyPatch(
      first,
      { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "web", labels: { tier: "front" } } },
      { manager: "other", force: false, kind: "Deployment", now: T2 },
    );
    const third = applyPatch(other, config(), kubectl(T3));
    expect(third.metadata.labels).toEqual({ app: "web", tier: "front" });
  });

  it("leaves fields set by others alone when they are not applied", () => {
    const first = applyPatch(undefined, config(), kubectl(T1));
    const scaled: KubeObject = structuredClone(first);
    scaled.spec.replicas = 5;
    recordUpdate(first, scaled, { manager: "kubectl", subresource: "scale", kind: "Deployment", now: T2 });
    const noReplicas = config();
    delete noReplicas.spec.replicas;
    const out = applyPatch(scaled, noReplicas, kubectl(T3));
    expect(out.spec.replicas).toBe(5);
  });

  it("conflicts with kubectl scale on spec.replicas, then takes it with force", () => {
    const first = applyPatch(undefined, config(), kubectl(T1));
    const scaled: KubeObject = structuredClone(first);
    scaled.spec.replicas = 5;
    recordUpdate(first, scaled, { manager: "kubectl", subresource: "scale", kind: "Deployment", now: T2 });
    const scaleEntry = scaled.metadata.managedFields?.find((e) => e.subresource === "scale");
    expect(scaleEntry).toEqual({
      manager: "kubectl",
      operation: "Update",
      apiVersion: "apps/v1",
      time: "2026-01-01T00:01:00Z",
      fieldsType: "FieldsV1",
      fieldsV1: { "f:spec": { "f:replicas": {} } },
      subresource: "scale",
    });

    const err = conflictOf(() => applyPatch(scaled, config(), kubectl(T3)));
    expect(err.code).toBe(409);
    expect(err.reason).toBe("Conflict");
    expect(err.message).toBe(
      'Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using apps/v1: .spec.replicas',
    );
    // on the wire a cause's type travels under "reason", as metav1.StatusCause
    expect(err.toStatus().details).toEqual({
      causes: [
        {
          reason: "FieldManagerConflict",
          message: 'conflict with "kubectl" with subresource "scale" using apps/v1',
          field: ".spec.replicas",
        },
      ],
    });

    const forced = applyPatch(scaled, config(), kubectl(T3, true));
    expect(forced.spec.replicas).toBe(2);
    expect(forced.metadata.managedFields?.map((e) => e.manager)).toEqual(["kubectl"]);
    const fields = forced.metadata.managedFields?.[0].fieldsV1 as Record<string, Record<string, unknown>>;
    expect(fields["f:spec"]["f:replicas"]).toEqual({});
  });

  it("does not conflict when the applied value equals the live one", () => {
    const first = applyPatch(undefined, config(), kubectl(T1));
    const edited: KubeObject = structuredClone(first);
    edited.spec.replicas = 2;
    edited.metadata.labels = { ...edited.metadata.labels, extra: "x" };
    recordUpdate(first, edited, { manager: "kubectl-edit", kind: "Deployment", now: T2 });
    expect(() => applyPatch(edited, config(), kubectl(T3))).not.toThrow();
  });

  it("lists every conflict, grouped by manager", () => {
    const first = applyPatch(undefined, config(), kubectl(T1));
    const edited: KubeObject = structuredClone(first);
    edited.spec.replicas = 3;
    edited.spec.template.spec.containers[0].image = "edited";
    recordUpdate(first, edited, { manager: "kubectl-edit", kind: "Deployment", now: T2 });
    const err = conflictOf(() => applyPatch(edited, config(), kubectl(T3)));
    expect(err.message).toBe(
      'Apply failed with 2 conflicts: conflicts with "kubectl-edit" using apps/v1:\n- .spec.replicas\n- .spec.template.spec.containers[name="web"].image',
    );
    expect(err.details?.causes?.map((c) => c.field)).toEqual([
      ".spec.replicas",
      '.spec.template.spec.containers[name="web"].image',
    ]);
  });

  it("attributes an untracked live object to before-first-apply", () => {
    const live: KubeObject = { ...config(), metadata: { name: "web", namespace: "default", uid: "u1" } };
    live.spec.replicas = 7;
    const err = conflictOf(() => applyPatch(live, config(), kubectl(T1)));
    expect(err.message).toContain('conflict with "before-first-apply" using apps/v1');
    expect(err.details?.causes?.map((c) => c.field)).toEqual([".spec.replicas"]);
  });

  it("rejects configurations that carry managedFields", () => {
    const bad = config();
    bad.metadata.managedFields = [{ manager: "x" }];
    expect(conflictOf(() => applyPatch(undefined, bad, kubectl(T1))).code).toBe(400);
  });

  it("keys container and service ports by port and defaulted protocol", () => {
    const svc: KubeObject = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "s" },
      spec: { selector: { app: "web" }, ports: [{ port: 80, targetPort: 8080 }] },
    };
    const out = applyPatch(undefined, svc, { manager: "kubectl", force: false, kind: "Service", now: T1 });
    expect(out.metadata.managedFields?.[0].fieldsV1).toEqual({
      "f:spec": {
        "f:ports": { 'k:{"port":80,"protocol":"TCP"}': { ".": {}, "f:port": {}, "f:targetPort": {} } },
        "f:selector": {},
      },
    });
  });

  it("config maps: add and drop keys over two applies", () => {
    const cm = (data: Record<string, string>): KubeObject => ({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c", namespace: "default" },
      data,
    });
    const opts = (now: string) => ({ manager: "kubectl", force: false, kind: "ConfigMap", now });
    const first = applyPatch(undefined, cm({ a: "1", b: "2" }), opts(T1));
    const second = applyPatch(first, cm({ a: "1", c: "3" }), opts(T2));
    expect(second.data).toEqual({ a: "1", c: "3" });
    expect(second.metadata.managedFields?.[0].fieldsV1).toEqual({ "f:data": { "f:a": {}, "f:c": {} } });
    expect(second.metadata.name).toBe("c");
  });

  it("merges finalizers as a set", () => {
    const live = applyPatch(
      undefined,
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", finalizers: ["a"] } },
      { manager: "one", force: false, kind: "ConfigMap", now: T1 },
    );
    const out = applyPatch(
      live,
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", finalizers: ["b"] } },
      { manager: "two", force: false, kind: "ConfigMap", now: T2 },
    );
    expect(out.metadata.finalizers).toEqual(["a", "b"]);
    const two = out.metadata.managedFields?.find((e) => e.manager === "two");
    expect(two?.fieldsV1).toEqual({ "f:metadata": { "f:finalizers": { 'v:"b"': {} } } });
  });
});

describe("server-side apply between two appliers", () => {
  const cm = (data: Record<string, string>): KubeObject => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "c" },
    data,
  });
  const as = (manager: string, now: string, force = false) => ({ manager, force, kind: "ConfigMap", now });

  it("shares fields applied with equal values and conflicts on different ones", () => {
    const one = applyPatch(undefined, cm({ a: "1" }), as("one", T1));
    const both = applyPatch(one, cm({ a: "1", b: "2" }), as("two", T2));
    expect(both.metadata.managedFields?.map((e) => e.manager)).toEqual(["one", "two"]);
    const err = conflictOf(() => applyPatch(both, cm({ a: "changed" }), as("two", T3)));
    expect(err.message).toBe('Apply failed with 1 conflict: conflict with "one": .data.a');
    // "two" stops applying b: it is removed; a stays because "one" still owns it
    const after = applyPatch(both, cm({}), as("two", T3));
    expect(after.data).toEqual({ a: "1" });
  });
});

describe("server-side apply input checks", () => {
  it("rejects a body of another version than the endpoint serves", () => {
    const err = conflictOf(() =>
      applyPatch(undefined, config(), { ...kubectl(T1), expectedApiVersion: "apps/v1beta2" }),
    );
    expect(err.code).toBe(400);
    expect(err.message).toBe(
      "Incorrect version specified in apply patch. Specified patch version: apps/v1, expected: apps/v1beta2",
    );
  });
});

describe("server-side apply of maps and structs upstream marks atomic", () => {
  const withSelector = (nodeSelector: Record<string, string>) => {
    const c = config();
    c.spec.template.spec.nodeSelector = nodeSelector;
    return c;
  };

  it("owns a pod template's nodeSelector whole: another manager's selector replaces it, or conflicts", () => {
    const first = applyPatch(undefined, withSelector({ disk: "ssd" }), kubectl(T1));
    expect(first.metadata.managedFields?.[0].fieldsV1).toMatchObject({
      "f:spec": { "f:template": { "f:spec": { "f:nodeSelector": {} } } },
    });
    const other = { manager: "ops", force: false, kind: "Deployment", now: T2 };
    const err = conflictOf(() => applyPatch(first, withSelector({ zone: "a" }), other));
    expect(err.message).toBe(
      'Apply failed with 1 conflict: conflict with "kubectl": .spec.template.spec.nodeSelector',
    );
    const forced = applyPatch(first, withSelector({ zone: "a" }), { ...other, force: true });
    expect(forced.spec.template.spec.nodeSelector).toEqual({ zone: "a" });
  });

  it("replaces an Ingress backend's port whole (name and number are one choice)", () => {
    const ing = (port: Record<string, unknown>): KubeObject => ({
      apiVersion: "networking.k8s.io/v1",
      kind: "Ingress",
      metadata: { name: "i", namespace: "default" },
      spec: { defaultBackend: { service: { name: "web", port } } },
    });
    const opts = { manager: "kubectl", force: false, kind: "Ingress", now: T1 };
    const live = applyPatch(undefined, ing({ number: 80 }), opts);
    const out = applyPatch(live, ing({ name: "http" }), { ...opts, now: T2 });
    expect(out.spec.defaultBackend.service.port).toEqual({ name: "http" });
  });
});
