import { describe, expect, it } from "vitest";
import type { StatusError } from "../../../api/errors";
import { applyPatch } from "../../../api/patch/apply";
import { LAST_APPLIED_ANNOTATION } from "../../../api/patch/last-applied";
import { recordUpdate } from "../../../api/patch/managed-fields";
import { statefulsets } from "../../../api/strategies/statefulsets";
import { deployments } from "../../../api/strategies/workloads";
import type { KubeObject } from "../../../api/types";

const T1 = "2026-01-01T00:00:00Z";
const T2 = "2026-01-01T00:01:00Z";
const T3 = "2026-01-01T00:02:00Z";

function cm(data: Record<string, string>): KubeObject {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "default" }, data };
}

/** What `kubectl apply` (client side) leaves behind: the annotation and a kubectl-client-side-apply entry. */
function clientSideApplied(data: Record<string, string>): KubeObject {
  const obj = cm(data);
  obj.metadata.annotations = { [LAST_APPLIED_ANNOTATION]: `${JSON.stringify(cm(data))}\n` };
  recordUpdate(undefined, obj, { manager: "kubectl-client-side-apply", kind: "ConfigMap", now: T1 });
  return obj;
}

function thrown(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (e) {
    return e as StatusError;
  }
  throw new Error("expected an error");
}

describe("server-side apply after client-side apply", () => {
  it("kubectl takes over fields still holding their last-applied values", () => {
    const live = clientSideApplied({ a: "1" });
    const out = applyPatch(live, cm({ a: "2" }), {
      manager: "kubectl",
      force: false,
      kind: "ConfigMap",
      now: T2,
    });
    expect(out.data).toEqual({ a: "2" });
    const owners = out.metadata.managedFields?.map((e) => [e.manager, e.operation]);
    expect(owners).toContainEqual(["kubectl", "Apply"]);
    const csa = out.metadata.managedFields?.find((e) => e.manager === "kubectl-client-side-apply");
    // the data map stays owned by client-side apply, its key moved to kubectl
    expect((csa?.fieldsV1 ?? {}) as Record<string, unknown>).toEqual(
      expect.objectContaining({ "f:data": {} }),
    );
    // the annotation follows what was applied
    expect(JSON.parse(out.metadata.annotations?.[LAST_APPLIED_ANNOTATION] ?? "")).toEqual(cm({ a: "2" }));
  });

  it("still conflicts on fields changed since the last client-side apply", () => {
    const live = clientSideApplied({ a: "1" });
    const edited: KubeObject = structuredClone(live);
    edited.data = { a: "edited" };
    recordUpdate(live, edited, { manager: "kubectl-edit", kind: "ConfigMap", now: T2 });
    const err = thrown(() =>
      applyPatch(edited, cm({ a: "2" }), { manager: "kubectl", force: false, kind: "ConfigMap", now: T3 }),
    );
    expect(err.code).toBe(409);
    expect(err.message).toBe('Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.a');
  });

  it("only excuses the kubectl manager", () => {
    const live = clientSideApplied({ a: "1" });
    const err = thrown(() =>
      applyPatch(live, cm({ a: "2" }), { manager: "my-tool", force: false, kind: "ConfigMap", now: T2 }),
    );
    expect(err.code).toBe(409);
    expect(err.message).toContain('conflict with "kubectl-client-side-apply" using v1: .data.a');
  });
});

describe("server-side apply after client-side apply, with the kind's defaults", () => {
  // What kubectl apply creates: the manifest, defaulted by the server, owned by the client-side manager.
  function created(def: typeof deployments, manifest: KubeObject): KubeObject {
    const obj = structuredClone(manifest);
    obj.metadata.annotations = { [LAST_APPLIED_ANNOTATION]: `${JSON.stringify(manifest)}\n` };
    def.strategy.defaults?.(obj);
    recordUpdate(undefined, obj, { manager: "kubectl-client-side-apply", kind: def.kind, now: T1 });
    return obj;
  }
  const take = (def: typeof deployments, manifest: KubeObject, withDefaults: boolean) =>
    applyPatch(created(def, manifest), manifest, {
      manager: "kubectl",
      force: false,
      kind: def.kind,
      now: T2,
      defaults: withDefaults ? def.strategy.defaults : undefined,
    });

  const deployment: KubeObject = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "cassandra", namespace: "default" },
    spec: {
      selector: { matchLabels: { app: "cassandra" } },
      template: {
        metadata: { labels: { app: "cassandra" } },
        spec: {
          containers: [
            {
              name: "cassandra",
              image: "cassandra",
              env: [{ name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } }],
            },
          ],
        },
      },
    },
  };
  const statefulSet: KubeObject = {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: "web", namespace: "default" },
    spec: {
      serviceName: "web",
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: { containers: [{ name: "web", image: "web" }] },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: "data" },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
        },
      ],
    },
  };

  it("an atomic fieldRef the server completed (apiVersion: v1) is still what was applied", () => {
    const field = '.spec.template.spec.containers[name="cassandra"].env[name="POD_IP"].valueFrom.fieldRef';
    // compared undefaulted, the live fieldRef looks changed since the client-side apply
    expect(thrown(() => take(deployments, deployment, false)).message).toContain(field);
    const out = take(deployments, deployment, true);
    expect(out.spec.template.spec.containers[0].env[0].valueFrom.fieldRef).toEqual({
      fieldPath: "status.podIP",
    });
    expect(out.metadata.managedFields?.map((e) => e.manager)).toContain("kubectl");
  });

  it("atomic claim templates the server defaulted (volumeMode, status) are still what was applied", () => {
    expect(thrown(() => take(statefulsets, statefulSet, false)).message).toContain(
      ".spec.volumeClaimTemplates",
    );
    const out = take(statefulsets, statefulSet, true);
    expect(out.spec.volumeClaimTemplates).toEqual(statefulSet.spec.volumeClaimTemplates);
  });
});
