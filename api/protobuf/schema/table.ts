// Message tables for Kubernetes' protobuf encoding.
//
// Each package file maps a message name to a compact field list:
//   "<number> <jsonName> <type> [flags]; ..."
// - jsonName "." means the field is an embedded struct whose JSON is inlined into the parent
//   (e.g. Volume.volumeSource, Probe.handler).
// - type is a scalar (string, int32, int64, uint32, uint64, bool, bytes, double, float), a message
//   name (unqualified = same package, else "<pkg>.<Name>", e.g. "meta.v1.ObjectMeta"), or
//   "map<string,<value type>>".
// - flags: o = the JSON tag has omitempty, p = the Go field is a pointer, r = repeated,
//   i = inlined.
// A message whose Go type is a named slice (e.g. authentication ExtraValue) is written
// "list <type>": on the wire {repeated items = 1}, in JSON a plain array.

export type MessageTable = Record<string, string>;

export const SCALAR_TYPES = new Set([
  "string",
  "bytes",
  "bool",
  "int32",
  "int64",
  "uint32",
  "uint64",
  "sint32",
  "sint64",
  "fixed32",
  "fixed64",
  "sfixed32",
  "sfixed64",
  "double",
  "float",
]);

export interface FieldSpec {
  number: number;
  /** "" when inlined. */
  jsonName: string;
  /** Scalar name or fully qualified message name; for maps, the value type. */
  type: string;
  /** Set for map fields: key scalar type. */
  mapKey?: string;
  repeated: boolean;
  omitEmpty: boolean;
  pointer: boolean;
  inline: boolean;
}

export interface MessageSpec {
  /** Qualified name, e.g. "core.v1.Pod". */
  name: string;
  fields: FieldSpec[];
  byNumber: Map<number, FieldSpec>;
  /** For "list <type>" wrappers: the element type. */
  listOf?: string;
}

export const isScalar = (type: string) => SCALAR_TYPES.has(type);

function qualify(pkg: string, type: string): string {
  if (isScalar(type) || type.includes(".")) return type;
  return `${pkg}.${type}`;
}

/** Expands one table entry into a MessageSpec. Throws on a malformed table (a bug, not input). */
export function parseMessage(pkg: string, name: string, text: string): MessageSpec {
  const qualified = `${pkg}.${name}`;
  if (text.startsWith("list ")) {
    return { name: qualified, fields: [], byNumber: new Map(), listOf: qualify(pkg, text.slice(5).trim()) };
  }
  const fields: FieldSpec[] = [];
  for (const part of text.split(";")) {
    const tokens = part.trim().split(/\s+/);
    if (tokens.length === 1 && tokens[0] === "") continue;
    if (tokens.length < 3 || tokens.length > 4) throw new Error(`bad field "${part}" in ${qualified}`);
    const [num, json, rawType, flags = ""] = tokens;
    const number = Number(num);
    if (!Number.isInteger(number) || number <= 0)
      throw new Error(`bad field number in ${qualified}: ${part}`);
    let type = rawType;
    let mapKey: string | undefined;
    const m = /^map<(\w+),([\w.]+)>$/.exec(rawType);
    if (m) {
      mapKey = m[1];
      type = m[2];
    }
    fields.push({
      number,
      jsonName: json === "." ? "" : json,
      type: qualify(pkg, type),
      mapKey,
      repeated: flags.includes("r"),
      omitEmpty: flags.includes("o"),
      pointer: flags.includes("p"),
      inline: flags.includes("i") || json === ".",
    });
  }
  return { name: qualified, fields, byNumber: new Map(fields.map((f) => [f.number, f])) };
}
