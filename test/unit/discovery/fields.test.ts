import { describe, expect, it } from "vitest";
import { knownFieldsCheck, unknownFieldMessages, unknownFields } from "../../../workers/discovery/fields";

const pod = (extra: Record<string, unknown> = {}, container: Record<string, unknown> = {}) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "p", labels: { anything: "goes" }, annotations: { "a/b": "c" } },
  spec: {
    containers: [
      { name: "a", image: "x", resources: { limits: { cpu: "1", "example.com/gpu": 1 } } },
      { name: "b", image: "y", ports: [{ containerPort: 80 }], ...container },
    ],
    ...extra,
  },
});

describe("knownFieldsCheck", () => {
  it("accepts a valid object, including free-form maps", () => {
    expect(knownFieldsCheck("v1", "Pod", pod())).toEqual([]);
    expect(
      knownFieldsCheck("v1", "Secret", {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "s" },
        data: { k: "dg==" },
        type: "Opaque",
      }),
    ).toEqual([]);
  });

  it("reports unknown fields with upstream's paths, through objects and arrays", () => {
    const got = knownFieldsCheck("v1", "Pod", {
      ...pod({ foo: 1 }, { bar: true, ports: [{ containerPort: 80, nope: 1 }] }),
      extra: "x",
      metadata: { name: "p", nam: "typo" },
    });
    expect([...got].sort()).toEqual(
      [
        "spec.foo",
        "spec.containers[1].bar",
        "spec.containers[1].ports[0].nope",
        "extra",
        "metadata.nam",
      ].sort(),
    );
  });

  it("recurses into map values that have a schema", () => {
    const got = knownFieldsCheck("apps/v1", "Deployment", {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "d" },
      spec: {
        selector: {
          matchLabels: { a: "b" },
          matchExpressions: [{ key: "a", operator: "In", values: ["b"], bogus: 1 }],
        },
        template: {
          metadata: { labels: { a: "b" } },
          spec: { containers: [{ name: "c", image: "i", env: [{ name: "A", valu: "1" }] }] },
        },
        strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: "25%", maxUnavailable: 1 } },
      },
    });
    expect(got).toEqual([
      "spec.selector.matchExpressions[0].bogus",
      "spec.template.spec.containers[0].env[0].valu",
    ]);
  });

  it("does not look inside free-form fields (managedFields.fieldsV1)", () => {
    const obj = pod();
    (obj.metadata as Record<string, unknown>).managedFields = [
      { manager: "m", operation: "Apply", fieldsV1: { "f:spec": { "f:x": {} } } },
    ];
    expect(knownFieldsCheck("v1", "Pod", obj)).toEqual([]);
  });

  it("returns nothing for kinds it has no schema for", () => {
    expect(knownFieldsCheck("example.com/v1", "Widget", { foo: 1 })).toEqual([]);
    expect(unknownFields).toBe(knownFieldsCheck);
  });

  it("words messages as upstream does", () => {
    expect(unknownFieldMessages(["spec.foo"])).toEqual(['unknown field "spec.foo"']);
  });
});
