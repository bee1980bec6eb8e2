// Malformed and hostile requests get the upstream status code, reason and a useful message as
// a metav1.Status; a sweep over every served route with junk never yields a 5xx.
import { beforeAll, describe, expect, it } from "vitest";
import { api, freshNamespace, shared } from "../helpers/cluster";
import { junkRequests, servedRoutes, sweep } from "../helpers/junk-sweep";

const t = shared();
let ns = "";
let cms = "";

const JSON_CT = { "content-type": "application/json" };

function cm(name: string, extra: Record<string, unknown> = {}) {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { k: "v" }, ...extra };
}

/** The response is a metav1.Status failure with this code and reason, and says something. */
function expectStatus(
  r: { status: number; json: any; text: string },
  code: number,
  reason: string,
  message?: RegExp | string,
) {
  expect({ status: r.status, reason: r.json?.reason }, r.text.slice(0, 500)).toEqual({
    status: code,
    reason,
  });
  expect(r.json).toMatchObject({ kind: "Status", apiVersion: "v1", status: "Failure", code, reason });
  expect(typeof r.json.message).toBe("string");
  expect(r.json.message.length).toBeGreaterThan(5);
  if (message !== undefined) {
    if (typeof message === "string") expect(r.json.message).toContain(message);
    else expect(r.json.message).toMatch(message);
  }
}

beforeAll(async () => {
  ns = await freshNamespace(t, "bad");
  cms = `/api/v1/namespaces/${ns}/configmaps`;
  const r = await api(t, "POST", cms, cm("target"));
  if (r.status !== 201) throw new Error(`setup: ${r.status} ${r.text}`);
});

