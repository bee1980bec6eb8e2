import { describe, expect, it } from "vitest";
import { undefinedFieldError } from "../../../api/custom/rule-fields";
import type { JSONSchemaProps } from "../../../api/custom/schema";

const schema: JSONSchemaProps = {
  type: "object",
  properties: {
    metadata: { type: "object" },
    spec: {
      type: "object",
      properties: {
        replicas: { type: "integer" },
        "x-y": { type: "string" },
        labels: { type: "object", additionalProperties: { type: "string" } },
        free: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
        items: {
          type: "array",
          items: { type: "object", properties: { name: { type: "string" } } },
        },
      },
    },
  },
};

describe("rule field check", () => {
  it("passes what the schema declares, maps, kept unknown fields and the resource's own fields", () => {
    for (const rule of [
      "self.spec.replicas > 0",
      "has(self.spec.replicas)",
      "self.spec.x__dash__y != ''",
      "self.spec.labels.anything == 'a'",
      "self.spec.free.whatever.deeper == 1",
      "self.spec.items.all(i, i.name != '')",
      "self.spec.items[0].name != ''",
      "self.metadata.name.startsWith('a') && self.apiVersion != '' && self.kind != ''",
      "self.spec.labels.all(k, k.size() > 0)",
    ])
      expect(undefinedFieldError(rule, schema, true), rule).toBeUndefined();
  });

  it("finds a field the schema lacks, where cel-go points at it", () => {
    expect(undefinedFieldError("self.spec.replica > 0", schema, true)).toBe(
      "ERROR: <input>:1:10: undefined field 'replica'\n | self.spec.replica > 0\n | .........^",
    );
    expect(undefinedFieldError("self.spec.items.all(i, i.nam != '')", schema, true)).toMatch(
      /^ERROR: <input>:1:25: undefined field 'nam'\n \| self\.spec\.items\.all\(i, i\.nam != ''\)\n \| \.{24}\^$/,
    );
    expect(undefinedFieldError("self.sepc.replicas > 0", schema, true)).toContain("undefined field 'sepc'");
    // on a line of its own in a rule of several lines
    expect(undefinedFieldError("self.spec.replicas > 0 &&\n  self.spec.nope", schema, true)).toBe(
      "ERROR: <input>:2:12: undefined field 'nope'\n |   self.spec.nope\n | ...........^",
    );
    // below the root, apiVersion is a field like any other
    const spec = schema.properties!.spec;
    expect(undefinedFieldError("self.apiVersion == ''", spec, false)).toContain(
      "undefined field 'apiVersion'",
    );
    expect(undefinedFieldError("oldSelf.replica == self.replicas", spec, false)).toContain(
      "undefined field 'replica'",
    );
  });
});
