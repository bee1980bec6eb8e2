// CustomResourceDefinitions and custom resources through real workerd and kubectl: a CRD is
// validated and established as upstream does it, and its resource is then served like a
// built-in one (discovery, OpenAPI v3, CRUD, watch, tables with its printer columns) with
// the version's schema pruning, defaulting and validating objects in upstream's words;
// deleting a namespace or the CRD removes the objects. On a server of its own: a CRD changes
// discovery for everything else.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, causes, freshNamespace, hasKubectl, kubectl, until } from "../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer } from "../helpers/own-server";

let t: OwnServer;
const CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const GV = "/apis/stable.example.com/v1";
const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io";

beforeAll(async () => {
  t = await startOwnServer();
}, 60_000);
afterAll(async () => {
  await t?.stop();
  removeStateDir(t?.stateDir);
});

function crontabCrd(more: { versions?: unknown[]; scope?: string } = {}) {
  const schema = {
    type: "object",
    properties: {
      spec: {
        type: "object",
        required: ["cronSpec"],
        properties: {
          cronSpec: { type: "string", pattern: "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$" },
          image: { type: "string", maxLength: 20 },
          replicas: { type: "integer", minimum: 1, maximum: 10, default: 1 },
          color: { type: "string", enum: ["red", "green"] },
          labels: { type: "object", additionalProperties: { type: "string" } },
          free: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
        },
      },
      status: { type: "object", properties: { replicas: { type: "integer" }, selector: { type: "string" } } },
    },
  };
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "crontabs.stable.example.com" },
    spec: {
      group: "stable.example.com",
      scope: more.scope ?? "Namespaced",
      names: { plural: "crontabs", singular: "crontab", kind: "CronTab", shortNames: ["ct"] },
      versions: more.versions ?? [
        {
          name: "v1",
          served: true,
          storage: true,
          schema: { openAPIV3Schema: schema },
          subresources: {
            status: {},
            scale: {
              specReplicasPath: ".spec.replicas",
              statusReplicasPath: ".status.replicas",
              labelSelectorPath: ".status.selector",
            },
          },
          additionalPrinterColumns: [
            { name: "Spec", type: "string", jsonPath: ".spec.cronSpec" },
            { name: "Replicas", type: "integer", jsonPath: ".spec.replicas" },
            { name: "Image", type: "string", jsonPath: ".spec.image", priority: 1 },
            { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
          ],
        },
        { name: "v1beta1", served: true, storage: false, schema: { openAPIV3Schema: schema } },
      ],
    },
  };
}

const cronTab = (name: string, spec: Record<string, unknown>, apiVersion = "stable.example.com/v1") => ({
  apiVersion,
  kind: "CronTab",
  metadata: { name },
  spec,
});