describe("malformed bodies", () => {
  it("malformed JSON is 400 BadRequest", async () => {
    const r = await api(t, "POST", cms, '{"metadata": {"name": "x"', JSON_CT);
    expectStatus(r, 400, "BadRequest", /json/i);
  });

  it("a create or update body that is not JSON is refused in upstream's words", async () => {
    const r = await api(t, "POST", cms, "{bad json", JSON_CT);
    expectStatus(r, 400, "BadRequest");
    expect(r.json.message).toBe(
      "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; " +
        "json parse error: invalid character 'b' looking for beginning of object key string ({bad json)",
    );
    // YAML sent as JSON, as `kubectl create --raw` does: the start of the body in hex
    const yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n";
    const put = await api(t, "PUT", `${cms}/target`, yaml, JSON_CT);
    expect(put.status, put.text).toBe(400);
    expect(put.json.message).toBe(
      "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; " +
        "json parse error: invalid character 'a' looking for beginning of value " +
        "(61706956657273696f6e3a2076310a6b696e643a20436f6e6669674d6170 ...)",
    );
    const empty = await api(t, "POST", cms, "", JSON_CT);
    expect(empty.json.message).toBe(
      "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; " +
        "json parse error: unexpected end of JSON input (<empty>)",
    );
    // a subresource with a kind of its own names that kind
    const pods = `/api/v1/namespaces/${ns}/pods`;
    const binding = await api(t, "POST", `${pods}/nobody/binding`, '{"target":', JSON_CT);
    expect(binding.json.message).toMatch(
      /^the object provided is unrecognized \(must be of type Binding\): .*unexpected end of JSON input \(\{"target":\)$/,
    );
  });

  it("a patch that is not JSON (or YAML) is refused in the words of its type's patcher", async () => {
    const target = `${cms}/target`;
    const bad = "{bad";
    const go = "invalid character 'b' looking for beginning of object key string";
    const cases: [string, string, string][] = [
      ["application/strategic-merge-patch+json", "", go],
      ["application/strategic-merge-patch+json", "?fieldValidation=Ignore", go],
      ["application/merge-patch+json", "", `error decoding patch: ${go}`],
      ["application/merge-patch+json", "?fieldValidation=Ignore", "Invalid JSON Patch"],
      ["application/json-patch+json", "?fieldValidation=Strict", `error decoding patch: ${go}`],
      ["application/json-patch+json", "?fieldValidation=Ignore", go],
    ];
    for (const [type, query, message] of cases) {
      const r = await api(t, "PATCH", `${target}${query}`, bad, { "content-type": type });
      expectStatus(r, 400, "BadRequest");
      expect(r.json.message, `${type}${query}`).toBe(message);
    }
    const apply = await api(t, "PATCH", `${target}?fieldManager=m`, "a: [b\n", {
      "content-type": "application/apply-patch+yaml",
    });
    expectStatus(apply, 400, "BadRequest");
    expect(apply.json.message).toMatch(/^error decoding YAML: error converting YAML to JSON: /);
    // and the object is as it was
    expect((await api(t, "GET", target)).json.data).toEqual({ k: "v" });
  });

  it("a patch whose result holds a value of the wrong type is 422 on the field patch, as upstream's", async () => {
    const target = `${cms}/target`;
    const before = (await api(t, "GET", target)).json;
    // strategic merge: the converter's words, the patch quoted as Go's fmt prints a map
    const smp = await api(
      t,
      "PATCH",
      target,
      { data: { port: 8080 }, metadata: { labels: { a: "b" } } },
      {
        "content-type": "application/strategic-merge-patch+json",
      },
    );
    expectStatus(smp, 422, "Invalid");
    const smpCause =
      'Invalid value: "map[data:map[port:8080] metadata:map[labels:map[a:b]]]": cannot convert int64 to string';
    expect(smp.json.message).toBe(` "" is invalid: patch: ${smpCause}`);
    expect(smp.json.details).toEqual({
      causes: [{ reason: "FieldValueInvalid", message: smpCause, field: "patch" }],
    });
    const flag = await api(
      t,
      "PATCH",
      target,
      { immutable: "yes" },
      {
        "content-type": "application/strategic-merge-patch+json",
      },
    );
    expect(flag.json.message).toBe(
      ' "" is invalid: patch: Invalid value: "map[immutable:yes]": unrecognized type: bool',
    );
    // merge and JSON patch: encoding/json's words, the patched object quoted as Go marshals it
    const merge = await api(
      t,
      "PATCH",
      target,
      { data: { port: 8080 } },
      {
        "content-type": "application/merge-patch+json",
      },
    );
    expectStatus(merge, 422, "Invalid");
    const why = "json: cannot unmarshal number into Go struct field ConfigMap.data of type string";
    expect(merge.json.message).toMatch(
      /^ "" is invalid: patch: Invalid value: "\{\\"apiVersion\\":\\"v1\\",\\"data\\":\{\\"k\\":\\"v\\",\\"port\\":8080\},\\"kind\\":\\"ConfigMap\\",\\"metadata\\":\{/,
    );
    expect(merge.json.message.endsWith(`}": ${why}`)).toBe(true);
    const json = await api(t, "PATCH", target, [{ op: "add", path: "/data/port", value: 8080 }], {
      "content-type": "application/json-patch+json",
    });
    expectStatus(json, 422, "Invalid");
    expect(json.json.details.causes[0].message.endsWith(`: ${why}`)).toBe(true);
    // nothing was written
    expect((await api(t, "GET", target)).json.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  it("a whole number written with a fraction or an exponent is refused for an integer, as Go's decoder does", async () => {
    const svcs = `/api/v1/namespaces/${ns}/services`;
    const svc = (port: string, targetPort = "8080") =>
      `{"apiVersion":"v1","kind":"Service","metadata":{"name":"n"},"spec":{"ports":[{"port":${port},"targetPort":${targetPort}}]}}`;
    const handled = 'Service in version "v1" cannot be handled as a Service: ';
    for (const port of ["1e3", "80.0", "8E1"]) {
      const r = await api(t, "POST", svcs, svc(port), JSON_CT);
      expectStatus(r, 400, "BadRequest");
      expect(r.json.message).toBe(
        `${handled}json: cannot unmarshal number ${port} into Go struct field ServicePort.spec.ports.port of type int32`,
      );
    }
    // an int-or-string reads a number as an int32 the same way
    const target = await api(t, "POST", svcs, svc("80", "80.0"), JSON_CT);
    expect(target.json.message).toBe(
      `${handled}json: cannot unmarshal number 80.0 into Go value of type int32`,
    );
    // a float field, a quantity, or a fraction inside a string are fine
    const ok = await api(
      t,
      "POST",
      svcs,
      '{"apiVersion":"v1","kind":"Service","metadata":{"name":"n","annotations":{"a":"x,1.5"}},"spec":{"ports":[{"port":80}]}}',
      JSON_CT,
    );
    expect(ok.status, JSON.stringify(ok.json)).toBe(201);
  });

  it("a metadata that is not an object fails decoding, as upstream's; a null one is none", async () => {
    const r = await api(t, "POST", cms, { apiVersion: "v1", kind: "ConfigMap", metadata: "x" });
    expectStatus(r, 400, "BadRequest");
    expect(r.json.message).toBe(
      'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal string into Go struct field ConfigMap.metadata of type v1.ObjectMeta',
    );
    const put = await api(t, "PUT", `${cms}/target`, { apiVersion: "v1", kind: "ConfigMap", metadata: [1] });
    expect(put.json.message).toContain(
      "json: cannot unmarshal array into Go struct field ConfigMap.metadata",
    );
    // null is the zero value: the object has no name, which validation says
    const none = await api(t, "POST", cms, { apiVersion: "v1", kind: "ConfigMap", metadata: null });
    expectStatus(none, 422, "Invalid", "metadata.name");
  });

  it("malformed YAML is 400 BadRequest", async () => {
    const r = await api(t, "POST", cms, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [x\n", {
      "content-type": "application/yaml",
    });
    expectStatus(r, 400, "BadRequest", /yaml/i);
    expect(r.json.message).toMatch(
      /^the object provided is unrecognized \(must be of type ConfigMap\): error converting YAML to JSON: .* \(61706956657273696f6e3a2076310a6b696e643a20436f6e6669674d6170 \.\.\.\)$/,
    );
    // and well-formed YAML is accepted, as kubectl sends JSON but other clients send YAML
    const ok = await api(
      t,
      "POST",
      cms,
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  a: b\n",
      {
        "content-type": "application/yaml",
      },
    );
    expect(ok.status, ok.text).toBe(201);
    expect(ok.json.data).toEqual({ a: "b" });
  });

  it("a body that is not an object is 400 BadRequest", async () => {
    for (const body of ["[]", '"x"', "42", "null"]) {
      const r = await api(t, "POST", cms, body, JSON_CT);
      expect(r.status, `${body}: ${r.text}`).toBe(400);
      expectStatus(r, 400, "BadRequest");
    }
  });

  it("an empty body is 400 BadRequest", async () => {
    const r = await api(t, "POST", cms, "", JSON_CT);
    expectStatus(r, 400, "BadRequest");
  });

  it("a wrong apiVersion is 400 BadRequest naming it", async () => {
    const r = await api(t, "POST", cms, { ...cm("x"), apiVersion: "v2" });
    expectStatus(r, 400, "BadRequest", "v2");
    const other = await api(t, "POST", cms, { ...cm("x"), apiVersion: "apps/v1" });
    expectStatus(other, 400, "BadRequest", "apps/v1");
  });

  it("a wrong kind is 400 BadRequest naming it", async () => {
    const r = await api(t, "POST", cms, { ...cm("x"), kind: "Secret" });
    expectStatus(r, 400, "BadRequest", "Secret");
  });

  it("a body over 3 MiB is 413 RequestEntityTooLarge, declared or streamed, every time", async () => {
    const big = JSON.stringify(cm("big", { data: { a: "x".repeat(4 << 20) } }));
    const streamed = () => {
      const chunk = new TextEncoder().encode("x".repeat(1 << 20));
      let sent = 0;
      return new ReadableStream<Uint8Array>({
        pull(ctrl) {
          if (sent === 0) ctrl.enqueue(new TextEncoder().encode('{"metadata":{"name":"big2"},"data":{"a":"'));
          if (sent++ < 4) ctrl.enqueue(chunk);
          else {
            ctrl.enqueue(new TextEncoder().encode('"}}'));
            ctrl.close();
          }
        },
      });
    };
    // the client must get the 413 Status, not a reset connection, and the connection it used
    // must stay usable (or be closed cleanly): Go's net/http drains or lingers before closing
    const TOO_LARGE = "413 RequestEntityTooLarge Request entity too large: limit is 3145728";
    const outcomes: string[] = [];
    const attempt = async (label: string, init: RequestInit) => {
      const t0 = Date.now();
      try {
        const res = await fetch(t.url + cms, { ...init, signal: AbortSignal.timeout(15_000) });
        const text = await res.text();
        let body: any;
        try {
          body = JSON.parse(text);
        } catch {
          body = { reason: "(not JSON)", message: text.slice(0, 80) };
        }
        outcomes.push(`${label}: ${res.status} ${body.reason} ${body.message}`);
      } catch (e) {
        const err = e as Error & { cause?: { code?: string } };
        outcomes.push(`${label}: ${err.cause?.code ?? err.message} after ${Date.now() - t0} ms`);
      }
    };
    const headers = { authorization: `Bearer ${t.token}`, "content-type": "application/json" };
    const plain = { authorization: `Bearer ${t.token}`, "content-type": "text/plain" };
    for (let i = 0; i < 3; i++) await attempt(`declared ${i}`, { method: "POST", headers, body: big });
    // without a Content-Length the server has to count
    await attempt("chunked", { method: "POST", headers, body: streamed(), duplex: "half" } as RequestInit);
    // ordinary requests right after, on whatever connection the client pool reuses
    for (let i = 0; i < 3; i++) await attempt(`after ${i}`, { method: "POST", headers: plain, body: "{}" });
    const unsupported = (label: string) =>
      expect.stringMatching(new RegExp(`^${label}: 415 UnsupportedMediaType `));
    expect(outcomes).toEqual([
      `declared 0: ${TOO_LARGE}`,
      `declared 1: ${TOO_LARGE}`,
      `declared 2: ${TOO_LARGE}`,
      `chunked: ${TOO_LARGE}`,
      unsupported("after 0"),
      unsupported("after 1"),
      unsupported("after 2"),
    ]);
    expect((await api(t, "GET", `${cms}/big`)).status).toBe(404);
    expect((await api(t, "GET", `${cms}/big2`)).status).toBe(404);
  });

  it("an object past the store's 1.5 MiB bound is 413 and stored nowhere; the writes beside it land", async () => {
    // under 3 MiB, so it passes the body limit; a Pod has no size rule of its own
    const pods = `/api/v1/namespaces/${ns}/pods`;
    const pod = (name: string, value: string) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name },
      spec: { containers: [{ name: "c", image: "busybox", env: [{ name: "BIG", value }] }] },
    });
    // sent together, so they may share one commit with the one refused
    const [big, ...small] = await Promise.all([
      api(t, "POST", pods, pod("huge", "x".repeat(1600 * 1024))),
      ...[1, 2, 3].map((i) => api(t, "POST", pods, pod(`small-${i}`, "y"))),
    ]);
    expectStatus(big!, 413, "RequestEntityTooLarge", "etcdserver: request is too large");
    expect(small.map((r) => r.status)).toEqual([201, 201, 201]);
    expect((await api(t, "GET", `${pods}/huge`)).status).toBe(404);
    for (const i of [1, 2, 3]) expect((await api(t, "GET", `${pods}/small-${i}`)).status).toBe(200);
  });

  it("an unsupported Content-Type is 415 UnsupportedMediaType listing what is accepted", async () => {
    const r = await api(t, "POST", cms, JSON.stringify(cm("x")), { "content-type": "text/plain" });
    expectStatus(r, 415, "UnsupportedMediaType", "application/json");
    const put = await api(t, "PUT", `${cms}/target`, JSON.stringify(cm("target")), {
      "content-type": "application/xml",
    });
    expectStatus(put, 415, "UnsupportedMediaType", "application/json");
  });
});

describe("invalid objects", () => {
  it("names: upper case, bad characters, too long are 422 Invalid on metadata.name", async () => {
    const cases: Array<[string, string]> = [
      ["Bad", "RFC 1123"],
      ["a_b", "RFC 1123"],
      ["-lead", "RFC 1123"],
      ["a".repeat(254), "must be no more than 253 characters"],
    ];
    for (const [name, msg] of cases) {
      const r = await api(t, "POST", cms, cm(name));
      expectStatus(r, 422, "Invalid", msg);
      expect(r.json.message).toContain(
        `ConfigMap "${name}" is invalid: metadata.name: Invalid value: "${name}"`,
      );
      expect(r.json.details).toMatchObject({ name, kind: "ConfigMap" });
      expect
        .soft(r.json.details.causes)
        .toContainEqual(expect.objectContaining({ reason: "FieldValueInvalid", field: "metadata.name" }));
    }
    // a namespace name is a label (63), not a subdomain (253)
    const longNs = "n".repeat(64);
    const r = await api(t, "POST", "/api/v1/namespaces", {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: longNs },
    });
    expectStatus(r, 422, "Invalid", "must be no more than 63 characters");
  });

  it("a missing name is 422 Invalid (name or generateName is required)", async () => {
    const r = await api(t, "POST", cms, { apiVersion: "v1", kind: "ConfigMap", metadata: {} });
    expectStatus(r, 422, "Invalid", "metadata.name: Required value: name or generateName is required");
  });

  it("a pod without containers, or a container without image, is 422 Invalid with the field", async () => {
    const pods = `/api/v1/namespaces/${ns}/pods`;
    const none = await api(t, "POST", pods, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p" },
      spec: { containers: [] },
    });
    expectStatus(none, 422, "Invalid", "spec.containers: Required value");
    expect
      .soft(none.json.details.causes)
      .toContainEqual(expect.objectContaining({ reason: "FieldValueRequired", field: "spec.containers" }));
    const noSpec = await api(t, "POST", pods, { apiVersion: "v1", kind: "Pod", metadata: { name: "p" } });
    expectStatus(noSpec, 422, "Invalid", "spec.containers: Required value");
    const noImage = await api(t, "POST", pods, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p" },
      spec: { containers: [{ name: "c" }] },
    });
    expectStatus(noImage, 422, "Invalid", "spec.containers[0].image: Required value");
    expect
      .soft(noImage.json.details.causes)
      .toContainEqual(
        expect.objectContaining({ reason: "FieldValueRequired", field: "spec.containers[0].image" }),
      );
  });

  it("unknown fields: Strict is 400 BadRequest, Warn creates and warns, Ignore is silent", async () => {
    const body = cm("unk", { bogus: 1, metadata: { name: "unk", bogusMeta: "x" } });
    const strict = await api(t, "POST", `${cms}?fieldValidation=Strict`, body);
    // as kubectl shows it: Error from server (BadRequest): error when creating "cm.yaml": ...
    expectStatus(
      strict,
      400,
      "BadRequest",
      /^ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: /,
    );
    expect(strict.json.message).toContain('unknown field "bogus"');
    expect(strict.json.message).toContain('unknown field "metadata.bogusMeta"');
    const warn = await api(t, "POST", `${cms}?fieldValidation=Warn`, body);
    expect(warn.status, warn.text).toBe(201);
    expect(warn.headers.get("warning")).toContain('299 - "unknown field \\"bogus\\""');
    expect(warn.headers.get("warning")).toContain('299 - "unknown field \\"metadata.bogusMeta\\""');
    const ignore = await api(t, "POST", `${cms}?fieldValidation=Ignore`, {
      ...body,
      metadata: { name: "unk2", bogusMeta: "x" },
    });
    expect(ignore.status).toBe(201);
    expect(ignore.headers.get("warning")).toBeNull();
    // unknown fields are dropped, as decoding into the typed object drops them upstream
    for (const name of ["unk", "unk2"]) {
      const back = await api(t, "GET", `${cms}/${name}`);
      expect(back.status).toBe(200);
      expect.soft({ bogus: back.json.bogus, bogusMeta: back.json.metadata.bogusMeta }, name).toEqual({
        bogus: undefined,
        bogusMeta: undefined,
      });
      expect.soft(JSON.stringify(back.json.metadata.managedFields)).not.toContain("bogus");
    }
    const bad = await api(t, "POST", `${cms}?fieldValidation=Sometimes`, cm("unk3"));
    expectStatus(bad, 422, "Invalid", 'fieldValidation: Unsupported value: "Sometimes"');
  });

  it("dryRun with an unknown value is 422 Invalid", async () => {
    const r = await api(t, "POST", `${cms}?dryRun=Bogus`, cm("dry"));
    // upstream: dryRun: Unsupported value: []string{"Bogus"}: supported values: "All"
    expectStatus(r, 422, "Invalid", /dryRun: Unsupported value: .*Bogus.*supported values: "All"/);
    expect((await api(t, "GET", `${cms}/dry`)).status).toBe(404);
  });

  it("a PUT whose name differs from the URL is 400 BadRequest", async () => {
    const cur = await api(t, "GET", `${cms}/target`);
    const r = await api(t, "PUT", `${cms}/target`, {
      ...cur.json,
      metadata: { ...cur.json.metadata, name: "other" },
    });
    expectStatus(
      r,
      400,
      "BadRequest",
      "the name of the object (other) does not match the name on the URL (target)",
    );
  });

  it("a PUT or patch that would move the object to another name or namespace is 400, and stores nothing", async () => {
    const cur = await api(t, "GET", `${cms}/target`);
    const put = (metadata: Record<string, unknown>) =>
      api(t, "PUT", `${cms}/target`, { ...cur.json, metadata: { ...cur.json.metadata, ...metadata } });
    expectStatus(
      await put({ namespace: "elsewhere" }),
      400,
      "BadRequest",
      `the namespace of the object (elsewhere) does not match the namespace on the request (${ns})`,
    );
    expectStatus(
      await put({ name: undefined }),
      400,
      "BadRequest",
      "the name of the object (target based on URL) was undeterminable: name must be provided",
    );
    const merge = { "content-type": "application/merge-patch+json" };
    const patch = (body: unknown, ct = merge) => api(t, "PATCH", `${cms}/target`, JSON.stringify(body), ct);
    expectStatus(
      await patch({ metadata: { name: "zzz" } }),
      400,
      "BadRequest",
      "the name of the object (zzz) does not match the name on the URL (target)",
    );
    expectStatus(
      await patch(
        { metadata: { name: "zzz" } },
        { "content-type": "application/strategic-merge-patch+json" },
      ),
      400,
      "BadRequest",
      "the name of the object (zzz) does not match the name on the URL (target)",
    );
    expectStatus(
      await patch({ metadata: { namespace: "elsewhere" } }),
      400,
      "BadRequest",
      "the namespace of the provided object does not match the namespace sent on the request",
    );
    expectStatus(
      await patch({ metadata: { name: null } }),
      400,
      "BadRequest",
      "the name of the object (target based on URL) was undeterminable: name must be provided",
    );
    // a patch that leaves the namespace out keeps the request's
    const ok = await patch([{ op: "remove", path: "/metadata/namespace" }], {
      "content-type": "application/json-patch+json",
    });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.metadata.namespace).toBe(ns);
    const after = await api(t, "GET", `${cms}/target`);
    expect(after.json.metadata.resourceVersion).toBe(ok.json.metadata.resourceVersion);
    expect((await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps/zzz`)).status).toBe(404);
  });

  it("a body namespace different from the URL is 400 BadRequest", async () => {
    const r = await api(t, "POST", cms, { ...cm("nsx"), metadata: { name: "nsx", namespace: "elsewhere" } });
    expectStatus(
      r,
      400,
      "BadRequest",
      "the namespace of the provided object does not match the namespace sent on the request",
    );
  });
});

describe("routes, verbs and queries", () => {
  it("unknown resources and groups are 404 NotFound", async () => {
    for (const p of [
      `/api/v1/namespaces/${ns}/widgets`,
      "/api/v1/widgets",
      "/apis/widgets.example.com/v1/widgets",
      "/apis/apps/v9/deployments",
      "/api/v2/pods",
      `/api/v1/namespaces/${ns}/configmaps/target/bogus-subresource`,
    ]) {
      const r = await api(t, "GET", p);
      expect(r.status, p).toBe(404);
      expectStatus(r, 404, "NotFound");
    }
    const missing = await api(t, "GET", `${cms}/nope`);
    expectStatus(missing, 404, "NotFound", 'configmaps "nope" not found');
    expect(missing.json.details).toMatchObject({ name: "nope", kind: "configmaps" });
  });

  it("unsupported verbs are 405 MethodNotAllowed", async () => {
    const cases: Array<[string, string, unknown?]> = [
      ["PUT", cms, cm("x")], // update on a collection
      ["PATCH", cms, {}], // patch on a collection
      ["POST", `${cms}/target`, cm("target")], // create on a named object
      ["DELETE", "/api/v1/namespaces"], // namespaces have no deletecollection
    ];
    const got: string[] = [];
    for (const [method, p, body] of cases) {
      const headers = method === "PATCH" ? { "content-type": "application/merge-patch+json" } : undefined;
      const r = await api(t, method, p, body, headers);
      got.push(`${method} ${p}: ${r.status} ${r.json?.kind} ${r.json?.reason}`);
    }
    expect(got).toEqual(cases.map(([method, p]) => `${method} ${p}: 405 Status MethodNotAllowed`));
    // nothing was created or changed by the refused requests
    expect((await api(t, "GET", `${cms}/x`)).status).toBe(404);
  });

  it("a bad label selector is 400 BadRequest", async () => {
    for (const sel of ["a in (", "=x", "a==b==c", "!", "k in (a,b"]) {
      const r = await api(t, "GET", `${cms}?labelSelector=${encodeURIComponent(sel)}`);
      expect(r.status, `${sel}: ${r.text}`).toBe(400);
      expectStatus(r, 400, "BadRequest");
    }
    const bad = await api(t, "GET", `${cms}?labelSelector=${encodeURIComponent("a in (")}`);
    expect(bad.json.message).toContain("unable to parse requirement");
  });

  it("a path that does not percent-decode is 400 BadRequest on every route, even anonymous, and writes nothing", async () => {
    const cases: Array<[string, string]> = [
      [`${cms}/%FF`, 'invalid URL escape "%FF": not UTF-8'],
      [`${cms}/%C0%AF`, 'invalid URL escape "%C0%AF": not UTF-8'],
      [`${cms}/a%ZZb`, 'invalid URL escape "%ZZ"'],
      [`${cms}/a%2`, 'invalid URL escape "%2"'],
      ["/api/v1/namespaces/%FF/pods", "not UTF-8"],
      ["/apis/%E2%82/v1", "not UTF-8"],
      ["/healthz/%FF", "not UTF-8"],
      ["/edgeplane/tunnel/%FF", "not UTF-8"],
      ["/openapi/v3/apis/%FF", "not UTF-8"],
    ];
    for (const [p, message] of cases)
      for (const method of ["GET", "POST", "PUT", "DELETE"]) {
        const body = method === "POST" || method === "PUT" ? cm("x") : undefined;
        const r = await api(t, method, p, body);
        expect(r.status, `${method} ${p}: ${r.text}`).toBe(400);
        expectStatus(r, 400, "BadRequest", message);
        // no credentials: refused for the path before authentication, not a 401 (nor a 500)
        const anon = await fetch(t.url + p, { method });
        const status = await anon.json();
        expect({ code: anon.status, reason: status.reason }, `${method} ${p}`).toEqual({
          code: 400,
          reason: "BadRequest",
        });
      }
    expect((await api(t, "GET", `${cms}/x`)).status).toBe(404);
    // a well-formed escape still names the object it spells
    expect((await api(t, "GET", `${cms}/%74arget`)).status).toBe(200);
  });

  it("a bad limit or resourceVersion is 400 BadRequest", async () => {
    expectStatus(await api(t, "GET", `${cms}?limit=abc`), 400, "BadRequest");
    expectStatus(await api(t, "GET", `${cms}?watch=true&resourceVersion=abc`), 400, "BadRequest");
    expectStatus(await api(t, "GET", `${cms}?continue=garbage`), 400, "BadRequest");
  });
});

describe("bad patches", () => {
  const merge = { "content-type": "application/merge-patch+json" };
  const jsonPatch = { "content-type": "application/json-patch+json" };
  const smp = { "content-type": "application/strategic-merge-patch+json" };
  const apply = { "content-type": "application/apply-patch+yaml" };
  const target = () => `${cms}/target`;

  it("JSON patch: not a list is 400, an inapplicable operation is 422", async () => {
    expectStatus(await api(t, "PATCH", target(), '{"op":"add"}', jsonPatch), 400, "BadRequest", "jsonpatch");
    expectStatus(await api(t, "PATCH", target(), "[{", jsonPatch), 400, "BadRequest");
    for (const body of [
      [{ op: "replace", path: "/data/missing", value: "x" }],
      [{ op: "test", path: "/data/k", value: "other" }],
      [{ op: "remove", path: "/nope/deeper" }],
      [{ op: "frobnicate", path: "/data/k" }],
    ]) {
      const r = await api(t, "PATCH", target(), JSON.stringify(body), jsonPatch);
      expect(r.status, `${JSON.stringify(body)}: ${r.text}`).toBe(422);
      expectStatus(r, 422, "Invalid");
    }
    // nothing changed
    expect((await api(t, "GET", target())).json.data).toEqual({ k: "v" });
  });

  it("merge and strategic merge patch: malformed JSON is 400 BadRequest", async () => {
    expectStatus(await api(t, "PATCH", target(), '{"data":', merge), 400, "BadRequest");
    expectStatus(await api(t, "PATCH", target(), '{"data":', smp), 400, "BadRequest");
  });

  it("a patch that makes the object invalid is 422 Invalid", async () => {
    const r = await api(
      t,
      "PATCH",
      target(),
      JSON.stringify({ metadata: { labels: { "bad key!": "v" } } }),
      merge,
    );
    expectStatus(r, 422, "Invalid", "metadata.labels");
  });

  it("apply: malformed YAML is 400, no fieldManager is 422, force on a non-apply patch is 422", async () => {
    expectStatus(await api(t, "PATCH", `${target()}?fieldManager=t`, "data: [x\n", apply), 400, "BadRequest");
    expectStatus(
      await api(t, "PATCH", target(), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: target\n", apply),
      422,
      "Invalid",
      "fieldManager: Required value: is required for apply patch",
    );
    expectStatus(
      await api(t, "PATCH", `${target()}?force=true`, '{"data":{"k":"w"}}', merge),
      422,
      "Invalid",
      "force: Forbidden: may not be specified for non-apply patch",
    );
  });

  it("a patch with an unsupported content type is 415 UnsupportedMediaType", async () => {
    for (const ct of ["application/json", "text/plain", "application/x-patch"]) {
      const r = await api(t, "PATCH", target(), '{"data":{"k":"w"}}', { "content-type": ct });
      expect(r.status, `${ct}: ${r.text}`).toBe(415);
      expectStatus(r, 415, "UnsupportedMediaType", "application/merge-patch+json");
    }
  });

  it("a patch of a missing object is 404 NotFound", async () => {
    expectStatus(
      await api(t, "PATCH", `${cms}/nope`, '{"data":{}}', merge),
      404,
      "NotFound",
      'configmaps "nope" not found',
    );
  });
});

describe("bad delete options", () => {
  /** A fresh object per case, so a wrongly accepted delete cannot spoil the next case. */
  async function victim(): Promise<{ path: string; uid: string }> {
    const name = `victim-${Math.random().toString(36).slice(2, 8)}`;
    const r = await api(t, "POST", cms, cm(name));
    expect(r.status).toBe(201);
    return { path: `${cms}/${name}`, uid: r.json.metadata.uid };
  }
  async function stillThere(path: string): Promise<void> {
    const r = await api(t, "GET", path);
    expect(r.status, `${path} should not have been deleted`).toBe(200);
  }

  it("unknown propagationPolicy is 422 Invalid, in the query or the body", async () => {
    const v = await victim();
    expectStatus(
      await api(t, "DELETE", `${v.path}?propagationPolicy=Sideways`),
      422,
      "Invalid",
      'propagationPolicy: Unsupported value: "Sideways"',
    );
    expectStatus(
      await api(t, "DELETE", v.path, {
        kind: "DeleteOptions",
        apiVersion: "v1",
        propagationPolicy: "Sideways",
      }),
      422,
      "Invalid",
      "propagationPolicy",
    );
    await stillThere(v.path);
  });

  it("orphanDependents together with propagationPolicy is 422 Invalid", async () => {
    const v = await victim();
    const r = await api(t, "DELETE", v.path, { orphanDependents: true, propagationPolicy: "Background" });
    await stillThere(v.path);
    expectStatus(r, 422, "Invalid", "orphanDependents and deletionPropagation cannot be both set");
  });

  it("a non-numeric gracePeriodSeconds and a malformed body are 400 BadRequest", async () => {
    const v = await victim();
    expectStatus(await api(t, "DELETE", `${v.path}?gracePeriodSeconds=soon`), 400, "BadRequest");
    expectStatus(await api(t, "DELETE", v.path, "{not json", JSON_CT), 400, "BadRequest");
    await stillThere(v.path);
  });

  it("a dryRun with an unknown value is 422 Invalid", async () => {
    const v = await victim();
    const r = await api(t, "DELETE", `${v.path}?dryRun=Maybe`);
    await stillThere(v.path);
    expectStatus(r, 422, "Invalid", /dryRun: Unsupported value: .*Maybe/);
  });

  it("a failed uid precondition is 409 Conflict", async () => {
    const v = await victim();
    const zero = "00000000-0000-0000-0000-000000000000";
    const r = await api(t, "DELETE", v.path, { preconditions: { uid: zero } });
    await stillThere(v.path);
    expectStatus(
      r,
      409,
      "Conflict",
      `Precondition failed: UID in precondition: ${zero}, UID in object meta: ${v.uid}`,
    );
  });
});

describe("junk sweep over every served route", () => {
  it("no request gets a 5xx, and every error is a metav1.Status", async () => {
    const routes = await servedRoutes(t);
    expect(routes.length).toBeGreaterThan(20);
    const requests = junkRequests(routes, ns);
    expect(requests.length).toBeGreaterThan(100);
    expect(requests.length).toBeLessThan(1200); // bounded: several hundred
    const violations = await sweep(t, requests);
    console.log(`sweep: ${requests.length} requests over ${routes.length} routes`);
    expect(violations, JSON.stringify(violations, null, 1)).toEqual([]);
  }, 120_000);
});
