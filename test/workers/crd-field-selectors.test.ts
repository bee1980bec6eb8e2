// Field selectors on custom resources (a CRD version's selectableFields), through real workerd
// and kubectl: the CRD's paths are checked as upstream checks them, lists and watches select
// by them in the version asked (each version its own fields), and a field a CRD newly
// declares selects the objects stored before. On a server of its own: CRDs change discovery.
import { beforeAll, describe, expect, it } from "vitest";
import { api, freshNamespace, hasKubectl, kubectl, until } from "../helpers/cluster";
import { crdManifest } from "../helpers/crds";
import { ownServerForSuite } from "../helpers/own-server";

const t = ownServerForSuite();
let ns: string;
const CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const NAME = "shirts.stable.example.com";

const schema = {
  type: "object",
  properties: {
    metadata: { type: "object", properties: { name: { type: "string" } } },
    spec: {
      type: "object",
      properties: {
        color: { type: "string" },
        size: { type: "string", enum: ["S", "M", "L"] },
        count: { type: "integer" },
        folded: { type: "boolean" },
        weight: { type: "number" },
        tags: { type: "array", items: { type: "string" } },
        extra: { type: "object", additionalProperties: { type: "string" } },
      },
    },
  },
};

function shirtCrd(v1Fields: string[], v2Fields: string[]) {
  const version = (name: string, storage: boolean, fields: string[]) => ({
    name,
    served: true,
    storage,
    schema: { openAPIV3Schema: schema },
    selectableFields: fields.map((jsonPath) => ({ jsonPath })),
  });
  return crdManifest("stable.example.com", { plural: "shirts", singular: "shirt", kind: "Shirt" }, [
    version("v1", true, v1Fields),
    version("v2", false, v2Fields),
  ]);
}

const shirts = (version = "v1") => `/apis/stable.example.com/${version}/namespaces/${ns}/shirts`;

async function names(version: string, selector: string): Promise<string[]> {
  const r = await api(t, "GET", `${shirts(version)}?fieldSelector=${encodeURIComponent(selector)}`);
  expect(r.status, r.text).toBe(200);
  return r.json.items.map((o: { metadata: { name: string } }) => o.metadata.name).sort();
}

beforeAll(async () => {
  ns = await freshNamespace(t, "shirts");
});

