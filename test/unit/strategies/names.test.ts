import { describe, expect, it } from "vitest";
import { invalid } from "../../../api/errors";
import {
  formatLabelSelector,
  selectorMatches,
  validateObjectMeta,
  validateObjectMetaUpdate,
} from "../../../api/validation/metadata";
import {
  isDNS1035Label,
  isDNS1123Label,
  isDNS1123Subdomain,
  isIP,
  isQualifiedName,
  isValidLabelValue,
} from "../../../api/validation/names";

describe("names", () => {
  it("rejects a bad subdomain with upstream's message", () => {
    expect(isDNS1123Subdomain("Foo_bar")).toEqual([
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ]);
    expect(isDNS1123Subdomain("a.b-c")).toEqual([]);
  });

  it("labels: double space between examples as upstream prints it", () => {
    expect(isDNS1123Label("a.b")[0]).toBe(
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    );
    expect(isDNS1123Label("x".repeat(64))).toContain("must be no more than 63 characters");
    expect(isDNS1035Label("1abc")).toHaveLength(1);
    expect(isDNS1035Label("abc-1")).toEqual([]);
  });

  it("qualified names and label values", () => {
    expect(isQualifiedName("example.com/my-key")).toEqual([]);
    expect(isQualifiedName("/x")).toEqual(["prefix part must be non-empty"]);
    expect(isQualifiedName("a/b/c")[0]).toMatch(/^a qualified name must consist of/);
    expect(isQualifiedName("-bad")[0]).toMatch(/^name part must consist of alphanumeric/);
    expect(isValidLabelValue("")).toEqual([]);
    expect(isValidLabelValue("bad value")[0]).toMatch(/^a valid label must be an empty string/);
  });

  it("IP addresses", () => {
    expect(isIP("10.0.0.1")).toBe(true);
    expect(isIP("fd00::1")).toBe(true);
    expect(isIP("::ffff:10.0.0.1")).toBe(true);
    expect(isIP("10.0.0.256")).toBe(false);
    expect(isIP("foo")).toBe(false);
  });
});

describe("object meta", () => {
  it("requires a name and a namespace", () => {
    const causes = validateObjectMeta({}, { namespaced: true });
    expect(causes).toEqual([
      {
        type: "FieldValueRequired",
        field: "metadata.name",
        message: "Required value: name or generateName is required",
      },
      { type: "FieldValueRequired", field: "metadata.namespace", message: "Required value" },
    ]);
  });

  it("forbids a namespace on cluster-scoped kinds and checks generateName with a trailing dash", () => {
    const causes = validateObjectMeta(
      { name: "a", generateName: "web-", namespace: "x" },
      { namespaced: false },
    );
    expect(causes).toEqual([
      {
        type: "FieldValueForbidden",
        field: "metadata.namespace",
        message: "Forbidden: not allowed on this type",
      },
    ]);
    expect(validateObjectMeta({ generateName: "Web-", name: "a" }, { namespaced: false })[0].field).toBe(
      "metadata.generateName",
    );
  });

  it("reports bad labels on the key and on the value", () => {
    const causes = validateObjectMeta(
      { name: "a", namespace: "d", labels: { "bad key": "v", ok: "bad value" } },
      { namespaced: true },
    );
    expect(causes.map((c) => c.field)).toEqual(["metadata.labels", "metadata.labels[ok]"]);
    const err = invalid({ group: "", kind: "Pod" }, "a", causes);
    expect(err.message).toMatch(
      /^Pod "a" is invalid: \[metadata.labels: Invalid value: "bad key": name part must consist/,
    );
  });

  it("limits annotation size", () => {
    const causes = validateObjectMeta(
      { name: "a", annotations: { big: "x".repeat(256 * 1024) } },
      { namespaced: false },
    );
    expect(causes).toEqual([
      {
        type: "FieldValueTooLong",
        field: "metadata.annotations",
        message: "Too long: may not be more than 262144 bytes",
      },
    ]);
  });

  it("name is immutable on update", () => {
    expect(validateObjectMetaUpdate({ name: "b", namespace: "d" }, { name: "a", namespace: "d" })).toEqual([
      {
        type: "FieldValueInvalid",
        field: "metadata.name",
        message: 'Invalid value: "b": field is immutable',
      },
    ]);
  });
});

describe("label selectors", () => {
  const sel = {
    matchLabels: { app: "web" },
    matchExpressions: [{ key: "tier", operator: "In", values: ["b", "a"] }],
  };
  it("matches and formats", () => {
    expect(selectorMatches(sel, { app: "web", tier: "a" })).toBe(true);
    expect(selectorMatches(sel, { app: "web" })).toBe(false);
    expect(formatLabelSelector(sel)).toBe("app=web,tier in (a,b)");
    expect(formatLabelSelector({})).toBe("<none>");
  });
});
