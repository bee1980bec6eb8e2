// YAML request bodies (workers/body.ts, json-scan.ts): JSON text read as the YAML reader
// would read it, the rest by that reader, and a key repeated in one map refused either way.

import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { parseBody } from "../../../workers/body";
import { duplicateKey } from "../../../workers/json-scan";

const YAML_TYPE = "application/apply-patch+yaml";
const read = (text: string) => parseBody(text, YAML_TYPE, [YAML_TYPE]);

describe("YAML bodies", () => {
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

  it("refuses a key repeated in block YAML, in nested maps and in sequence items", () => {
    expect(() => read("a: 1\nb: 2\na: 3\n")).toThrow('Map keys must be unique: "a"');
    expect(() => read("x:\n  y:\n    - k: 1\n      k: 2\n")).toThrow('Map keys must be unique: "k"');
    // 1 and "1" are one key once the document is JSON
    expect(() => read("1: a\n'1': b\n")).toThrow("Map keys must be unique");
    expect(read("a:\n  k: 1\nb:\n  k: 2\nc:\n  - k: 3\n  - k: 4\n")).toEqual({
      a: { k: 1 },
      b: { k: 2 },
      c: [{ k: 3 }, { k: 4 }],
    });
  });

  it("expands aliases, and refuses alias bombs, cycles and several documents", () => {
    expect(read("a: &x {b: 1}\nc: *x\n")).toEqual({ a: { b: 1 }, c: { b: 1 } });
    const bomb = [
      "x: &x [a, a, a, a, a, a, a, a, a]",
      "y: &y [*x, *x, *x, *x, *x, *x, *x, *x, *x]",
      "z: &z [*y, *y, *y, *y, *y, *y, *y, *y, *y]",
      "w: [*z, *z, *z, *z, *z, *z, *z, *z, *z]",
    ].join("\n");
    expect(() => read(bomb)).toThrow(/error converting YAML to JSON: Excessive alias count/);
    expect(() => read("a: &a [*a]\n")).toThrow(/error converting YAML to JSON/);
    expect(() => read("a: 1\n---\nb: 2\n")).toThrow(/multiple documents/);
    expect(() => read("a: [1, 2\n")).toThrow(/error converting YAML to JSON/);
  });
});