describe("custom resource field selectors", () => {
  it("refuses selectable fields that break upstream's rules, one cause each", async () => {
    const bad = shirtCrd(
      [
        ".metadata.name",
        ".spec.tags[0]",
        ".spec.weight",
        ".spec.missing",
        ".spec.color",
        ".spec['color']",
        "",
      ],
      [".spec.color"],
    );
    const r = await api(t, "POST", CRDS, bad);
    expect(r.status, r.text).toBe(422);
    const causes = r.json.details.causes.map(
      (c: { field: string; message: string }) => `${c.field}: ${c.message}`,
    );
    const at = (i: number) => `spec.versions[0].selectableFields[${i}].jsonPath`;
    expect(causes).toEqual(
      expect.arrayContaining([
        `${at(0)}: Invalid value: ".metadata.name": must not point to fields in metadata`,
        expect.stringMatching(
          new RegExp(
            `^${at(1).replace(/[[\].]/g, "\\$&")}: Invalid value: "\\.spec\\.tags\\[0\\]": is an invalid path`,
          ),
        ),
        `${at(2)}: Invalid value: ".spec.weight": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.`,
        expect.stringMatching(
          new RegExp(
            `^${at(3).replace(/[[\].]/g, "\\$&")}: Invalid value: "\\.spec\\.missing": is an invalid path`,
          ),
        ),
        `${at(5)}: Duplicate value: ".spec['color']"`,
        `${at(6)}: Required value`,
      ]),
    );
    expect(causes).toHaveLength(6);
    const nine = shirtCrd(
      Array.from({ length: 9 }, (_, i) => `.spec.extra.k${i}`),
      [],
    );
    const many = await api(t, "POST", CRDS, nine);
    expect(many.status, many.text).toBe(422);
    expect(many.json.details.causes).toContainEqual(
      expect.objectContaining({
        field: "spec.versions[0].selectableFields",
        message: "Too many: 9: must have at most 8 items",
      }),
    );
  });

  it("selects custom objects by their version's fields, in lists, tables and kubectl", async () => {
    const created = await api(t, "POST", CRDS, shirtCrd([".spec.color", ".spec.size"], [".spec.color"]));
    expect(created.status, created.text).toBe(201);
    await until("the shirts resource is served", async () => (await api(t, "GET", shirts())).status === 200);
    const make = [
      ["red-s", { color: "red", size: "S", count: 1 }],
      ["blue-m", { color: "blue", size: "M", count: 3, folded: true }],
      ["red-m", { color: "red", size: "M", count: 3 }],
      ["plain", { size: "L" }],
    ] as const;
    for (const [name, spec] of make) {
      const r = await api(t, "POST", shirts(), {
        apiVersion: "stable.example.com/v1",
        kind: "Shirt",
        metadata: { name },
        spec,
      });
      expect(r.status, r.text).toBe(201);
    }
    expect(await names("v1", "spec.color=red")).toEqual(["red-m", "red-s"]);
    expect(await names("v1", "spec.color=red,spec.size=M")).toEqual(["red-m"]);
    // an absent field is the empty string
    expect(await names("v1", "spec.color!=red")).toEqual(["blue-m", "plain"]);
    expect(await names("v1", "spec.color=")).toEqual(["plain"]);
    expect(await names("v2", "spec.color==blue")).toEqual(["blue-m"]);

    // each version accepts its own fields only, and no version an undeclared one
    for (const [version, sel] of [
      ["v2", "spec.size=M"],
      ["v1", "spec.count=3"],
    ]) {
      const r = await api(t, "GET", `${shirts(version)}?fieldSelector=${sel}`);
      expect(r.status, r.text).toBe(400);
      expect(r.json).toMatchObject({
        reason: "BadRequest",
        message: `field label not supported: ${sel.split("=")[0]}`,
      });
    }

    if (!hasKubectl) return;
    // kubectl prefers v2 (the newer version), which selects by color only
    const k = await kubectl(t, [
      "get",
      "shirts",
      "-n",
      ns,
      "--field-selector",
      "spec.color=red",
      "-o",
      "name",
    ]);
    expect(k.code, k.stderr).toBe(0);
    expect(k.stdout.trim().split("\n").sort()).toEqual([
      "shirt.stable.example.com/red-m",
      "shirt.stable.example.com/red-s",
    ]);
    const v1 = await kubectl(t, [
      "get",
      "shirts.v1.stable.example.com",
      "-n",
      ns,
      "--field-selector",
      "spec.size=M",
    ]);
    expect(v1.code, v1.stderr).toBe(0);
    expect(v1.stdout).toMatch(/^NAME\s+AGE\nblue-m\s+\S+\nred-m\s+\S+\n$/);
    const wrong = await kubectl(t, ["get", "shirts", "-n", ns, "--field-selector", "spec.size=M"]);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain("field label not supported: spec.size");
  });

  it("tells a watch by the field: an object that comes to match is ADDED, one that stops is DELETED", async () => {
    const start = (await api(t, "GET", shirts())).json.metadata.resourceVersion;
    const recolor = async (name: string, color: string) => {
      const r = await api(t, "PATCH", `${shirts()}/${name}`, JSON.stringify({ spec: { color } }), {
        "content-type": "application/merge-patch+json",
      });
      expect(r.status, r.text).toBe(200);
    };
    await recolor("blue-m", "red"); // comes to match
    await recolor("red-s", "green"); // stops matching
    await recolor("plain", "yellow"); // never matches
    const watch = await fetch(
      `${t.url}${shirts("v2")}?watch=1&resourceVersion=${start}&timeoutSeconds=1&fieldSelector=spec.color%3Dred`,
      { headers: { authorization: `Bearer ${t.token}` } },
    );
    expect(watch.status).toBe(200);
    const events = (await watch.text())
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .map((e) => `${e.type} ${e.object.metadata.name} ${e.object.apiVersion}`);
    expect(events).toEqual(["ADDED blue-m stable.example.com/v2", "DELETED red-s stable.example.com/v2"]);
  });

  it("selects the objects stored before by a field the CRD declares later", async () => {
    const crd = (await api(t, "GET", `${CRDS}/${NAME}`)).json;
    crd.spec.versions[0].selectableFields.push({ jsonPath: ".spec.count" }, { jsonPath: ".spec.folded" });
    const r = await api(t, "PUT", `${CRDS}/${NAME}`, crd);
    expect(r.status, r.text).toBe(200);
    // each isolate reads the changed CRD within a second
    await until(
      "spec.count selects",
      async () => (await api(t, "GET", `${shirts()}?fieldSelector=spec.count%3D3`)).status === 200,
    );
    expect(await names("v1", "spec.count=3")).toEqual(["blue-m", "red-m"]);
    expect(await names("v1", "spec.folded=true")).toEqual(["blue-m"]);
    expect(await names("v1", "spec.folded!=true")).toEqual(["plain", "red-m", "red-s"]);
    // and the fields kept work as before
    expect(await names("v1", "spec.color=red")).toEqual(["blue-m", "red-m"]);
  });
});