describe("apiextensions.k8s.io/v1 customresourcedefinitions", () => {
  it("refuses a CRD that breaks upstream's rules, with one cause per rule", async () => {
    const r = await api(t, "POST", CRDS, {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: "widgets.example" },
      spec: {
        group: "example",
        scope: "Global",
        names: { plural: "Widgets", kind: "Widget" },
        versions: [
          {
            name: "v1",
            served: true,
            storage: false,
            schema: { openAPIV3Schema: { type: "object", properties: { spec: { properties: {} } } } },
          },
        ],
      },
    });
    const found = causes(r);
    expect(found).toContain(
      'metadata.name: Invalid value: "widgets.example": must be spec.names.plural+"."+spec.group',
    );
    expect(found).toContain('spec.group: Invalid value: "example": should be a domain with at least one dot');
    expect(found).toContain(
      'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"',
    );
    expect(found.find((c) => c.startsWith("spec.names.plural: "))).toMatch(
      /^spec\.names\.plural: Invalid value: "Widgets": a DNS-1035 label/,
    );
    // one version: its schema is reported at the top-level path upstream converts it to
    expect(found).toContain(
      "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
    );
    expect(found.find((c) => c.endsWith("must have exactly one version marked as storage version"))).toMatch(
      /^spec\.versions: Invalid value: \[\]apiextensions\.CustomResourceDefinitionVersion\{apiextensions\.CustomResourceDefinitionVersion\{Name:"v1", Served:true, Storage:false,/,
    );
    const badScale = crontabCrd();
    badScale.spec.versions = [
      {
        ...(badScale.spec.versions[0] as object),
        subresources: { scale: { specReplicasPath: ".replicas", statusReplicasPath: ".status.replicas" } },
      },
    ];
    expect(causes(await api(t, "POST", CRDS, badScale))).toEqual([
      'spec.subresources.scale.specReplicasPath: Invalid value: ".replicas": should be a json path under .spec',
    ]);
    const noSchema = crontabCrd({ versions: [{ name: "v1", served: true, storage: true }] });
    expect(causes(await api(t, "POST", CRDS, noSchema))).toEqual([
      "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required",
    ]);
  });

  it("establishes a CRD on create, and serves its resource in discovery and OpenAPI v3", async () => {
    const r = await api(t, "POST", CRDS, crontabCrd());
    expect(r.status, r.text).toBe(201);
    const crd = r.json;
    expect(crd.metadata.generation).toBe(1);
    expect(crd.metadata.finalizers).toBeUndefined(); // added only when it is deleted
    expect(crd.spec.names.listKind).toBe("CronTabList");
    expect(crd.spec.conversion).toEqual({ strategy: "None" });
    expect(crd.status.acceptedNames).toEqual({
      plural: "crontabs",
      singular: "crontab",
      kind: "CronTab",
      listKind: "CronTabList",
      shortNames: ["ct"],
    });
    expect(crd.status.conditions.map((c: any) => [c.type, c.status, c.reason])).toEqual([
      ["NamesAccepted", "True", "NoConflicts"],
      ["Established", "True", "InitialNamesAccepted"],
    ]);
    expect(crd.status.storedVersions).toEqual(["v1"]);

    const list = await api(t, "GET", GV);
    expect(list.status, list.text).toBe(200);
    expect(list.json.resources.map((x: any) => [x.name, x.kind, x.namespaced, x.verbs.join(",")])).toEqual([
      ["crontabs", "CronTab", true, "delete,deletecollection,get,list,patch,create,update,watch"],
      ["crontabs/scale", "Scale", true, "get,patch,update"],
      ["crontabs/status", "CronTab", true, "get,patch,update"],
    ]);
    const group = await api(t, "GET", "/apis/stable.example.com");
    expect(group.json.preferredVersion.version).toBe("v1");
    expect(group.json.versions.map((v: any) => v.version)).toEqual(["v1", "v1beta1"]);
    const agg = await api(t, "GET", "/apis", undefined, {
      accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    });
    const entry = agg.json.items.find((g: any) => g.metadata.name === "stable.example.com");
    expect(entry.versions[0].resources[0].resource).toBe("crontabs");

    // kubectl apply --validate=strict needs a PATCH with fieldValidation for the exact kind
    const index = await api(t, "GET", "/openapi/v3");
    const ref = index.json.paths["apis/stable.example.com/v1"]?.serverRelativeURL;
    expect(ref).toBeDefined();
    const doc = (await api(t, "GET", ref)).json;
    const patch = doc.paths["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"].patch;
    expect(patch["x-kubernetes-group-version-kind"]).toEqual({
      group: "stable.example.com",
      version: "v1",
      kind: "CronTab",
    });
    expect(patch.parameters.map((p: any) => p.name)).toContain("fieldValidation");
    expect(
      doc.components.schemas["com.example.stable.v1.CronTab"].properties.spec.properties.replicas,
    ).toMatchObject({
      type: "integer",
      maximum: 10,
    });
  });
});

describe("custom resources", () => {
  let ns: string;
  beforeAll(async () => {
    ns = await freshNamespace(t, "cr");
  });
  const path = (name = "") => `${GV}/namespaces/${ns}/crontabs${name ? `/${name}` : ""}`;

  it("creates with defaults and prunes what the schema does not declare (Warn), or refuses it (Strict)", async () => {
    const body = cronTab("a", {
      cronSpec: "* * * * */5",
      image: "img",
      extra: 1,
      free: { any: { thing: 1 } },
    });
    (body.metadata as Record<string, unknown>).bogus = true;
    const r = await api(t, "POST", path(), body);
    expect(r.status, r.text).toBe(201);
    expect(r.json.spec).toEqual({
      cronSpec: "* * * * */5",
      image: "img",
      replicas: 1,
      free: { any: { thing: 1 } },
    });
    expect(r.json.metadata.generation).toBe(1);
    expect(r.json.metadata.bogus).toBeUndefined();
    expect(r.headers.get("warning")).toBe(
      '299 - "unknown field \\"metadata.bogus\\"", 299 - "unknown field \\"spec.extra\\""',
    );
    const strict = await api(
      t,
      "POST",
      `${path()}?fieldValidation=Strict`,
      cronTab("b", { cronSpec: "* * * * *", extra: 1 }),
    );
    expect(strict.status, strict.text).toBe(400);
    expect(strict.json.message).toBe(
      'CronTab in version "v1" cannot be handled as a CronTab: strict decoding error: unknown field "spec.extra"',
    );
  });

  it("validates against the version's schema, in kube-openapi's words", async () => {
    const r = await api(
      t,
      "POST",
      path(),
      cronTab("bad", { cronSpec: "nope", replicas: "three", image: "x".repeat(21), color: "blue" }),
    );
    expect(r.json.message).toMatch(/^CronTab\.stable\.example\.com "bad" is invalid: /);
    expect(causes(r).sort()).toEqual(
      [
        "spec.cronSpec: Invalid value: \"nope\": spec.cronSpec in body should match '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'",
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        "spec.image: Too long: may not be more than 20 bytes",
        'spec.color: Unsupported value: "blue": supported values: "red", "green"',
      ].sort(),
    );
    const types = (r.json.details.causes as any[]).map((c) => c.reason).sort();
    expect(types).toEqual([
      "FieldValueInvalid",
      "FieldValueNotSupported",
      "FieldValueTooLong",
      "FieldValueTypeInvalid",
    ]);
    expect(
      causes(await api(t, "POST", path(), cronTab("big", { cronSpec: "* * * * *", replicas: 11 }))),
    ).toEqual(["spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"]);
    expect(causes(await api(t, "POST", path(), cronTab("none", { image: "i" })))).toEqual([
      "spec.cronSpec: Required value",
    ]);
  });

  it("keeps status to its subresource, and counts generations by everything but metadata", async () => {
    const created = await api(t, "POST", path(), {
      ...cronTab("s", { cronSpec: "* * * * *" }),
      status: { replicas: 9 },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.json.status).toBeUndefined();
    const st = await api(
      t,
      "PATCH",
      `${path("s")}/status`,
      { status: { replicas: 3 }, spec: { replicas: 7 } },
      {
        "content-type": "application/merge-patch+json",
      },
    );
    expect(st.status, st.text).toBe(200);
    expect(st.json.status).toEqual({ replicas: 3 });
    expect(st.json.spec.replicas).toBe(1);
    expect(st.json.metadata.generation).toBe(1);
    const main = await api(
      t,
      "PATCH",
      path("s"),
      { status: { replicas: 5 }, spec: { replicas: 2 } },
      {
        "content-type": "application/merge-patch+json",
      },
    );
    expect(main.json.status).toEqual({ replicas: 3 });
    expect(main.json.spec.replicas).toBe(2);
    expect(main.json.metadata.generation).toBe(2);
    const labels = await api(
      t,
      "PATCH",
      path("s"),
      { metadata: { labels: { a: "b" } } },
      {
        "content-type": "application/merge-patch+json",
      },
    );
    expect(labels.json.metadata.generation).toBe(2);
  });

  it("scales through the CRD's paths, by kubectl scale and by a HorizontalPodAutoscaler", async () => {
    const created = await api(t, "POST", path(), cronTab("scaled", { cronSpec: "* * * * *" }));
    expect(created.status, created.text).toBe(201);
    await api(
      t,
      "PATCH",
      `${path("scaled")}/status`,
      { status: { replicas: 1, selector: "app=x" } },
      {
        "content-type": "application/merge-patch+json",
      },
    );
    const scale = await api(t, "GET", `${path("scaled")}/scale`);
    expect(scale.json).toMatchObject({
      apiVersion: "autoscaling/v1",
      kind: "Scale",
      spec: { replicas: 1 },
      status: { replicas: 1, selector: "app=x" },
    });
    if (hasKubectl) {
      const out = await kubectl(t, ["-n", ns, "scale", "crontab", "scaled", "--replicas=4"]);
      expect(out.stdout.trim(), out.stderr).toBe("crontab.stable.example.com/scaled scaled");
      const now = (await api(t, "GET", path("scaled"))).json;
      expect(now.spec.replicas).toBe(4);
      expect(now.metadata.generation).toBe(2);
    }
    const hpa = await api(t, "POST", `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers`, {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "scaled" },
      spec: {
        scaleTargetRef: { apiVersion: "stable.example.com/v1", kind: "CronTab", name: "scaled" },
        minReplicas: 6,
        maxReplicas: 8,
      },
    });
    expect(hpa.status, hpa.text).toBe(201);
    await until(
      "rescaled to minReplicas",
      async () => (await api(t, "GET", path("scaled"))).json.spec.replicas === 6,
    );
  });

  it("refuses a strategic merge patch, which has no Go type to merge by", async () => {
    const r = await api(
      t,
      "PATCH",
      path("a"),
      { spec: { replicas: 2 } },
      {
        "content-type": "application/strategic-merge-patch+json",
      },
    );
    expect(r.status, r.text).toBe(415);
    expect(r.json.message).toBe(
      "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
    );
  });

  it("prints the CRD's columns in tables, the priority ones only wide", async () => {
    const r = await api(t, "GET", path(), undefined, { accept: TABLE });
    expect(r.status, r.text).toBe(200);
    expect(r.json.columnDefinitions.map((c: any) => [c.name, c.type, c.priority])).toEqual([
      ["Name", "string", 0],
      ["Spec", "string", 0],
      ["Replicas", "integer", 0],
      ["Image", "string", 1],
      ["Age", "date", 0],
    ]);
    const row = r.json.rows.find((x: any) => x.cells[0] === "a");
    expect(row.cells.slice(0, 4)).toEqual(["a", "* * * * */5", 1, "img"]);
    expect(row.cells[4]).toMatch(/^\d+s$/);
    if (!hasKubectl) return;
    const out = await kubectl(t, ["-n", ns, "get", "ct", "a"]);
    expect(out.stdout.split("\n")[0].split(/\s{2,}/)).toEqual(["NAME", "SPEC", "REPLICAS", "AGE"]);
    const wide = await kubectl(t, ["-n", ns, "get", "crontabs", "a", "-o", "wide"]);
    expect(wide.stdout.split("\n")[0].split(/\s{2,}/)).toEqual(["NAME", "SPEC", "REPLICAS", "IMAGE", "AGE"]);
  });

  it("serves every served version, converting apiVersion only, with watch events in the version asked", async () => {
    const beta = await api(
      t,
      "POST",
      `/apis/stable.example.com/v1beta1/namespaces/${ns}/crontabs`,
      cronTab("beta", { cronSpec: "* * * * *" }, "stable.example.com/v1beta1"),
    );
    expect(beta.status, beta.text).toBe(201);
    expect(beta.json.apiVersion).toBe("stable.example.com/v1beta1");
    expect((await api(t, "GET", path("beta"))).json.apiVersion).toBe("stable.example.com/v1");
    const rv = beta.json.metadata.resourceVersion;
    const watch = await fetch(
      `${t.url}/apis/stable.example.com/v1beta1/namespaces/${ns}/crontabs?watch=1&resourceVersion=${Number(rv) - 1}&timeoutSeconds=1`,
      { headers: { authorization: `Bearer ${t.token}` } },
    );
    const events = (await watch.text())
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(events[0].object).toMatchObject({
      apiVersion: "stable.example.com/v1beta1",
      metadata: { name: "beta" },
    });
  });

  it("are removed with their namespace, once their own finalizers let go", async () => {
    const gone = await freshNamespace(t, "cr-gone");
    const p = `${GV}/namespaces/${gone}/crontabs`;
    const held = {
      ...cronTab("held", { cronSpec: "* * * * *" }),
      metadata: { name: "held", finalizers: ["example.com/hold"] },
    };
    expect((await api(t, "POST", p, held)).status).toBe(201);
    expect((await api(t, "DELETE", `/api/v1/namespaces/${gone}`)).status).toBe(200);
    const ns = await until("content remaining", async () => {
      const n = (await api(t, "GET", `/api/v1/namespaces/${gone}`)).json;
      return (
        n.status?.conditions?.some(
          (c: any) => c.type === "NamespaceContentRemaining" && c.status === "True",
        ) && n
      );
    });
    expect(ns.status.conditions.find((c: any) => c.type === "NamespaceContentRemaining").message).toBe(
      "Some resources are remaining: crontabs.stable.example.com has 1 resource instances",
    );
    await api(
      t,
      "PATCH",
      `${p}/held`,
      { metadata: { finalizers: null } },
      { "content-type": "application/merge-patch+json" },
    );
    await until(
      "namespace gone",
      async () => (await api(t, "GET", `/api/v1/namespaces/${gone}`)).status === 404,
    );
  });
});

describe("validation rules (x-kubernetes-validations)", () => {
  const LIMITS = "/apis/rules.example.com/v1/limits";
  const limitsCrd = (rules: unknown[]) => ({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "limits.rules.example.com" },
    spec: {
      group: "rules.example.com",
      scope: "Cluster",
      names: { plural: "limits", kind: "Limit" },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: "object",
              "x-kubernetes-validations": [
                {
                  rule: "self.metadata.name.size() < 10",
                  messageExpression: "'name ' + self.metadata.name + ' is too long'",
                },
              ],
              properties: {
                spec: {
                  type: "object",
                  properties: {
                    min: { type: "integer" },
                    max: { type: "integer" },
                    mode: { type: "string" },
                    "x-name": { type: "string" },
                  },
                  "x-kubernetes-validations": rules,
                },
              },
            },
          },
        },
      ],
    },
  });
  const limit = (name: string, spec: Record<string, unknown>) => ({
    apiVersion: "rules.example.com/v1",
    kind: "Limit",
    metadata: { name },
    spec,
  });

  it("refuses a CRD whose rule does not compile or names an unknown reason", async () => {
    const r = await api(
      t,
      "POST",
      CRDS,
      limitsCrd([{ rule: "self.min <=" }, { rule: "true", reason: "FieldValueOdd" }]),
    );
    const found = causes(r);
    expect(found.find((c) => c.includes("[0].rule"))).toMatch(
      /^spec\.validation\.openAPIV3Schema\.properties\[spec\]\.x-kubernetes-validations\[0\]\.rule: Invalid value: apiextensions\.ValidationRule\{Rule:"self\.min <=", Message:"", MessageExpression:"", Reason:\(\*apiextensions\.FieldValueErrorReason\)\(nil\), FieldPath:"", OptionalOldSelf:\(\*bool\)\(nil\)\}: compilation failed: /,
    );
    expect(found).toContain(
      'spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].reason: Unsupported value: "FieldValueOdd": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"',
    );
    // a field the schema does not declare fails the CRD, not each object later
    const unknown = causes(
      await api(
        t,
        "POST",
        CRDS,
        limitsCrd([{ rule: "self.max >= 0" }, { rule: "self.minimum <= self.max" }]),
      ),
    );
    expect(unknown).toHaveLength(1);
    expect(unknown[0]).toMatch(
      /^spec\.validation\.openAPIV3Schema\.properties\[spec\]\.x-kubernetes-validations\[1\]\.rule: Invalid value: .*Rule:"self\.minimum <= self\.max".*\}: compilation failed: ERROR: <input>:1:5: undefined field 'minimum'\n \| self\.minimum <= self\.max\n \| \.\.\.\.\^$/,
    );
  });

  it("checks objects against the rules, at their nodes, in upstream's words", async () => {
    const crd = limitsCrd([
      { rule: "self.min <= self.max", message: "min must not exceed max" },
      { rule: "self.mode == oldSelf.mode", message: "mode is immutable" },
      {
        rule: "!has(self.x__dash__name) || self.x__dash__name.startsWith('x')",
        reason: "FieldValueForbidden",
        fieldPath: ".x-name",
      },
    ]);
    expect((await api(t, "POST", CRDS, crd)).status).toBe(201);
    expect(causes(await api(t, "POST", LIMITS, limit("a", { min: 5, max: 1 })))).toEqual([
      'spec: Invalid value: "object": min must not exceed max',
    ]);
    expect(causes(await api(t, "POST", LIMITS, limit("b", { min: 1, max: 2, "x-name": "y" })))).toEqual([
      "spec.x-name: Forbidden: failed rule: !has(self.x__dash__name) || self.x__dash__name.startsWith('x')",
    ]);
    expect(causes(await api(t, "POST", LIMITS, limit("much-too-long", { min: 1, max: 2 })))).toEqual([
      '<nil>: Invalid value: "object": name much-too-long is too long',
    ]);
    expect(causes(await api(t, "POST", LIMITS, limit("c", { min: 1 })))).toEqual([
      'spec: Invalid value: "object": no such key: max evaluating rule: min must not exceed max',
    ]);
    // a schema error of a blocking kind keeps the rules from running
    expect(causes(await api(t, "POST", LIMITS, limit("d", { min: "one", max: 2 })))).toEqual([
      'spec.min: Invalid value: "string": spec.min in body must be of type integer: "string"',
      '<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
    ]);
    // the transition rule holds nothing against a create, and keeps mode on an update
    const ok = await api(t, "POST", LIMITS, limit("ok", { min: 1, max: 2, mode: "fast", "x-name": "xy" }));
    expect(ok.status, ok.text).toBe(201);
    const changed = await api(
      t,
      "PATCH",
      `${LIMITS}/ok`,
      { spec: { mode: "slow" } },
      {
        "content-type": "application/merge-patch+json",
      },
    );
    expect(causes(changed)).toEqual(['spec: Invalid value: "object": mode is immutable']);
    const same = await api(
      t,
      "PATCH",
      `${LIMITS}/ok`,
      { spec: { max: 3 } },
      {
        "content-type": "application/merge-patch+json",
      },
    );
    expect(same.status, same.text).toBe(200);

    // a rule added later: an update that leaves spec as it was goes through with a warning
    // (upstream's ratcheting); one that changes spec must satisfy it
    const stored = (await api(t, "GET", `${CRDS}/limits.rules.example.com`)).json;
    stored.spec.versions[0].schema.openAPIV3Schema.properties.spec["x-kubernetes-validations"].push({
      rule: "self.max > 5",
    });
    expect((await api(t, "PUT", `${CRDS}/limits.rules.example.com`, stored)).status).toBe(200);
    const merge = { "content-type": "application/merge-patch+json" };
    const labelled = await api(t, "PATCH", `${LIMITS}/ok`, { metadata: { labels: { a: "b" } } }, merge);
    expect(labelled.status, labelled.text).toBe(200);
    expect(labelled.headers.get("warning")).toBe(
      '299 - "spec: Invalid value: \\"object\\": failed rule: self.max > 5"',
    );
    expect(causes(await api(t, "PATCH", `${LIMITS}/ok`, { spec: { max: 4 } }, merge))).toEqual([
      'spec: Invalid value: "object": failed rule: self.max > 5',
    ]);

    // a schema tightened later: a value the update leaves as it was is let through (silently)
    const again = (await api(t, "GET", `${CRDS}/limits.rules.example.com`)).json;
    again.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.max.maximum = 2;
    expect((await api(t, "PUT", `${CRDS}/limits.rules.example.com`, again)).status).toBe(200);
    const relabelled = await api(t, "PATCH", `${LIMITS}/ok`, { metadata: { labels: { c: "d" } } }, merge);
    expect(relabelled.status, relabelled.text).toBe(200);
    expect(causes(await api(t, "PATCH", `${LIMITS}/ok`, { spec: { max: 4 } }, merge))).toEqual([
      "spec.max: Invalid value: 4: spec.max in body should be less than or equal to 2",
      'spec: Invalid value: "object": failed rule: self.max > 5',
    ]);
  });
});

