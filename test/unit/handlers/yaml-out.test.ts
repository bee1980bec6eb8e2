// The response YAML writer (workers/encoding/yaml-out.ts): whatever it writes, a YAML reader gives
// back the same JSON value, under YAML 1.2 and under YAML 1.1 (Go's yaml.v2 rules).

import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { toYaml } from "../../../workers/encoding/yaml-out";

/** Strings a careless writer would let a reader turn into something else. */
const TRICKY = [
  "",
  " ",
  "true",
  "True",
  "FALSE",
  "yes",
  "No",
  "on",
  "OFF",
  "y",
  "n",
  "null",
  "Null",
  "~",
  "0",
  "007",
  "1.27",
  "-1",
  "+1",
  "1e3",
  ".5",
  ".inf",
  "-.Inf",
  ".nan",
  "0x1f",
  "0o17",
  "2026-11-30",
  "2026-11-30T13:35:50Z",
  "12:30:00",
  "10.0.0.5",
  "nginx:1.27",
  "a: b",
  "a #b",
  "#c",
  "- x",
  "-",
  "?",
  ":",
  "[x]",
  "{x}",
  "*ref",
  "&anchor",
  "!tag",
  "|",
  ">",
  "%dir",
  "@x",
  "`x",
  "'q'",
  '"dq"',
  "multi\nline",
  "trailing\n",
  "tab\there",
  " lead",
  "trail ",
  "back\\slash",
  "é ü 漢字",
  "emoji 🙂",
  "del\u007f",
  "c1\u0085x",
  "ls\u2028x",
  "bom\ufeffx",
  "ctl\u0001x",
  "app.kubernetes.io/name",
  "f:metadata",
  'k:{"name":"c"}',
  ".",
  "kube-system",
  "default",
  "IfNotPresent",
  "NaN",
  "Infinity",
];

/** Whether `s` has a character the YAML spec does not allow unescaped in a document. */
function notPrintable(s: string): boolean {
  for (const ch of s) {
    const c = ch.codePointAt(0) ?? 0;
    if (c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return true;
    if ((c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029 || c === 0xfeff) return true;
  }
  return false;
}

function pod(i: number) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `web-${i}`,
      labels: { app: "web", "app.kubernetes.io/name": "web" },
      annotations: {},
      managedFields: [
        { manager: "kubectl", fieldsV1: { "f:metadata": { "f:labels": { ".": {}, "f:app": {} } } } },
      ],
    },
    spec: {
      containers: [{ name: "web", image: "nginx:1.27", ports: [{ containerPort: 80 }], args: [] }],
      tolerations: [{ key: "node.kubernetes.io/not-ready", operator: "Exists", tolerationSeconds: 300 }],
      nodeSelector: null,
      enableServiceLinks: true,
    },
    status: { phase: "Pending", conditions: [] },
  };
}

describe("toYaml", () => {
  it("reads back as the same value, for every tricky string as a value, a key and an item", () => {
    for (const s of TRICKY) {
      const v = { [s]: s, list: [s, [s], { [s]: [s] }], nested: { deeper: { s } } };
      const y = toYaml(v);
      expect(parse(y), `${JSON.stringify(s)}:\n${y}`).toEqual(v);
      expect(parse(y, { version: "1.1" }), `1.1 ${JSON.stringify(s)}:\n${y}`).toEqual(v);
      expect(parse(toYaml(s))).toBe(s);
      // only characters YAML allows raw (the reader here is lenient; Go's is not)
      expect(notPrintable(y), y).toBe(false);
    }
  });

  it("reads back objects as the apiserver stores them, lists of them, and bare scalars", () => {
    const list = {
      kind: "PodList",
      apiVersion: "v1",
      metadata: { resourceVersion: "7" },
      items: [0, 1, 2].map(pod),
    };
    for (const v of [pod(0), list, [], {}, [[1, 2], [], [{}]], 0, -1.5, true, null, "x", { a: [[[]]] }]) {
      expect(parse(toYaml(v))).toEqual(v);
      expect(parse(toYaml(v), { version: "1.1" })).toEqual(v);
    }
  });

  it("writes block style: nested keys two deeper, sequence items as '- ', plain words bare", () => {
    expect(toYaml({ a: { b: [{ c: 1, d: "x y" }, { e: [] }], f: {} }, g: "true", h: [[1, 2]] })).toBe(
      [
        "a:",
        "  b:",
        "    - c: 1",
        '      d: "x y"',
        "    - e: []",
        "  f: {}",
        'g: "true"',
        "h:",
        "  - - 1",
        "    - 2",
        "",
      ].join("\n"),
    );
  });
});
