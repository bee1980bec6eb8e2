import { describe, expect, it } from "vitest";
import { customDef } from "../../../api/custom/definition";
import { customKey, customViewKey, keyStamp } from "../../../api/custom/key";
import { defaultsTree, readDefaultsOf, withReadDefaults } from "../../../api/custom/read-defaults";
import { lookupView, viewKey } from "../../../api/registry";
import type { KubeObject } from "../../../api/types";

const schema = (replicas: number) => ({
  type: "object",
  properties: {
    spec: {
      type: "object",
      description: "kept out of the tree",
      properties: {
        name: { type: "string", maxLength: 10 },
        replicas: { type: "integer", default: replicas },
        ports: {
          type: "array",
          items: {
            type: "object",
            properties: { port: { type: "integer" }, proto: { type: "string", default: "TCP" } },
          },
        },
        labels: { type: "object", additionalProperties: { type: "string" } },
        maybe: { type: "string", nullable: true, default: "x" },
      },
    },
  },
});

describe("defaults on read", () => {
  it("keeps only the nodes on the way to a default", () => {
    expect(defaultsTree(schema(1))).toEqual({
      properties: {
        spec: {
          properties: {
            replicas: { default: 1 },
            ports: { items: { properties: { proto: { default: "TCP" } } } },
            maybe: { default: "x", nullable: true },
          },
        },
      },
    });
    expect(defaultsTree({ type: "object", properties: { a: { type: "string" } } })).toBeUndefined();
    expect(readDefaultsOf([{ name: "v1", schema: { openAPIV3Schema: { type: "object" } } }])).toBeUndefined();
  });

  it("fills the defaults of the version the object was stored in", () => {
    const trees = readDefaultsOf([
      { name: "v1", schema: { openAPIV3Schema: schema(1) } },
      { name: "v2", schema: { openAPIV3Schema: schema(2) } },
      { name: "v3", schema: { openAPIV3Schema: { type: "object" } } },
    ])!;
    expect(Object.keys(trees)).toEqual(["v1", "v2"]);
    const stored = (apiVersion: string) =>
      ({ apiVersion, spec: { ports: [{ port: 1 }], maybe: null } }) as unknown as KubeObject;
    expect(withReadDefaults(stored("g/v2"), trees).spec).toEqual({
      replicas: 2,
      ports: [{ port: 1, proto: "TCP" }],
      maybe: null, // nullable: a null stays
    });
    expect((withReadDefaults(stored("g/v1"), trees).spec as { replicas: number }).replicas).toBe(1);
    // a version without defaults, or one the CRD no longer has: nothing is filled in
    expect(withReadDefaults(stored("g/v3"), trees).spec).toEqual({ ports: [{ port: 1 }], maybe: null });
    expect(withReadDefaults(stored("g/constructor"), trees).spec).toEqual({
      ports: [{ port: 1 }],
      maybe: null,
    });
  });

  it("sends the defaults to the shard in a view key, every version a view", () => {
    const crd = {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: "things.g.example.com", resourceVersion: "42" },
      spec: {
        group: "g.example.com",
        scope: "Namespaced" as const,
        names: { plural: "things", kind: "Thing" },
        versions: [
          { name: "v1", served: true, storage: true, schema: { openAPIV3Schema: schema(1) } },
          { name: "v2", served: true, storage: false, schema: { openAPIV3Schema: schema(2) } },
        ],
      },
      status: { conditions: [{ type: "Established", status: "True" }] },
    };
    for (const v of crd.spec.versions) {
      const def = customDef(crd, v);
      expect(def.storedIn?.redraws).toBe(true);
      const key = viewKey(def);
      expect(key).toMatch(/;d=[^;]+$/);
      // the shard's def from the key converts as the Worker's does
      const view = lookupView(key);
      const stored = { apiVersion: "g.example.com/v1", metadata: { name: "a" }, spec: {} } as KubeObject;
      for (const d of [def, view])
        expect(d.storedIn!.fromStorage(structuredClone(stored))).toMatchObject({
          apiVersion: `g.example.com/${v.name}`,
          spec: { replicas: 1 },
        });
      expect(keyStamp(def.custom!.storeKey)).toBe(42);
      expect(keyStamp(key)).toBe(42);
    }
    // without defaults, the storage version is no view and the key is as before
    const plain = { ...crd, spec: { ...crd.spec, versions: [{ name: "v1", served: true, storage: true }] } };
    const def = customDef(plain, plain.spec.versions[0]);
    expect(def.storedIn).toBeUndefined();
    expect(viewKey(def)).toBe(customViewKey(def.custom!.storeKey, "v1"));
    expect(def.custom!.storeKey).toBe(
      customKey({
        group: "g.example.com",
        resource: "things",
        kind: "Thing",
        listKind: "ThingList",
        version: "v1",
        namespaced: true,
        stamp: "42",
        selectable: [],
      }),
    );
  });
});
