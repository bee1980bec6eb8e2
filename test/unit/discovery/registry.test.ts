// The documents built from the real registry: every served kind has a schema,
// and kubectl's fieldValidation probe finds the parameter for each of them.
import { describe, expect, it } from "vitest";
import { messageForKind } from "../../../api/protobuf/schema/index";
import { apiVersionOf } from "../../../api/resource";
import { RESOURCES } from "../../../api/strategies/index";
import { definitionIdFor } from "../../../workers/discovery/definitions";
import { openapiV3Document, openapiV3Index } from "../../../workers/discovery/openapi-v3";

type Obj = Record<string, any>;

describe("documents for the served registry", () => {
  it("has a schema with a GVK for every served kind", () => {
    const missing = RESOURCES.filter(
      (d) => !definitionIdFor({ group: d.group, version: d.version, kind: d.kind }),
    );
    expect(missing.map((d) => d.kind)).toEqual([]);
  });

  it("has a protobuf message for every served kind, but for the groups whose tables are not generated yet", () => {
    // A kind in a group below takes JSON and YAML bodies only: a protobuf body is refused.
    // Adding a group's table: scripts/generate/protobuf-tables.ts (docs/extending.md).
    const NO_TABLE = new Set([
      "node.k8s.io/v1",
      "admissionregistration.k8s.io/v1",
      "apiextensions.k8s.io/v1",
      // read only (get and list): no body of these kinds is ever sent
      "metrics.k8s.io/v1beta1",
      "apiregistration.k8s.io/v1",
      // edgeplane's own kinds have no protobuf message anywhere
      "tenancy.edgeplane.dev/v1alpha1",
    ]);
    const missing = RESOURCES.filter(
      (d) => !NO_TABLE.has(apiVersionOf(d)) && !messageForKind(apiVersionOf(d), d.kind),
    ).map((d) => `${apiVersionOf(d)} ${d.kind}`);
    expect(missing).toEqual([]);
    const tabled = RESOURCES.filter(
      (d) => NO_TABLE.has(apiVersionOf(d)) && messageForKind(apiVersionOf(d), d.kind),
    );
    expect(tabled.map((d) => d.kind)).toEqual([]); // a table came: drop its group from NO_TABLE
  });

  it("lets kubectl find fieldValidation on the PATCH of every patchable kind", () => {
    const index = openapiV3Index(RESOURCES) as { paths: Record<string, unknown> };
    for (const d of RESOURCES.filter((r) => r.verbs.includes("patch"))) {
      const key = d.group ? `apis/${d.group}/${d.version}` : `api/${d.version}`;
      expect(index.paths[key]).toBeDefined();
      const doc = openapiV3Document(RESOURCES, d.group, d.version) as Obj;
      const ops = Object.values(doc.paths as Record<string, Obj>)
        .map((p) => p.patch)
        .filter((op) => op && op["x-kubernetes-group-version-kind"]?.kind === d.kind);
      expect(ops.length, d.kind).toBeGreaterThan(0);
      for (const op of ops) expect(op.parameters.map((p: Obj) => p.name)).toContain("fieldValidation");
    }
  });
});
