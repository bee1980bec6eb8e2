// Lists served as a stream of JSON chunks (durable-objects/store/list-stream.ts), through the
// real apiserver on workerd: the same list, page by page, as the text path gives it.

import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import {
  api,
  freshNamespace,
  hasKubectl,
  kubectl,
  notRootCA,
  ROOT_CA_MAP,
  rootCAIn,
  shared,
} from "../helpers/cluster";
import { bigConfigMap, createBig, openSlowList } from "../helpers/slow-list";

const t = shared();

/** ConfigMaps of ~2.5 KB each: 150 of them span two of the stream's 256 KB chunks. */
const COUNT = 150;
const filler = "x".repeat(2500);
const names = Array.from({ length: COUNT }, (_, i) => `cm-${String(i).padStart(3, "0")}`);
/** What a list of the namespace holds: the maps, then the root CA publisher's (names sort after). */
const listed = [...names, ROOT_CA_MAP];

async function fill(ns: string): Promise<void> {
  for (let i = 0; i < COUNT; i += 25)
    await Promise.all(
      names.slice(i, i + 25).map(async (name) => {
        const r = await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name },
          data: { filler },
        });
        expect(r.status).toBe(201);
      }),
    );
  await rootCAIn(t, ns);
}

describe("streamed lists", () => {
  it("streams a whole list in chunks, equal to the list the YAML path encodes", async () => {
    const ns = await freshNamespace(t);
    await fill(ns);
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const res = await fetch(t.url + path, {
      headers: { authorization: `Bearer ${t.token}`, accept: "application/json" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    // written as it goes: no length known up front (the text path sets one)
    expect(res.headers.get("content-length")).toBeNull();
    const reader = res.body!.getReader();
    let reads = 0;
    let text = "";
    const dec = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      reads++;
      text += dec.decode(value, { stream: true });
    }
    expect(text.length).toBeGreaterThan(COUNT * 2500);
    expect(reads).toBeGreaterThan(1);
    const list = JSON.parse(text);
    expect(list.kind).toBe("ConfigMapList");
    expect(list.apiVersion).toBe("v1");
    expect(list.items.map((o: any) => o.metadata.name)).toEqual(listed);
    expect(list.items.filter(notRootCA).every((o: any) => o.data.filler === filler)).toBe(true);

    const yaml = await api(t, "GET", path, undefined, { accept: "application/yaml" });
    expect(yaml.status).toBe(200);
    expect(yaml.headers.get("content-length")).not.toBeNull();
    expect(parseYaml(yaml.text)).toEqual(list);
  });

  it("streams a Table, one row per object in order, with its columns and metadata", async () => {
    const ns = await freshNamespace(t);
    await fill(ns);
    const path = `/api/v1/namespaces/${ns}/configmaps?limit=100`;
    const r = await api(t, "GET", path, undefined, {
      accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
    });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("application/json;as=Table;v=v1;g=meta.k8s.io");
    expect(r.headers.get("content-length")).toBeNull();
    expect(r.json.kind).toBe("Table");
    expect(r.json.columnDefinitions.map((c: any) => c.name)).toEqual(["Name", "Data", "Age"]);
    expect(r.json.rows.map((row: any) => row.cells[0])).toEqual(names.slice(0, 100));
    expect(r.json.rows.map((row: any) => row.cells[1])).toEqual(names.slice(0, 100).map(() => 1));
    expect(r.json.rows[0].object).toMatchObject({
      kind: "PartialObjectMetadata",
      metadata: { name: names[0] },
    });
    expect(r.json.metadata.remainingItemCount).toBe(listed.length - 100);
    expect(typeof r.json.metadata.continue).toBe("string");
  });

  it("pages with limit and continue, each page streamed, over one snapshot", async () => {
    const ns = await freshNamespace(t);
    await fill(ns);
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const first = await api(t, "GET", `${path}?limit=60`);
    expect(first.status).toBe(200);
    expect(first.headers.get("content-length")).toBeNull();
    expect(first.json.metadata.remainingItemCount).toBe(listed.length - 60);
    // a write after the first page is not in the pages that follow (one snapshot)
    const late = await api(t, "POST", `${path}`, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "cm-late" },
    });
    expect(late.status).toBe(201);
    const seen = first.json.items.map((o: any) => o.metadata.name);
    let token = first.json.metadata.continue;
    while (token) {
      const page = await api(t, "GET", `${path}?limit=60&continue=${encodeURIComponent(token)}`);
      expect(page.status).toBe(200);
      expect(page.json.metadata.resourceVersion).toBe(first.json.metadata.resourceVersion);
      seen.push(...page.json.items.map((o: any) => o.metadata.name));
      token = page.json.metadata.continue;
    }
    expect(seen).toEqual(listed);
  });

  it("reads a long list a page at a time, all of it from the snapshot it started at", async () => {
    const ns = await freshNamespace(t);
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const name = (i: number) => `big-${String(i).padStart(2, "0")}`;
    await createBig(t, path, 30, name);
    await rootCAIn(t, ns);
    const list = await openSlowList(t, path);
    // after the list began: the last object deleted, the one before it changed, one added
    expect((await api(t, "DELETE", `${path}/big-29`)).status).toBe(200);
    expect((await api(t, "PUT", `${path}/big-28`, bigConfigMap(name(28), "b"))).status).toBe(200);
    expect((await api(t, "POST", path, bigConfigMap(name(30), "c"))).status).toBe(201);
    const got = await list.rest();
    expect(got.items.map((o: any) => o.metadata.name)).toEqual([
      ...Array.from({ length: 30 }, (_, i) => name(i)),
      ROOT_CA_MAP,
    ]);
    const big = got.items.filter(notRootCA);
    expect(big.every((o: any) => o.data.fill.length === 900_000 && o.data.fill[0] === "a")).toBe(true);
    const rv = Number(got.metadata.resourceVersion);
    expect(got.items.every((o: any) => Number(o.metadata.resourceVersion) <= rv)).toBe(true);
    // the same list read now has the changes
    const now = await api(t, "GET", path);
    expect(now.json.items.map((o: any) => o.metadata.name).slice(-3)).toEqual([
      "big-28",
      "big-30",
      ROOT_CA_MAP,
    ]);
    expect(now.json.items.find((o: any) => o.metadata.name === "big-28").data.fill[0]).toBe("b");
    expect((await api(t, "DELETE", path)).status).toBe(200);
  });

  it("answers a bad list with a Status, not a broken stream", async () => {
    const ns = await freshNamespace(t);
    const r = await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps?fieldSelector=spec.nope%3D1`);
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ kind: "Status", code: 400, reason: "BadRequest" });
    const gone = await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps?continue=not-a-token`);
    expect(gone.status).toBe(400);
    expect(gone.json.kind).toBe("Status");
  });

  it.skipIf(!hasKubectl)("kubectl get -o json reads a streamed list", async () => {
    const ns = await freshNamespace(t);
    await fill(ns);
    const r = await kubectl(t, ["get", "configmaps", "-n", ns, "-o", "json"]);
    expect(r.code).toBe(0);
    const names2 = JSON.parse(r.stdout)
      .items.map((o: any) => o.metadata.name)
      .filter((n: string) => n.startsWith("cm-"));
    expect(names2).toEqual(names);
  });
});
