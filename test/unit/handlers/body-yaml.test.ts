// YAML request bodies (workers/encoding/request-body.ts, json-scan.ts): JSON text read as the YAML reader
// would read it, the rest by that reader, and a key repeated in one map found either way
// (reported by field validation; the later value wins, as upstream's decoders keep it).

import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { lineIndex, mayRepeatKeys, scanKeys } from "../../../workers/encoding/json-scan";
import { decodeText } from "../../../workers/encoding/request-body";

const YAML_TYPE = "application/apply-patch+yaml";
/** The first key JSON text repeats in one object, if any. */
const duplicateKey = (text: string) => scanKeys(text).repeats[0]?.key;
const read = (text: string) => decodeText(text, YAML_TYPE, [YAML_TYPE]).value;
/** The repeated keys decoding a YAML body finds, as the YAML reader words them. */
const repeatsOf = (text: string) => {
  const r = decodeText(text, YAML_TYPE, [YAML_TYPE]).repeats;
  return r && "yaml" in r ? r.yaml : [];
};

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

  it("finds a key repeated in one object, at any depth, escaped or not, and keeps the later value", () => {
    // named by line, as the YAML reader names them
    expect(repeatsOf('{"a": 1,\n "b": {"c": 1,\n "c": 2}}')).toEqual(['line 3: key "c" already set in map']);
    expect(read('{"a": 1, "b": {"c": 1, "c": 2}}')).toEqual({ a: 1, b: { c: 2 } });
    for (const d of [
      '{"a": 1, "a": 2}',
      '{"x": {"y": [{"k": 1, "j": 2, "k": 3}]}}',
      '{"a": 1, "\\u0061": 2}',
      '[{"m": {"p": 1}}, {"q": {"p": 1, "p": 1}}]',
    ]) {
      expect(repeatsOf(d), d).toHaveLength(1);
      // as the YAML reader finds them
      expect(() => parse(d, { uniqueKeys: true }), d).toThrow(/unique/);
      expect(read(d), d).toEqual(parse(d, { uniqueKeys: false }));
    }
    expect(repeatsOf('{"a": {"b": 1}, "c": {"b": 2}, "d": [{"b": 1}, {"b": 2}]}')).toEqual([]);
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
    expect(read("{a: 1, b: [x, z],}")).toEqual({ a: 1, b: ["x", "z"] });
    expect(repeatsOf("{a: 1, a: 2}")).toEqual(['line 1: key "a" already set in map']);
  });

  it("finds keys repeated in block YAML, in nested maps and in sequence items, by line", () => {
    expect(repeatsOf("a: 1\nb: 2\na: 3\n")).toEqual(['line 3: key "a" already set in map']);
    expect(read("a: 1\nb: 2\na: 3\n")).toEqual({ a: 3, b: 2 });
    expect(repeatsOf("x:\n  y:\n    - k: 1\n      k: 2\n  z: 1\n  z: 2\n")).toEqual([
      'line 4: key "k" already set in map',
      'line 6: key "z" already set in map',
    ]);
    // 1 and "1" are one key once the document is JSON
    expect(repeatsOf("1: a\n'1': b\n")).toEqual(['line 2: key "1" already set in map']);
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

  it("names each repeated key of JSON text by its field path and offset", () => {
    const text = '{"m": {"n": 1, "n": 2}, "s": {"c": [{"x": 1}, {"y": 1, "y": 2}]}, "t": 1, "t": 2}';
    const scan = scanKeys(text);
    expect(scan.repeats.map((r) => [r.path, r.key, text.slice(r.at, r.at + r.key.length + 2)])).toEqual([
      ["m.n", "n", '"n"'],
      ["s.c[1].y", "y", '"y"'],
      ["t", "t", '"t"'],
    ]);
    expect(scan.repeats[0].at).toBe(text.indexOf('"n"', text.indexOf('"n"') + 1));
    expect(scan.firstAt.get("s.c[0].x")).toBe(text.indexOf('"x"'));
    expect(scan.firstAt.get("t")).toBe(text.indexOf('"t"'));
    // a list at the top, and keys inside strings or escaped
    expect(scanKeys('[{"op": 1}, {"p": "{\\"p\\": 1}", "\\u0070": 2}]').repeats.map((r) => r.path)).toEqual([
      "[1].p",
    ]);
  });

  it("numbers lines from 1", () => {
    const line = lineIndex("a\nbc\n\nd");
    expect([0, 1, 2, 3, 4, 5, 6].map(line)).toEqual([1, 1, 2, 2, 2, 3, 4]);
  });

  it("passes JSON by quickly only when no key can be repeated", () => {
    // random documents: keys that may repeat, JSON text inside strings, escapes, spacing
    let seed = 7;
    const rnd = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 16) % n;
    };
    const keys = ["a", "b", 'q"', "s\\", "é", "k:"];
    const value = (depth: number): string => {
      const r = rnd(depth > 3 ? 3 : 6);
      if (r === 0) return String(rnd(100));
      if (r === 1) return JSON.stringify(["x", '"a":1', '{"a":1,"a":2}', "\\", '\\":'][rnd(5)]);
      if (r === 2) return "null";
      if (r === 3) return `[${Array.from({ length: rnd(3) }, () => value(depth + 1)).join(",")}]`;
      const n = rnd(4);
      const colon = [":", ":", ": ", " :", "\n:"][rnd(5)];
      return `{${Array.from({ length: n }, () => `${JSON.stringify(keys[rnd(keys.length)])}${colon}${value(depth + 1)}`).join(",")}}`;
    };
    let quick = 0;
    let repeated = 0;
    for (let i = 0; i < 5000; i++) {
      const text = value(0);
      const twice = duplicateKey(text) !== undefined;
      const may = mayRepeatKeys(text, JSON.parse(text));
      if (twice) {
        repeated++;
        expect(may, text).toBe(true);
      }
      if (!may) quick++;
    }
    expect(repeated).toBeGreaterThan(300);
    expect(quick).toBeGreaterThan(1000);
    // what kubectl sends: compact, and a last-applied annotation holding JSON
    const pod = JSON.stringify({
      metadata: { name: "p", annotations: { last: JSON.stringify({ metadata: { name: "p" } }) } },
      spec: { containers: [{ name: "c", image: "i" }] },
    });
    expect(mayRepeatKeys(pod, JSON.parse(pod))).toBe(false);
    expect(mayRepeatKeys('{"a":1,"a":2,"b" :3}', { a: 2, b: 3 })).toBe(true);
  });

  it("reads YAML 1.1 as kube-apiserver (and kubectl) do: go-yaml v2's booleans, numbers and merges", () => {
    const v = (text: string) => (read(`a: ${text}\n`) as { a: unknown }).a;
    for (const t of ["yes", "Yes", "YES", "on", "On", "y", "Y", "true"]) expect(v(t), t).toBe(true);
    for (const t of ["no", "No", "off", "OFF", "n", "N", "false"]) expect(v(t), t).toBe(false);
    expect([v("010"), v("0o17"), v("-0o17"), v("0x1F"), v("0b101"), v("1_000"), v("+12"), v("08")]).toEqual([
      8, 15, -15, 31, 5, 1000, 12, 8,
    ]);
    expect([v("1e3"), v("1."), v(".5"), v("~"), v("null"), v("")]).toEqual([1000, 1, 0.5, null, null, null]);
    // what stays a string: dates, base-60 looking text, quoted booleans
    expect([v("2001-12-14"), v("2001-12-14T21:59:43Z"), v("12:30"), v("'yes'"), v('"on"')]).toEqual([
      "2001-12-14",
      "2001-12-14T21:59:43Z",
      "12:30",
      "yes",
      "on",
    ]);
    // a boolean key is written as its JSON text, as sigs.k8s.io/yaml writes it
    expect(read("y: 1\nn: 2\nx: 3\n")).toEqual({ true: 1, false: 2, x: 3 });
    expect(read("base: &b {p: 1, q: 2}\nd:\n  <<: *b\n  q: 3\n")).toEqual({
      base: { p: 1, q: 2 },
      d: { p: 1, q: 3 },
    });
    // numbers JSON cannot hold are refused
    for (const t of [".inf", "-.Inf", ".nan"]) expect(() => v(t), t).toThrow(/json: unsupported value/);
  });
});