describe("garbage collection with custom owners", () => {
  let ns: string;
  beforeAll(async () => {
    ns = await freshNamespace(t, "cr-gc");
  });
  const owned = (name: string, owner: any, block = false) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      ownerReferences: [
        {
          apiVersion: "stable.example.com/v1",
          kind: "CronTab",
          name: owner.metadata.name,
          uid: owner.metadata.uid,
          ...(block ? { blockOwnerDeletion: true } : {}),
        },
      ],
    },
    spec: { containers: [{ name: "c", image: "busybox" }] },
  });
  const crontabs = () => `${GV}/namespaces/${ns}/crontabs`;
  const pods = () => `/api/v1/namespaces/${ns}/pods`;

  it("deletes what a deleted custom object owned", async () => {
    const owner = (await api(t, "POST", crontabs(), cronTab("owner", { cronSpec: "* * * * *" }))).json;
    const pod = await api(t, "POST", pods(), owned("dependent", owner));
    expect(pod.status, pod.text).toBe(201);
    // while its owner is there, the collector (which has read the owner by now) leaves it
    await new Promise((r) => setTimeout(r, 1500));
    expect((await api(t, "GET", `${pods()}/dependent`)).status).toBe(200);
    expect((await api(t, "DELETE", `${crontabs()}/owner`)).status).toBe(200);
    await until(
      "dependent collected",
      async () => (await api(t, "GET", `${pods()}/dependent`)).status === 404,
      10_000,
    );
  });

  it("collects a custom object whose owner is gone, on its CRD's next pass", async () => {
    const cm = await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "owner-cm" },
    });
    expect(cm.status, cm.text).toBe(201);
    const dependent = {
      ...cronTab("owned-ct", { cronSpec: "* * * * *" }),
      metadata: {
        name: "owned-ct",
        ownerReferences: [
          { apiVersion: "v1", kind: "ConfigMap", name: "owner-cm", uid: cm.json.metadata.uid },
        ],
      },
    };
    expect((await api(t, "POST", crontabs(), dependent)).status).toBe(201);
    await new Promise((r) => setTimeout(r, 1500));
    expect((await api(t, "GET", `${crontabs()}/owned-ct`)).status).toBe(200); // its owner is there
    expect((await api(t, "DELETE", `/api/v1/namespaces/${ns}/configmaps/owner-cm`)).status).toBe(200);
    // a write to the CRD's objects wakes the collector's pass over them
    expect((await api(t, "POST", crontabs(), cronTab("nudge", { cronSpec: "* * * * *" }))).status).toBe(201);
    await until(
      "dependent collected",
      async () => (await api(t, "GET", `${crontabs()}/owned-ct`)).status === 404,
      10_000,
    );
  });

  it("holds a custom object deleted in the foreground until its blocking dependents are gone", async () => {
    const owner = (await api(t, "POST", crontabs(), cronTab("fg", { cronSpec: "* * * * *" }))).json;
    expect((await api(t, "POST", pods(), owned("blocker", owner, true))).status).toBe(201);
    const del = await api(t, "DELETE", `${crontabs()}/fg`, {
      kind: "DeleteOptions",
      apiVersion: "v1",
      propagationPolicy: "Foreground",
    });
    expect(del.status, del.text).toBe(200);
    expect(del.json.metadata.finalizers).toEqual(["foregroundDeletion"]);
    await until(
      "blocker collected",
      async () => (await api(t, "GET", `${pods()}/blocker`)).status === 404,
      10_000,
    );
    await until("owner gone", async () => (await api(t, "GET", `${crontabs()}/fg`)).status === 404, 10_000);
  });
});

