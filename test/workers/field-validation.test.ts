// fieldValidation=Strict|Warn|Ignore over keys a body repeats and fields its kind does not
// know, through the real Worker: what is reported, how it is worded, and in what order, as
// kube-apiserver's field validation tests (test/integration/apiserver/field_validation_test.go
// and the conformance test "should detect unknown and duplicate fields of a typed object")
// expect. Under Ignore a repeated key keeps its last value, as upstream's decoders keep it.
import { beforeAll, describe, expect, it } from "vitest";
import { api, freshNamespace, shared } from "../helpers/cluster";

const t = shared();
let deps = "";

const JSON_CT = { "content-type": "application/json" };
const YAML_CT = { "content-type": "application/yaml" };

/** A Deployment as JSON text, repeating keys and carrying fields apps/v1 does not know. */
const flawedJson = (name: string) => `{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {
    "name": "first-name",
    "name": "${name}",
    "labels": {"app": "fv"},
    "extraMeta": "m"
  },
  "spec": {
    "zExtra": "a",
    "extraTwice": "b",
    "extraTwice": "c",
    "minReadySeconds": 3,
    "minReadySeconds": 7,
    "selector": {"matchLabels": {"app": "fv"}},
    "template": {
      "metadata": {"labels": {"app": "fv"}},
      "spec": {
        "containers": [{
          "name": "web",
          "image": "nginx:1.27",
          "extraNested": "d",
          "imagePullPolicy": "Always",
          "imagePullPolicy": "IfNotPresent"
        }]
      }
    }
  }
}`;

/** How upstream begins the Strict error of a create or update: the body failed to decode into its type. */
const TYPED = 'Deployment in version "v1" cannot be handled as a Deployment: ';

/** What upstream reports for flawedJson, in order: each field where the decoder meets it. */
const JSON_REPORTS = [
  'duplicate field "metadata.name"',
  'unknown field "metadata.extraMeta"',
  'unknown field "spec.zExtra"',
  // unknown and repeated: reported as unknown, once
  'unknown field "spec.extraTwice"',
  'duplicate field "spec.minReadySeconds"',
  'unknown field "spec.template.spec.containers[0].extraNested"',
  'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
];

