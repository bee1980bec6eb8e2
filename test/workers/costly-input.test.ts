// Requests built to cost the server: each gets its Status at once, the server keeps
// answering, and nothing is half-written. Through the real apiserver on workerd.
import { describe, expect, it } from "vitest";
import { api, freshNamespace, notRootCA, ROOT_CA_MAP, rootCAIn, shared } from "../helpers/cluster";

const t = shared();
const JSON_CT = { "content-type": "application/json" };

describe("costly input", () => {
  it("a body nested past 1,000 levels is 400, as JSON, as a patch, as YAML-typed JSON", async () => {
    const ns = await freshNamespace(t);
    const cms = `/api/v1/namespaces/${ns}/configmaps`;
    const deep = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
    const body = (n: number) =>
      `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d","annotations":{"a":${deep(n)}}}}`;
    for (const [ct, text] of [
      ["application/json", body(100000)],
      ["application/yaml", body(100000)],
      ["application/json", body(1000)],
    ]) {
      const r = await api(t, "POST", cms, text, { "content-type": ct });
      expect({ status: r.status, reason: r.json?.reason }, r.text.slice(0, 300)).toEqual({
        status: 400,
        reason: "BadRequest",
      });
      expect(r.json.message).toContain("nests more than 1000 levels deep");
    }
    // under the limit the same body is read (and refused for what it is: not a string)
    const shallow = await api(t, "POST", cms, body(900), JSON_CT);
    expect(shallow.status, shallow.text.slice(0, 300)).toBe(400);
    expect(shallow.json.message).toBe(
      'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal array into Go struct field ObjectMeta.metadata.annotations of type string',
    );
    expect(
      (await api(t, "POST", cms, { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "t" } })).status,
    ).toBe(201);
    const patch = await api(t, "PATCH", `${cms}/t`, `{"metadata":{"labels":${deep(5000)}}}`, {
      "content-type": "application/merge-patch+json",
    });
    expect(patch.status).toBe(400);
  });

  it("JSON patch copies that double the object are refused with 422 before they are made", async () => {
    const ns = await freshNamespace(t);
    const path = `/api/v1/namespaces/${ns}/configmaps/c`;
    const created = await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c", annotations: { x: "y".repeat(2000) } },
    });
    expect(created.status).toBe(201);
    // each copy appends the whole list to itself: 40 of them would ask for terabytes
    const doubling = [
      { op: "add", path: "/list", value: [] },
      { op: "copy", from: "/metadata/annotations", path: "/list/-" },
      ...Array.from({ length: 40 }, () => ({ op: "copy", from: "/list", path: "/list/-" })),
    ];
    const r = await api(t, "PATCH", path, JSON.stringify(doubling), {
      "content-type": "application/json-patch+json",
    });
    expect({ status: r.status, reason: r.json?.reason }, r.text.slice(0, 300)).toEqual({
      status: 422,
      reason: "Invalid",
    });
    const after = await api(t, "GET", path);
    expect(after.json.metadata.resourceVersion).toBe(created.json.metadata.resourceVersion);
    expect((await api(t, "GET", "/readyz")).status).toBe(200);
  });

  it("20,000 unknown fields, each written twice: each reported once, as unknown", async () => {
    const ns = await freshNamespace(t, "costly");
    const pairs = Array.from({ length: 20_000 }, (_, i) => `"u${i}": 1, "u${i}": 2`).join(", ");
    const body = `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unknowns"}, ${pairs}}`;
    const r = await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, body, JSON_CT);
    expect(r.status, r.text.slice(0, 200)).toBe(201);
    const header = r.headers.get("warning") ?? "";
    expect(header.startsWith('299 - "unknown field \\"u0\\""')).toBe(true);
    expect(header).not.toContain("duplicate field");
    expect(r.json.u0).toBeUndefined();
    const strict = await api(
      t,
      "POST",
      `/api/v1/namespaces/${ns}/configmaps?fieldValidation=Strict`,
      body,
      JSON_CT,
    );
    expect(strict.status).toBe(400);
    expect(strict.json.message).toMatch(
      /^ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "u0", unknown field "u1", /,
    );
    expect(strict.json.message).not.toContain("duplicate field");
  });

  it("a label selector of thousands of terms is matched, not a 500", async () => {
    const ns = await freshNamespace(t);
    const labels = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`l${i}`, "v"]));
    const made = await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "m", labels },
    });
    expect(made.status).toBe(201);
    const terms = Array.from({ length: 3000 }, (_, i) => `l${i % 200}=v`).join(",");
    const r = await api(
      t,
      "GET",
      `/api/v1/namespaces/${ns}/configmaps?labelSelector=${encodeURIComponent(terms)}`,
    );
    expect(r.status, r.text.slice(0, 300)).toBe(200);
    expect(r.json.items.map((o: any) => o.metadata.name)).toEqual(["m"]);
  });

  it("a collection deleted in slices (of 250) goes whole, and the answer lists all of it", async () => {
    const ns = await freshNamespace(t);
    const cms = `/api/v1/namespaces/${ns}/configmaps`;
    const names = Array.from({ length: 600 }, (_, i) => `c${String(i).padStart(4, "0")}`);
    for (let i = 0; i < names.length; i += 100)
      await Promise.all(
        names.slice(i, i + 100).map(async (name, j) => {
          const labels = { half: String((i + j) % 2) };
          const r = await api(t, "POST", cms, {
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name, labels },
          });
          expect(r.status).toBe(201);
        }),
      );
    await rootCAIn(t, ns);
    const odd = await api(t, "DELETE", `${cms}?labelSelector=half%3D1`);
    expect(odd.status).toBe(200);
    expect(odd.json.kind).toBe("ConfigMapList");
    expect(odd.json.items.map((o: any) => o.metadata.name)).toEqual(names.filter((_, i) => i % 2 === 1));
    expect(Number(odd.json.metadata.resourceVersion)).toBeGreaterThan(0);
    const rest = await api(t, "GET", cms);
    expect(rest.json.items.map((o: any) => o.metadata.name)).toEqual([
      ...names.filter((_, i) => i % 2 === 0),
      ROOT_CA_MAP,
    ]);
    const all = await api(t, "DELETE", cms);
    expect(all.json.items).toHaveLength(301);
    // kube-root-ca.crt alone may be back: its publisher makes it anew at once
    expect((await api(t, "GET", cms)).json.items.filter(notRootCA)).toEqual([]);
  });
});
