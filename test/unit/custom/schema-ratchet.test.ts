// Schema ratcheting of custom objects (api/custom/schema.ts validateValue with the old
// object): a fault in a value the update leaves as it was passes, one in a changed value does
// not, whether the value sits under a field, a list index or a map key that looks like one.
import { describe, expect, it } from "vitest";
import { type JSONSchemaProps, validateValue } from "../../../api/custom/schema";

const schema: JSONSchemaProps = {
  type: "object",
  properties: {
    spec: {
      type: "object",
      properties: {
        items: { type: "array", items: { type: "string", maxLength: 3 } },
        byKey: { type: "object", additionalProperties: { type: "string", maxLength: 3 } },
      },
    },
  },
};

const obj = (items: string[], byKey: Record<string, string>) => ({ spec: { items, byKey } });

describe("custom schema ratcheting", () => {
  it("lets an unchanged faulty value through and refuses a changed one", () => {
    const old = obj(["long!"], { "0": "long!", a: "long!" });
    // nothing changed: every fault ratchets
    expect(validateValue(obj(["long!"], { "0": "long!", a: "long!" }), schema, old)).toEqual([]);
    // each changed value is refused, at its own path, the map key "0" included
    const changed = validateValue(obj(["longer"], { "0": "longer", a: "longer" }), schema, old);
    expect(changed.map((c) => c.field).sort()).toEqual(["spec.byKey.0", "spec.byKey.a", "spec.items[0]"]);
    // a create (no old object) is refused at each
    expect(validateValue(old, schema)).toHaveLength(3);
  });
});