describe("bad input", () => {
  const junk = (spec: unknown) => ({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "junks.j.example.com" },
    spec,
  });
  const version = (schema: unknown, more: Record<string, unknown> = {}) => ({
    group: "j.example.com",
    scope: "Namespaced",
    names: { plural: "junks", kind: "Junk" },
    versions: [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: schema }, ...more }],
  });

  it("gets a 4xx for a broken CRD, never a 500", async () => {
    for (const spec of [
      null,
      "spec",
      { names: null, versions: [null] },
      { ...version({ type: "object" }), versions: "x" },
      version(null),
      version({ type: "object", properties: { a: null } }),
      version({ type: "object", "x-kubernetes-validations": [null] }),
      version({ type: "object", "x-kubernetes-validations": [{ rule: 5 }] }),
      version({ type: "object", items: [] }),
    ]) {
      const r = await api(t, "POST", CRDS, junk(spec));
      expect(r.status, `${JSON.stringify(spec)}: ${r.text}`).toBeGreaterThanOrEqual(400);
      expect(r.status, `${JSON.stringify(spec)}: ${r.text}`).toBeLessThan(500);
    }
  });

  it("scales at a path the Scale's own fields do not share", async () => {
    const crd = junk(
      version(
        {
          type: "object",
          properties: { spec: { type: "object", properties: { size: { type: "integer" } } } },
        },
        { subresources: { scale: { specReplicasPath: ".spec.size", statusReplicasPath: ".status.size" } } },
      ),
    );
    expect((await api(t, "POST", CRDS, crd)).status).toBe(201);
    const p = "/apis/j.example.com/v1/namespaces/default/junks";
    const obj = { apiVersion: "j.example.com/v1", kind: "Junk", metadata: { name: "j" }, spec: { size: 1 } };
    expect((await api(t, "POST", p, obj)).status).toBe(201);
    const r = await api(
      t,
      "PATCH",
      `${p}/j/scale`,
      { spec: { replicas: 3 } },
      {
        "content-type": "application/merge-patch+json",
      },
    );
    expect(r.status, r.text).toBe(200);
    expect(r.json.spec.replicas).toBe(3);
    expect((await api(t, "GET", `${p}/j`)).json.spec.size).toBe(3);
  });
});

