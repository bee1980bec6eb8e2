import { describe, expect, it } from "vitest";
import { openapiV3Document, openapiV3Entries, openapiV3Index } from "../../../workers/discovery/openapi-v3";
import { FIXTURE } from "./fixture";

type Obj = Record<string, any>;

function refsIn(x: unknown, out: string[] = []): string[] {
  if (Array.isArray(x)) for (const v of x) refsIn(v, out);
  else if (x && typeof x === "object") {
    for (const [k, v] of Object.entries(x)) {
      if (k === "$ref" && typeof v === "string") out.push(v);
      else refsIn(v, out);
    }
  }
  return out;
}

describe("/openapi/v3 index", () => {
  it("lists every group-version with a hashed server-relative URL", () => {
    const idx = openapiV3Index(FIXTURE) as { paths: Record<string, { serverRelativeURL: string }> };
    expect(Object.keys(idx.paths).sort()).toEqual([
      "api/v1",
      "apis/apps/v1",
      "apis/authorization.k8s.io/v1",
      "apis/coordination.k8s.io/v1",
      "apis/events.k8s.io/v1",
      "apis/rbac.authorization.k8s.io/v1",
    ]);
    const entry = openapiV3Entries(FIXTURE).get("apis/apps/v1");
    expect(idx.paths["apis/apps/v1"].serverRelativeURL).toBe(`/openapi/v3/apis/apps/v1?hash=${entry?.hash}`);
    expect(entry?.hash).toMatch(/^[0-9A-F]{16}$/);
  });
});

describe("group-version documents", () => {
  const core = openapiV3Document(FIXTURE, "", "v1") as Obj;
  const apps = openapiV3Document(FIXTURE, "apps", "v1") as Obj;

  it("gives every PATCH operation the fieldValidation parameter, a GVK and strategic merge patch", () => {
    let patches = 0;
    for (const doc of [core, apps]) {
      for (const item of Object.values(doc.paths) as Obj[]) {
        if (!item.patch) continue;
        patches++;
        expect(item.patch.parameters.map((p: Obj) => p.name)).toContain("fieldValidation");
        expect(item.patch["x-kubernetes-group-version-kind"]).toHaveProperty("kind");
        expect(Object.keys(item.patch.requestBody.content)).toContain(
          "application/strategic-merge-patch+json",
        );
      }
    }
    expect(patches).toBeGreaterThanOrEqual(6);
    const podPatch = core.paths["/api/v1/namespaces/{namespace}/pods/{name}"].patch;
    expect(podPatch["x-kubernetes-group-version-kind"]).toEqual({ group: "", version: "v1", kind: "Pod" });
    expect(podPatch["x-kubernetes-action"]).toBe("patch");
    const scalePatch = apps.paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"].patch;
    expect(scalePatch["x-kubernetes-group-version-kind"]).toEqual({
      group: "autoscaling",
      version: "v1",
      kind: "Scale",
    });
  });

  it("lays out list, cluster-wide list, item and path parameters as upstream does", () => {
    expect(core.openapi).toBe("3.0.0");
    const coll = core.paths["/api/v1/namespaces/{namespace}/pods"];
    expect(coll.get["x-kubernetes-action"]).toBe("list");
    expect(coll.get.parameters.map((p: Obj) => p.name)).toEqual(
      expect.arrayContaining(["watch", "labelSelector", "limit"]),
    );
    expect(coll.post["x-kubernetes-action"]).toBe("post");
    expect(coll.delete["x-kubernetes-action"]).toBe("deletecollection");
    expect(coll.parameters[0]).toMatchObject({ name: "namespace", in: "path", required: true });
    expect(core.paths["/api/v1/pods"].get.operationId).toBe("listCoreV1PodForAllNamespaces");
    expect(core.paths["/api/v1/namespaces/{name}"].get.operationId).toBe("readCoreV1Namespace");
  });

  it("carries schemas with GVK arrays, patch metadata and allOf-wrapped references, none dangling", () => {
    const schemas = core.components.schemas as Record<string, Obj>;
    expect(schemas["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"]).toEqual([
      { group: "", kind: "Pod", version: "v1" },
    ]);
    const containers = schemas["io.k8s.api.core.v1.PodSpec"].properties.containers;
    expect(containers).toMatchObject({
      type: "array",
      "x-kubernetes-patch-merge-key": "name",
      "x-kubernetes-patch-strategy": "merge",
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["name"],
    });
    expect(containers.items.$ref).toBe("#/components/schemas/io.k8s.api.core.v1.Container");
    const spec = schemas["io.k8s.api.core.v1.Pod"].properties.spec;
    expect(spec.allOf).toEqual([{ $ref: "#/components/schemas/io.k8s.api.core.v1.PodSpec" }]);
    expect(spec.description).toMatch(/desired behavior of the pod/);
    expect(schemas["io.k8s.api.core.v1.ContainerPort"].properties.containerPort).toMatchObject({
      type: "integer",
      format: "int32",
    });
    expect(schemas["io.k8s.api.core.v1.ContainerPort"].required).toEqual(["containerPort"]);
    for (const doc of [core, apps]) {
      for (const ref of refsIn(doc)) {
        expect(ref.startsWith("#/components/schemas/")).toBe(true);
        expect(doc.components.schemas[ref.slice("#/components/schemas/".length)]).toBeDefined();
      }
    }
    expect(apps.components.schemas["io.k8s.api.autoscaling.v1.Scale"]).toBeDefined();
    expect(
      apps.components.schemas["io.k8s.api.apps.v1.DeploymentSpec"].properties.strategy[
        "x-kubernetes-patch-strategy"
      ],
    ).toBe("retainKeys");
  });
});
