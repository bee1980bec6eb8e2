// Decoded JSON values printed as Go prints them where upstream's messages quote them:
// fmt's %v of a map decoded with whole numbers kept int64, and encoding/json's Marshal.
import { describe, expect, it } from "vitest";
import { goMarshal, goSprint } from "../../../workers/encoding/go-print";

describe("goSprint (fmt %v)", () => {
  it("prints maps with sorted keys, lists with spaces, strings bare and null as <nil>", () => {
    expect(goSprint({ data: { port: 8080 } })).toBe("map[data:map[port:8080]]");
    expect(goSprint({ b: [1, "x y", null, true], a: {} })).toBe("map[a:map[] b:[1 x y <nil> true]]");
    // keys sort as strings, integer-like ones too
    expect(goSprint({ "9": 1, "10": 2, B: 3, a: 4 })).toBe("map[10:2 9:1 B:3 a:4]");
    expect(goSprint({ a: undefined, b: 1 })).toBe("map[b:1]");
  });

  it("prints fractions as %v prints a float64: shortest digits, an exponent outside 1e-4..1e6", () => {
    const cases: [number, string][] = [
      [80.5, "80.5"],
      [0.0001234, "0.0001234"],
      [0.00001234, "1.234e-05"],
      [123456.5, "123456.5"],
      [1234567.5, "1.2345675e+06"],
      [-2.5e-10, "-2.5e-10"],
      [1e21, "1e+21"],
    ];
    for (const [v, want] of cases) expect(goSprint(v), String(v)).toBe(want);
    // whole numbers are int64, printed in full
    expect(goSprint(123456789012)).toBe("123456789012");
  });
});

describe("goMarshal (encoding/json)", () => {
  it("sorts every object's keys and escapes <, > and & as Go does", () => {
    expect(goMarshal({ b: "<a&b>", "10": 1, "9": 2, a: { d: 1, c: [{ z: 1, y: 2 }] } })).toBe(
      '{"10":1,"9":2,"a":{"c":[{"y":2,"z":1}],"d":1},"b":"\\u003ca\\u0026b\\u003e"}',
    );
    expect(goMarshal({ s: "line\nnext", u: undefined, n: null })).toBe('{"n":null,"s":"line\\nnext"}');
  });
});