describe("deleting a CustomResourceDefinition", () => {
  it("deletes its objects first, refusing new ones meanwhile, then goes", async () => {
    const crd = crontabCrd({ scope: "Cluster" });
    crd.metadata.name = "gadgets.tools.example.com";
    Object.assign(crd.spec, {
      group: "tools.example.com",
      names: { plural: "gadgets", kind: "Gadget" },
      versions: [{ ...(crd.spec.versions[0] as object), additionalPrinterColumns: undefined }],
    });
    expect((await api(t, "POST", CRDS, crd)).status).toBe(201);
    const gadgets = "/apis/tools.example.com/v1/gadgets";
    const gadget = (name: string, finalizers?: string[]) => ({
      apiVersion: "tools.example.com/v1",
      kind: "Gadget",
      metadata: { name, finalizers },
      spec: { cronSpec: "* * * * *" },
    });
    for (const g of [gadget("g1"), gadget("g2", ["example.com/hold"])])
      expect((await api(t, "POST", gadgets, g)).status).toBe(201);

    const del = await api(t, "DELETE", `${CRDS}/gadgets.tools.example.com`);
    expect(del.status, del.text).toBe(200);
    expect(del.json.metadata.finalizers).toEqual(["customresourcecleanup.apiextensions.k8s.io"]);
    expect(del.json.status.conditions.find((c: any) => c.type === "Terminating")).toMatchObject({
      status: "True",
      reason: "InstanceDeletionPending",
    });
    const refused = await api(t, "POST", gadgets, gadget("g3"));
    expect(refused.status, refused.text).toBe(405);
    expect(refused.json.message).toBe("create not allowed while custom resource definition is terminating");
    await until("g1 deleted", async () => (await api(t, "GET", `${gadgets}/g1`)).status === 404);
    // g2 waits for its own finalizer, and the CRD for g2
    const waiting = await until("deletion check", async () => {
      const c = (await api(t, "GET", `${CRDS}/gadgets.tools.example.com`)).json;
      return c.status?.conditions?.find(
        (x: any) => x.type === "Terminating" && x.reason === "InstanceDeletionCheck",
      );
    });
    expect(waiting.message).toBe("could not confirm zero CustomResources remaining: 1 instances remaining");
    await api(
      t,
      "PATCH",
      `${gadgets}/g2`,
      { metadata: { finalizers: null } },
      {
        "content-type": "application/merge-patch+json",
      },
    );
    await until(
      "CRD gone",
      async () => (await api(t, "GET", `${CRDS}/gadgets.tools.example.com`)).status === 404,
      20_000,
    );
    expect((await api(t, "GET", gadgets)).status).toBe(404);
  }, 40_000);
});

