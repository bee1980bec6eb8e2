import { describe, expect, it } from "vitest";
import { customKey, customViewKey, defFromCustomKey, keyStamp } from "../../../api/custom/key";
import { pathSteps, selectableValuesOf, storedSelectablePaths } from "../../../api/custom/selectable";
import { lookupView } from "../../../api/registry";
import type { KubeObject } from "../../../api/types";
import { selectableFields, supportedFields } from "../../../durable-objects/store/fields";

describe("selectable fields", () => {
  it("reads simple paths, dotted or bracketed, and refuses array notation", () => {
    expect(pathSteps(".spec.color")).toEqual(["spec", "color"]);
    expect(pathSteps(".spec['a.b'][\"c\"]")).toEqual(["spec", "a.b", "c"]);
    for (const bad of ["spec.color", ".spec.tags[0]", ".spec[*]", ".", ".spec..x"])
      expect(typeof pathSteps(bad), bad).toBe("string");
  });

  it("gives each value as upstream prints it, and the empty string when absent", () => {
    const obj = { metadata: { name: "a" }, spec: { s: "x", n: 3, b: false, deep: { k: "v" } } } as KubeObject;
    expect(
      selectableValuesOf([".spec.s", ".spec.n", ".spec.b", ".spec.missing", ".spec['deep'].k"])!(obj),
    ).toEqual({
      "spec.s": "x",
      "spec.n": "3",
      "spec.b": "false",
      "spec.missing": "",
      "spec['deep'].k": "v",
    });
  });

  it("are named in the store key, which the shard reads back; its views keep them", () => {
    const paths = storedSelectablePaths([
      { name: "v1", selectableFields: [{ jsonPath: ".spec.b" }, { jsonPath: ".spec['x,y']" }] },
      { name: "v2", selectableFields: [{ jsonPath: ".spec.b" }, { jsonPath: ".spec.a" }] },
    ]);
    expect(paths).toEqual([".spec.a", ".spec.b", ".spec['x,y']"]);
    const key = customKey({
      group: "g.example.com",
      resource: "things",
      kind: "Thing",
      listKind: "ThingList",
      version: "v1",
      namespaced: true,
      stamp: "42",
      selectable: paths,
    });
    expect(keyStamp(key)).toBe(42);
    const def = defFromCustomKey(key)!;
    expect(def.version).toBe("v1");
    expect(def.custom?.selectable).toEqual(paths);
    const obj = { metadata: { name: "n", namespace: "ns" }, spec: { a: "1", "x,y": true } } as KubeObject;
    expect(selectableFields(def, obj)).toEqual({
      "metadata.name": "n",
      "metadata.namespace": "ns",
      "spec.a": "1",
      "spec.b": "",
      "spec['x,y']": "true",
    });
    expect([...supportedFields(def)]).toContain("spec['x,y']");
    const view = lookupView(customViewKey(key, "v2"));
    expect(view.version).toBe("v2");
    expect(view.custom?.selectable).toEqual(paths);
    // a key without selectable fields or stamp still reads as before
    expect(keyStamp("g.example.com/things#Thing,ThingList,v1,N")).toBe(0);
    expect(customViewKey("g.example.com/things#Thing,ThingList,v1,N", "v2")).toBe(
      "g.example.com/things#Thing,ThingList,v2,N",
    );
  });
});
