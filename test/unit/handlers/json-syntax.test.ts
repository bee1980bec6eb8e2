// A JSON body that does not parse is refused in the words Go's encoding/json uses (the
// reader kube-apiserver finds the kind with), and its start is quoted as upstream quotes it.
import { describe, expect, it } from "vitest";
import { jsonSyntaxError, quoteByte, summarizeBody } from "../../../workers/encoding/json-syntax";

const bytes = (s: string) => new TextEncoder().encode(s);
const error = (s: string) => jsonSyntaxError(bytes(s));

describe("jsonSyntaxError", () => {
  it("names the first byte that cannot continue the text, as encoding/json does", () => {
    const cases: [string, string][] = [
      ["{bad json", "invalid character 'b' looking for beginning of object key string"],
      ["apiVersion: v1\nkind: Pod", "invalid character 'a' looking for beginning of value"],
      ['{"a" 1}', "invalid character '1' after object key"],
      ['{"a":1 "b":2}', `invalid character '"' after object key:value pair`],
      ["[1 2]", "invalid character '2' after array element"],
      ["{} x", "invalid character 'x' after top-level value"],
      ['{"a":tru}', "invalid character '}' in literal true (expecting 'e')"],
      ['{"a":fx}', "invalid character 'x' in literal false (expecting 'a')"],
      ['{"a":nul }', "invalid character ' ' in literal null (expecting 'l')"],
      ['{"a":-}', "invalid character '}' in numeric literal"],
      ['{"a":1.}', "invalid character '}' after decimal point in numeric literal"],
      ['{"a":1e}', "invalid character '}' in exponent of numeric literal"],
      ['{"a":1e+x}', "invalid character 'x' in exponent of numeric literal"],
      ['{"a":"\\x"}', "invalid character 'x' in string escape code"],
      ['{"a":"\\u12g4"}', "invalid character 'g' in \\u hexadecimal character escape"],
      ['{"a":"\t"}', "invalid character '\\t' in string literal"],
      ['{"a":01}', "invalid character '1' after object key:value pair"],
      ["'x'", "invalid character '\\'' looking for beginning of value"],
      ['{"a":1,}', "invalid character '}' looking for beginning of object key string"],
      ["[1,]", "invalid character ']' looking for beginning of value"],
      ["{]", "invalid character ']' looking for beginning of object key string"],
      ["[}", "invalid character '}' looking for beginning of value"],
      ['{"a":[1}', "invalid character '}' after array element"],
      ['"x"y', "invalid character 'y' after top-level value"],
      ["1 2", "invalid character '2' after top-level value"],
      ["\\", "invalid character '\\\\' looking for beginning of value"],
      ["é", "invalid character 'Ã' looking for beginning of value"],
      ["\u0001", "invalid character '\\x01' looking for beginning of value"],
    ];
    for (const [text, want] of cases) expect(error(text), text).toBe(want);
  });

  it("says the input was cut short when it ends inside a value", () => {
    for (const text of [
      "",
      "  \n",
      '{"metadata": {"name": "x"',
      '{"a":"b',
      "[1,",
      "tru",
      "-",
      "1.",
      '{"a"',
      '"\\u00',
    ])
      expect(error(text), JSON.stringify(text)).toBe("unexpected end of JSON input");
  });

  it("finds nothing wrong in what JSON.parse accepts", () => {
    const texts = [
      '{"a":[1,-0.5e+3,0,true,false,null,"\\u00e9\\n",{}],"b":{"c":[]}}',
      " 12 ",
      "0",
      "-1.25E-2",
      '"x"',
      "[]",
      '{"é":"ü"}\n',
    ];
    for (const text of texts) {
      JSON.parse(text);
      expect(error(text), text).toBeUndefined();
    }
  });
});

describe("quoteByte", () => {
  it("quotes a byte as Go's strconv.Quote would, between single quotes", () => {
    expect(quoteByte(0x41)).toBe("'A'");
    expect(quoteByte(0x22)).toBe(`'"'`);
    expect(quoteByte(0x0a)).toBe("'\\n'");
    expect(quoteByte(0x7f)).toBe("'\\x7f'");
    expect(quoteByte(0x85)).toBe("'\\u0085'");
    expect(quoteByte(0xa0)).toBe("'\\u00a0'");
    expect(quoteByte(0xad)).toBe("'\\u00ad'");
    expect(quoteByte(0xe9)).toBe("'é'");
  });
});

describe("summarizeBody", () => {
  it("quotes 30 bytes: as text after a brace, in hex otherwise", () => {
    expect(summarizeBody(bytes(""))).toBe("<empty>");
    expect(summarizeBody(bytes("{bad json"))).toBe("{bad json");
    expect(summarizeBody(bytes(`{"metadata":{"name":"a-long-name-here"}}`))).toBe(
      '{"metadata":{"name":"a-long-na ...',
    );
    expect(summarizeBody(bytes("apiVersion: v1\r\nkind: PersistentVolume\r\n"))).toBe(
      "61706956657273696f6e3a2076310d0a6b696e643a205065727369737465 ...",
    );
    expect(summarizeBody(bytes("x"))).toBe("78");
  });
});