/** The same Deployment as block YAML. */
const flawedYaml = (name: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: first-name
  name: ${name}
  extraMeta: m
  labels:
    app: fv
spec:
  zExtra: a
  extraTwice: b
  extraTwice: c
  minReadySeconds: 3
  minReadySeconds: 7
  selector:
    matchLabels:
      app: fv
  template:
    metadata:
      labels:
        app: fv
    spec:
      containers:
      - name: web
        image: nginx:1.27
        extraNested: d
        imagePullPolicy: Always
        imagePullPolicy: IfNotPresent
`;

/** YAML's repeated keys by line, then the unknown fields in sorted key order (upstream reads YAML into a map). */
const YAML_LINES = [
  'line 5: key "name" already set in map',
  'line 12: key "extraTwice" already set in map',
  'line 14: key "minReadySeconds" already set in map',
  'line 28: key "imagePullPolicy" already set in map',
];
const YAML_UNKNOWN = [
  'unknown field "metadata.extraMeta"',
  'unknown field "spec.extraTwice"',
  'unknown field "spec.template.spec.containers[0].extraNested"',
  'unknown field "spec.zExtra"',
];

const valid = (name: string) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name, labels: { app: "fv" } },
  spec: {
    replicas: 0,
    selector: { matchLabels: { app: "fv" } },
    template: {
      metadata: { labels: { app: "fv" } },
      spec: { containers: [{ name: "web", image: "nginx:1.27", imagePullPolicy: "Always" }] },
    },
  },
});

/** The texts of a response's Warning header, in order. */
function warnings(r: { headers: Headers }): string[] {
  const h = r.headers.get("warning");
  if (!h) return [];
  return [...h.matchAll(/299 - ("(?:[^"\\]|\\.)*")/g)].map((m) => JSON.parse(m[1]) as string);
}

function expectStrict(r: { status: number; json: any; text: string }, message: string) {
  expect(r.status, r.text).toBe(400);
  expect(r.json).toMatchObject({ kind: "Status", reason: "BadRequest", code: 400 });
  expect(r.json.message).toBe(message);
}

beforeAll(async () => {
  const ns = await freshNamespace(t, "fv");
  deps = `/apis/apps/v1/namespaces/${ns}/deployments`;
});

describe("field validation of repeated keys and unknown fields", () => {
  it("the conformance case: an unknown field, then a repeated one, in one Strict error", async () => {
    const body = `{"apiVersion": "apps/v1", "kind": "Deployment",
      "metadata": {"name": "conf", "labels": {"app": "fv"}},
      "spec": {"unknownField": "foo", "replicas": 2, "replicas": 3,
        "selector": {"matchLabels": {"app": "fv"}},
        "template": {"metadata": {"labels": {"app": "fv"}},
          "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]}}}}`;
    const r = await api(t, "POST", `${deps}?fieldValidation=Strict&fieldManager=fv`, body, JSON_CT);
    // the conformance test looks for this within the message
    expectStrict(
      r,
      `${TYPED}strict decoding error: unknown field "spec.unknownField", duplicate field "spec.replicas"`,
    );
  });

  it("a JSON create: Strict refuses, Warn and the default warn in text order, Ignore keeps the last value", async () => {
    expectStrict(
      await api(t, "POST", `${deps}?fieldValidation=Strict`, flawedJson("post-strict"), JSON_CT),
      `${TYPED}strict decoding error: ${JSON_REPORTS.join(", ")}`,
    );
    expect((await api(t, "GET", `${deps}/post-strict`)).status).toBe(404);
    for (const [name, query] of [
      ["post-warn", "?fieldValidation=Warn"],
      ["post-default", ""],
    ]) {
      const r = await api(t, "POST", `${deps}${query}`, flawedJson(name), JSON_CT);
      expect(r.status, r.text).toBe(201);
      expect(warnings(r), name).toEqual(JSON_REPORTS);
    }
    const r = await api(t, "POST", `${deps}?fieldValidation=Ignore`, flawedJson("post-ignore"), JSON_CT);
    expect(r.status, r.text).toBe(201);
    expect(warnings(r)).toEqual([]);
    expect(r.json.metadata.name).toBe("post-ignore");
    expect(r.json.spec.minReadySeconds).toBe(7);
    expect(r.json.spec.template.spec.containers[0].imagePullPolicy).toBe("IfNotPresent");
    expect(r.json.spec.zExtra).toBeUndefined();
  });

  it("a JSON update reports the same", async () => {
    const name = "put-target";
    expect((await api(t, "POST", deps, valid(name))).status).toBe(201);
    expectStrict(
      await api(t, "PUT", `${deps}/${name}?fieldValidation=Strict`, flawedJson(name), JSON_CT),
      `${TYPED}strict decoding error: ${JSON_REPORTS.join(", ")}`,
    );
    const r = await api(t, "PUT", `${deps}/${name}`, flawedJson(name), JSON_CT);
    expect(r.status, r.text).toBe(200);
    expect(warnings(r)).toEqual(JSON_REPORTS);
  });

  it("a YAML create words repeated keys as the YAML reader does, before sorted unknown fields", async () => {
    expectStrict(
      await api(t, "POST", `${deps}?fieldValidation=Strict`, flawedYaml("yaml-strict"), YAML_CT),
      `${TYPED}strict decoding error: yaml: unmarshal errors:\n${YAML_LINES.map((l) => `  ${l}`).join("\n")}, ${YAML_UNKNOWN.join(", ")}`,
    );
    const warn = await api(t, "POST", `${deps}?fieldValidation=Warn`, flawedYaml("yaml-warn"), YAML_CT);
    expect(warn.status, warn.text).toBe(201);
    expect(warnings(warn)).toEqual([...YAML_LINES, ...YAML_UNKNOWN]);
    const ignore = await api(t, "POST", `${deps}?fieldValidation=Ignore`, flawedYaml("yaml-ignore"), YAML_CT);
    expect(ignore.status, ignore.text).toBe(201);
    expect(warnings(ignore)).toEqual([]);
    expect(ignore.json.spec.minReadySeconds).toBe(7);
  });

  it("merge and strategic merge patches: the patch's repeated keys, then the result's unknown fields", async () => {
    const patch = `{"spec": {"zExtra": "a", "extraTwice": "b", "extraTwice": "c",
      "minReadySeconds": 3, "minReadySeconds": 5,
      "template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.27", "extraNested": "d",
        "imagePullPolicy": "Never", "imagePullPolicy": "IfNotPresent"}]}}}}`;
    const reports = [
      'duplicate field "spec.extraTwice"',
      'duplicate field "spec.minReadySeconds"',
      'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
      'unknown field "spec.extraTwice"',
      'unknown field "spec.template.spec.containers[0].extraNested"',
      'unknown field "spec.zExtra"',
    ];
    for (const type of ["application/strategic-merge-patch+json", "application/merge-patch+json"]) {
      const name = type.includes("strategic") ? "smp" : "merge";
      expect((await api(t, "POST", deps, valid(name))).status).toBe(201);
      const ct = { "content-type": type };
      expectStrict(
        await api(t, "PATCH", `${deps}/${name}?fieldValidation=Strict`, patch, ct),
        `strict decoding error: ${reports.join(", ")}`,
      );
      const warn = await api(t, "PATCH", `${deps}/${name}?fieldValidation=Warn`, patch, ct);
      expect(warn.status, warn.text).toBe(200);
      expect(warnings(warn), type).toEqual(reports);
      expect(warn.json.spec.minReadySeconds).toBe(5);
      const ignore = await api(t, "PATCH", `${deps}/${name}?fieldValidation=Ignore`, patch, ct);
      expect(ignore.status, ignore.text).toBe(200);
      expect(warnings(ignore)).toEqual([]);
    }
  });

  it("a JSON patch: its operations' unknown and repeated fields, then the result's unknown fields", async () => {
    const name = "jsonpatch";
    expect((await api(t, "POST", deps, valid(name))).status).toBe(201);
    const patch = `[
      {"op": "add", "path": "/spec/zExtra", "value": "a", "bogus": "x", "bogus": "y"},
      {"op": "add", "path": "/spec/other", "path": "/spec/extraOther", "value": "b"},
      {"op": "add", "path": "/spec/minReadySeconds", "value": 4}
    ]`;
    // an operation's field both unknown and repeated is reported as unknown, once
    const reports = [
      'json patch unknown field "[0].bogus"',
      'json patch duplicate field "[1].path"',
      'unknown field "spec.extraOther"',
      'unknown field "spec.zExtra"',
    ];
    const ct = { "content-type": "application/json-patch+json" };
    expectStrict(
      await api(t, "PATCH", `${deps}/${name}?fieldValidation=Strict`, patch, ct),
      `strict decoding error: ${reports.join(", ")}`,
    );
    const warn = await api(t, "PATCH", `${deps}/${name}`, patch, ct);
    expect(warn.status, warn.text).toBe(200);
    expect(warnings(warn)).toEqual(reports);
    expect(warn.json.spec.minReadySeconds).toBe(4);
  });

  it("server-side apply: repeated keys by line, refused only under Strict", async () => {
    const body = (name: string) => `{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {"name": "${name}", "labels": {"app": "fv"}},
  "spec": {
    "minReadySeconds": 1,
    "minReadySeconds": 2,
    "selector": {"matchLabels": {"app": "fv"}},
    "template": {"metadata": {"labels": {"app": "fv"}},
      "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}
  }
}`;
    const ct = { "content-type": "application/apply-patch+yaml" };
    const strict = await api(
      t,
      "PATCH",
      `${deps}/apply-strict?fieldManager=fv&fieldValidation=Strict`,
      body("apply-strict"),
      ct,
    );
    expectStrict(
      strict,
      'error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 7: key "minReadySeconds" already set in map',
    );
    const warn = await api(t, "PATCH", `${deps}/apply-warn?fieldManager=fv`, body("apply-warn"), ct);
    expect(warn.status, warn.text).toBe(201);
    expect(warnings(warn)).toEqual(['line 7: key "minReadySeconds" already set in map']);
    expect(warn.json.spec.minReadySeconds).toBe(2);
    const ignore = await api(
      t,
      "PATCH",
      `${deps}/apply-warn?fieldManager=fv&fieldValidation=Ignore`,
      body("apply-warn"),
      ct,
    );
    expect(ignore.status, ignore.text).toBe(200);
    expect(warnings(ignore)).toEqual([]);
  });

  it("a body repeating 20,000 keys is warned about within a bounded header", async () => {
    const ns = deps.split("/")[5];
    const pairs = Array.from({ length: 20_000 }, (_, i) => `"k${i}": "a", "k${i}": "b"`).join(", ");
    const body = `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "many-repeats"}, "data": {${pairs}}}`;
    const r = await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, body, JSON_CT);
    expect(r.status, r.text.slice(0, 300)).toBe(201);
    expect(r.json.data.k19999).toBe("b");
    const header = r.headers.get("warning") ?? "";
    expect(header.length).toBeGreaterThan(4000);
    expect(header.length).toBeLessThan(8 * 1024);
    expect(warnings(r)[0]).toBe('duplicate field "data.k0"');
  });

  it("subresources with kinds of their own: scale, binding and eviction", async () => {
    const ns = deps.split("/")[5];
    expect((await api(t, "POST", deps, valid("scaled"))).status).toBe(201);
    const scale = {
      apiVersion: "autoscaling/v1",
      kind: "Scale",
      metadata: { name: "scaled" },
      spec: { replicas: 2, extra: 1 },
    };
    expectStrict(
      await api(t, "PUT", `${deps}/scaled/scale?fieldValidation=Strict`, scale),
      'Scale in version "v1" cannot be handled as a Scale: strict decoding error: unknown field "spec.extra"',
    );
    expectStrict(
      await api(t, "PUT", `${deps}/scaled/scale?fieldValidation=Strict`, { spec: { replicas: 2 }, x: 1 }),
      'Scale in version "v1" cannot be handled as a Scale: strict decoding error: unknown field "x"',
    );
    const put = await api(t, "PUT", `${deps}/scaled/scale`, scale);
    expect(put.status, put.text).toBe(200);
    expect(warnings(put)).toEqual(['unknown field "spec.extra"']);
    expect(put.json.spec).toEqual({ replicas: 2 });
    const merge = { "content-type": "application/merge-patch+json" };
    expectStrict(
      await api(
        t,
        "PATCH",
        `${deps}/scaled/scale?fieldValidation=Strict`,
        '{"spec":{"replicas":3,"replicas":4,"other":1}}',
        merge,
      ),
      'strict decoding error: duplicate field "spec.replicas", unknown field "spec.other"',
    );

    const pods = `/api/v1/namespaces/${ns}/pods`;
    const pod = (name: string) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name },
      spec: { schedulerName: "none", containers: [{ name: "c", image: "nginx:1.27" }] },
    });
    expect((await api(t, "POST", pods, pod("bound"))).status).toBe(201);
    const binding = {
      apiVersion: "v1",
      kind: "Binding",
      metadata: { name: "bound" },
      target: { kind: "Node", name: "n1", extra: 1 },
    };
    expectStrict(
      await api(t, "POST", `${pods}/bound/binding?fieldValidation=Strict`, binding),
      'Binding in version "v1" cannot be handled as a Binding: strict decoding error: unknown field "target.extra"',
    );
    expect((await api(t, "GET", `${pods}/bound`)).json.spec.nodeName).toBeUndefined();
    expect((await api(t, "POST", `${pods}/bound/binding?fieldValidation=Ignore`, binding)).status).toBe(201);
    expect((await api(t, "GET", `${pods}/bound`)).json.spec.nodeName).toBe("n1");

    expect((await api(t, "POST", pods, pod("evicted"))).status).toBe(201);
    const eviction = {
      apiVersion: "policy/v1",
      kind: "Eviction",
      metadata: { name: "evicted" },
      deleteOptions: { extra: 1 },
    };
    expectStrict(
      await api(t, "POST", `${pods}/evicted/eviction?fieldValidation=Strict`, eviction),
      'Eviction in version "v1" cannot be handled as a Eviction: strict decoding error: unknown field "deleteOptions.extra"',
    );
    // without apiVersion and kind the body is read as the URL's kind, and worded so
    expectStrict(
      await api(t, "POST", `${pods}/evicted/eviction?fieldValidation=Strict`, {
        metadata: { name: "evicted" },
        x: 1,
      }),
      'Eviction in version "v1" cannot be handled as a Eviction: strict decoding error: unknown field "x"',
    );
    expect((await api(t, "GET", `${pods}/evicted`)).status).toBe(200);
  });
});