describe.skipIf(!hasKubectl)("kubectl with a CRD", () => {
  it("applies a CRD and its objects, explains them and patches them by merge", async () => {
    const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.acme.example.com
spec:
  group: acme.example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the widget should be.
            properties:
              size: {type: integer, description: How big.}
`;
    expect((await kubectl(t, ["apply", "-f", "-"], { input: crd })).code).toBe(0);
    const ready = await kubectl(t, [
      "wait",
      "--for=condition=established",
      "crd/widgets.acme.example.com",
      "--timeout=20s",
    ]);
    expect(ready.code, ready.stderr).toBe(0);
    const ns = await freshNamespace(t, "kc-cr");
    const w = `apiVersion: acme.example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 2}\n`;
    const applied = await kubectl(t, ["-n", ns, "apply", "-f", "-"], { input: w });
    expect(applied.stdout.trim(), applied.stderr).toBe("widget.acme.example.com/w1 created");
    expect((await kubectl(t, ["-n", ns, "apply", "-f", "-"], { input: w })).stdout.trim()).toBe(
      "widget.acme.example.com/w1 unchanged",
    );
    const unknown = await kubectl(t, ["-n", ns, "apply", "-f", "-"], {
      input: `${w.replace("size: 2", "size: 2, colour: red")}`,
    });
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('strict decoding error: unknown field "spec.colour"');
    const explain = await kubectl(t, ["explain", "widget.spec"]);
    expect(explain.stdout).toContain("What the widget should be.");
    expect(explain.stdout).toMatch(/size\s+<integer>\s+How big\./);
    const patched = await kubectl(t, [
      "-n",
      ns,
      "patch",
      "wd",
      "w1",
      "--type=merge",
      "-p",
      '{"spec":{"size":3}}',
    ]);
    expect(patched.stdout.trim(), patched.stderr).toBe("widget.acme.example.com/w1 patched");
    const smp = await kubectl(t, ["-n", ns, "patch", "wd", "w1", "-p", '{"spec":{"size":4}}']);
    expect(smp.stderr).toContain("application/strategic-merge-patch+json is not supported");
    expect((await kubectl(t, ["-n", ns, "get", "wd", "w1", "-o", "jsonpath={.spec.size}"])).stdout).toBe("3");
    expect((await kubectl(t, ["-n", ns, "get", "wd"])).stdout.split("\n")[0].split(/\s{2,}/)).toEqual([
      "NAME",
      "AGE",
    ]);
    expect((await kubectl(t, ["-n", ns, "delete", "wd", "w1"])).stdout.trim()).toBe(
      'widget.acme.example.com "w1" deleted',
    );
  }, 60_000);
});
