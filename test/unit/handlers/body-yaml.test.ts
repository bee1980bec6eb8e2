// YAML request bodies that are JSON text (workers/body.ts, json-dupes.ts): read as the YAML
// reader reads them, repeated keys refused as it refuses them, anything else left to it.

import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { parseBody } from "../../../workers/body";
import { duplicateKey } from "../../../workers/json-dupes";

const YAML_TYPE = "application/apply-patch+yaml";
const read = (text: string) => parseBody(text, YAML_TYPE, [YAML_TYPE]);

describe("YAML bodies that are JSON", () => {
  it("read as the YAML reader reads them", () => {
    const docs = [
      '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","labels":{"x":"1"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27","args":["--a=\\"q\\"","\\u00e9","\\/x"]}]}}',
      '  \n {"n": 1e3, "f": -0.5, "big": 12345678901234, "t": true, "z": null, "e": [], "o": {}}',
      '[{"a": 1}, {"a": 2}, [1, [2, {"a": 3}]]]',
      '{"a": {"b": 1}, "c": {"b": 2}, "list": [{"b": 3}, {"b": 4}], "s": "a"}',
    ];
    for (const d of docs) expect(read(d), d).toEqual(parse(d));
  });

  it("refuses a key repeated in one object, at any depth, escaped or not", () => {
    // naming the key (the YAML reader names a line and column)
    expect(() => read('{"a": 1, "b": {"c": 1, "c": 2}}')).toThrow('Map keys must be unique: "c"');
    for (const d of [
      '{"a": 1, "a": 2}',
      '{"x": {"y": [{"k": 1, "j": 2, "k": 3}]}}',
      '{"a": 1, "\\u0061": 2}',
      '[{"m": {"p": 1}}, {"q": {"p": 1, "p": 1}}]',
    ]) {
      expect(() => read(d), d).toThrow(/Map keys must be unique/);
      // as the YAML reader does
      expect(() => parse(d, { uniqueKeys: true }), d).toThrow(/unique/);
    }
  });

  it("tells keys from values and objects apart", () => {
    expect(duplicateKey('{"a": "a", "b": {"a": "b"}, "c": ["a", "a"], "d": "\\"a\\""}')).toBeUndefined();
    expect(duplicateKey('{"a": {"x": 1}, "b": {"x": 2}, "a\\"b": 1, "a\\\\": 2}')).toBeUndefined();
    expect(duplicateKey('{"s": "{\\"k\\":1,\\"k\\":2}"}')).toBeUndefined();
    expect(duplicateKey('{"outer": {"k": 1}, "k": 2, "k": 3}')).toBe("k");
  });

  it("leaves YAML that is not JSON to the YAML reader", () => {
    expect(read("apiVersion: v1\nkind: Pod\n")).toEqual({ apiVersion: "v1", kind: "Pod" });
    // flow style that JSON.parse refuses: unquoted keys, a trailing comma
    expect(read("{a: 1, b: [x, y],}")).toEqual({ a: 1, b: ["x", "y"] });
    expect(() => read("{a: 1, a: 2}")).toThrow(/Map keys must be unique/);
  });
});
