// Defaults on read: a `default` added to a CRD's schema shows in the custom objects stored
// before it, as upstream fills defaults in when it reads an object from storage (with the
// schema of the version the object was stored in), without writing them back. Through real
// workerd and kubectl: gets, lists, tables, watches (replayed and live) in both served
// versions, with the objects' resourceVersions unchanged. On a server of its own: CRDs change
// discovery.
import { beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { api, freshNamespace, hasKubectl, kubectl, until } from "../helpers/cluster";
import { crdManifest } from "../helpers/crds";
import { ownServerForSuite } from "../helpers/own-server";

const t = ownServerForSuite();
let ns: string;
const CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const NAME = "widgets.read.example.com";

/** The schema, with or without defaults (spec.replicas, spec.mode, and each port's protocol). */
function schema(defaults: boolean) {
  const d = (value: unknown) => (defaults ? { default: value } : {});
  return {
    type: "object",
    properties: {
      spec: {
        type: "object",
        properties: {
          size: { type: "string" },
          replicas: { type: "integer", ...d(1) },
          mode: { type: "string", ...d("auto") },
          ports: {
            type: "array",
            items: {
              type: "object",
              properties: { port: { type: "integer" }, protocol: { type: "string", ...d("TCP") } },
            },
          },
        },
      },
    },
  };
}

function widgetCrd(defaults: boolean) {
  const version = (name: string, storage: boolean) => ({
    name,
    served: true,
    storage,
    schema: { openAPIV3Schema: schema(defaults) },
    additionalPrinterColumns: [
      { name: "Replicas", type: "integer", jsonPath: ".spec.replicas" },
      { name: "Mode", type: "string", jsonPath: ".spec.mode" },
    ],
  });
  return crdManifest("read.example.com", { plural: "widgets", singular: "widget", kind: "Widget" }, [
    version("v1", true),
    version("v2", false),
  ]);
}

const widgets = (version = "v1") => `/apis/read.example.com/${version}/namespaces/${ns}/widgets`;
type Widget = { apiVersion: string; metadata: { name: string; resourceVersion: string }; spec: any };

/** The watch's events from `rv` on, for a second. */
async function watchFrom(version: string, rv: string): Promise<{ type: string; object: Widget }[]> {
  const r = await fetch(`${t.url}${widgets(version)}?watch=1&resourceVersion=${rv}&timeoutSeconds=1`, {
    headers: { authorization: `Bearer ${t.token}` },
  });
  expect(r.status).toBe(200);
  return (await r.text())
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

beforeAll(async () => {
  ns = await freshNamespace(t, "widgets");
});

describe("custom resource defaults on read", () => {
  let start: string;
  const before: Record<string, Widget> = {};

  it("stores objects as sent while the schema has no defaults", async () => {
    const created = await api(t, "POST", CRDS, widgetCrd(false));
    expect(created.status, created.text).toBe(201);
    await until(
      "the widgets resource is served",
      async () => (await api(t, "GET", widgets())).status === 200,
    );
    start = (await api(t, "GET", widgets())).json.metadata.resourceVersion;
    for (const [name, spec] of [
      ["plain", { size: "S", ports: [{ port: 80 }, { port: 53, protocol: "UDP" }] }],
      ["set", { size: "L", replicas: 3, mode: "manual" }],
    ] as const) {
      const r = await api(t, "POST", widgets(), {
        apiVersion: "read.example.com/v1",
        kind: "Widget",
        metadata: { name },
        spec,
      });
      expect(r.status, r.text).toBe(201);
      before[name] = r.json;
    }
    expect(before.plain.spec).toEqual({ size: "S", ports: [{ port: 80 }, { port: 53, protocol: "UDP" }] });
  });

  it("shows a default added later in gets and lists of both versions, storing nothing", async () => {
    const crd = (await api(t, "GET", `${CRDS}/${NAME}`)).json;
    crd.spec.versions = widgetCrd(true).spec.versions;
    const r = await api(t, "PUT", `${CRDS}/${NAME}`, crd);
    expect(r.status, r.text).toBe(200);
    // each isolate reads the changed CRD within a second
    await until(
      "the default shows",
      async () => (await api(t, "GET", `${widgets()}/plain`)).json.spec?.replicas === 1,
    );
    const defaulted = {
      size: "S",
      replicas: 1,
      mode: "auto",
      ports: [
        { port: 80, protocol: "TCP" },
        { port: 53, protocol: "UDP" },
      ],
    };
    for (const version of ["v1", "v2"]) {
      const one = await api(t, "GET", `${widgets(version)}/plain`);
      expect(one.status, one.text).toBe(200);
      expect(one.json.apiVersion).toBe(`read.example.com/${version}`);
      expect(one.json.spec).toEqual(defaulted);
      // read, not written: the object's version is the one it was created with
      expect(one.json.metadata.resourceVersion).toBe(before.plain.metadata.resourceVersion);
      const list = await api(t, "GET", widgets(version));
      expect(list.status, list.text).toBe(200);
      const byName = Object.fromEntries(list.json.items.map((o: Widget) => [o.metadata.name, o]));
      expect(byName.plain.spec).toEqual(defaulted);
      // a value the object has is kept
      expect(byName.set.spec).toEqual({ size: "L", replicas: 3, mode: "manual" });
      expect(byName.set.metadata.resourceVersion).toBe(before.set.metadata.resourceVersion);
    }
  });

  it("draws tables from the defaulted objects, in the API and in kubectl", async () => {
    const table = await api(t, "GET", widgets(), undefined, {
      accept: "application/json;as=Table;v=v1;g=meta.k8s.io",
    });
    expect(table.status, table.text).toBe(200);
    const cells = Object.fromEntries(
      table.json.rows.map((row: { cells: unknown[] }) => [row.cells[0], row.cells.slice(1, 3)]),
    );
    expect(cells).toEqual({ plain: [1, "auto"], set: [3, "manual"] });
    // the rows carry what was asked for: kubectl's default is the object's metadata
    expect(table.json.rows[0].object.kind).toBe("PartialObjectMetadata");
    if (!hasKubectl) return;
    const k = await kubectl(t, ["get", "widgets", "-n", ns]);
    expect(k.code, k.stderr).toBe(0);
    // a CRD with printer columns has no AGE column unless it names one, as upstream's
    expect(k.stdout).toMatch(/^NAME\s+REPLICAS\s+MODE\nplain\s+1\s+auto\nset\s+3\s+manual\n$/);
    const one = await kubectl(t, ["get", "widget", "plain", "-n", ns, "-o", "jsonpath={.spec.mode}"]);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toBe("auto");
  });

  it("fills defaults into watch events, replayed and live", async () => {
    for (const version of ["v1", "v2"]) {
      const replayed = await watchFrom(version, start);
      const added = replayed.find((e) => e.object.metadata.name === "plain");
      expect(added?.type).toBe("ADDED");
      expect(added?.object.apiVersion).toBe(`read.example.com/${version}`);
      expect(added?.object.spec).toMatchObject({ replicas: 1, mode: "auto" });
    }
    const now = (await api(t, "GET", widgets())).json.metadata.resourceVersion;
    const patched = await api(t, "PATCH", `${widgets()}/set`, JSON.stringify({ spec: { mode: null } }), {
      "content-type": "application/merge-patch+json",
    });
    expect(patched.status, patched.text).toBe(200);
    // a removed field reads as its default again
    expect(patched.json.spec).toEqual({ size: "L", replicas: 3, mode: "auto" });
    // a write of an object read with defaults stores them, and they are no change of its spec
    const labelled = await api(
      t,
      "PATCH",
      `${widgets()}/plain`,
      JSON.stringify({ metadata: { labels: { a: "b" } } }),
      {
        "content-type": "application/merge-patch+json",
      },
    );
    expect(labelled.status, labelled.text).toBe(200);
    expect(labelled.json.metadata.generation).toBe(before.plain.metadata.generation);
    expect(labelled.json.spec).toMatchObject({ replicas: 1, mode: "auto" });
    const live = await watchFrom("v2", now);
    expect(live.map((e) => `${e.type} ${e.object.metadata.name} ${e.object.spec.mode}`)).toEqual([
      "MODIFIED set auto",
      "MODIFIED plain auto",
    ]);
  });

  it("fills many defaults into WebSocket watch events too", async () => {
    // 200 defaulted fields in each version: a view longer than workerd lets a socket's
    // attachment be (16 KiB), so the shard keeps it aside
    const many: Record<string, unknown> = {};
    for (let i = 0; i < 200; i++)
      many[`field${i}`] = { type: "string", default: `the default value of field ${i}` };
    const crd = crdManifest(
      "read.example.com",
      { plural: "gadgets", singular: "gadget", kind: "Gadget" },
      ["v1", "v2"].map((name) => ({
        name,
        served: true,
        storage: name === "v1",
        schema: {
          openAPIV3Schema: { type: "object", properties: { spec: { type: "object", properties: many } } },
        },
      })),
    );
    const r = await api(t, "POST", CRDS, crd);
    expect(r.status, r.text).toBe(201);
    const gadgets = `/apis/read.example.com/v2/namespaces/${ns}/gadgets`;
    await until("the gadgets resource is served", async () => (await api(t, "GET", gadgets)).status === 200);
    const ws = new WebSocket(`${t.url.replace(/^http/, "ws")}${gadgets}?watch=true`, {
      headers: { authorization: `Bearer ${t.token}` },
    });
    const events: { type: string; object: Widget }[] = [];
    ws.on("message", (data) => events.push(JSON.parse(String(data))));
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("unexpected-response", (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
      ws.once("error", reject);
    });
    try {
      const made = await api(t, "POST", gadgets, {
        apiVersion: "read.example.com/v2",
        kind: "Gadget",
        metadata: { name: "g1" },
        spec: { field0: "mine" },
      });
      expect(made.status, made.text).toBe(201);
      const seen = await until("the event", async () => events.find((e) => e.object.metadata.name === "g1"));
      expect(seen.type).toBe("ADDED");
      expect(seen.object.apiVersion).toBe("read.example.com/v2");
      expect(seen.object.spec.field0).toBe("mine");
      expect(seen.object.spec.field199).toBe("the default value of field 199");
    } finally {
      ws.close();
    }
  });
});
