// Values of the wrong JSON type, found as kube-apiserver finds them: it decodes a body into
// its Go types before anything else, and the first value that does not fit its field fails
// the request with 400 BadRequest, in encoding/json's words, e.g. `json: cannot unmarshal
// number into Go struct field ConfigMap.data of type string`. The Go types are read off the
// OpenAPI definitions: a definition is a struct (`v1.PodSpec`), a list `[]T`, a map
// `map[string]T`; strings, int32, int64, float64, bool and base64 bytes (`[]uint8`) as
// their formats say. The definitions do not keep the names of named types (a named string
// such as v1.RestartPolicy, a named map such as v1.ResourceList, types.UID): those come from
// generated/go-types.json (scripts/generate/go-types.ts reads them off upstream's types.go).
import { parseQuantity, QUANTITY_FORMAT_MESSAGE } from "../../api/quantity";
import { NumberText } from "../encoding/json-scan";
import { definitionIdFor, resolveSchema, type Schema } from "./definitions";
import namedTypes from "./generated/go-types.json";

/** definition id -> JSON field -> the field's Go type, where the definitions do not say it */
const NAMED = namedTypes as Record<string, Record<string, string>>;

const INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const TIMES = new Set([
  "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
  "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
]);
/** kept as raw JSON, whatever it holds */
const RAW = new Set([
  "io.k8s.apimachinery.pkg.runtime.RawExtension",
  "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
]);

/** `v1.PodSpec` for io.k8s.api.core.v1.PodSpec: the Go package's name and the type's. */
function goName(id: string): string {
  const parts = id.split(".");
  return `${parts.at(-2)}.${parts.at(-1)}`;
}

/**
 * The Go type of a field of schema `schema`, as reflect's String() writes it, as far as the
 * definitions say (named types are in NAMED).
 */
export function fieldGoType(schema: Schema | undefined, depth = 0): string {
  const { schema: s, id } = resolveSchema(schema);
  if (!s) return "interface {}";
  if (id && (s.properties || id === INT_OR_STRING || id === QUANTITY || TIMES.has(id) || RAW.has(id)))
    return goName(id);
  if (depth > 8) return "interface {}";
  switch (s.type) {
    case "string":
      return s.format === "byte" ? "[]uint8" : "string";
    case "integer":
      return s.format === "int32" ? "int32" : "int64";
    case "number":
      return "float64";
    case "boolean":
      return "bool";
    case "array":
      return `[]${fieldGoType(s.items, depth + 1)}`;
    default:
      if (s.additionalProperties && typeof s.additionalProperties === "object")
        return `map[string]${fieldGoType(s.additionalProperties, depth + 1)}`;
      return s.properties ? "struct" : "map[string]interface {}";
  }
}

/** The element type of a slice type, the value type of a map type (undefined otherwise). */
function innerType(type: string | undefined): string | undefined {
  if (!type) return undefined;
  if (type.startsWith("[]")) return type.slice(2);
  if (!type.startsWith("map[")) return undefined;
  let depth = 0;
  for (let i = 3; i < type.length; i++) {
    if (type[i] === "[") depth++;
    else if (type[i] === "]" && --depth === 0) return type.slice(i + 1);
  }
  return undefined;
}

/** A JSON value's kind as encoding/json names it in these messages. */
function jsonKind(v: unknown): string {
  if (Array.isArray(v)) return "array";
  if (typeof v === "boolean") return "bool";
  return typeof v === "number" ? "number" : typeof v === "string" ? "string" : "object";
}

const INT32 = 2 ** 31;
const isInt32 = (v: number) => Number.isInteger(v) && v >= -INT32 && v < INT32;

/**
 * Where the walk is: the Go struct holding the field, the field's JSON path (no indexes or
 * map keys), and whose words to use: encoding/json's, or (`converter`) those of the
 * unstructured converter that fills a Go object from a strategic-merge-patched map.
 */
interface At {
  struct: string;
  path: string[];
  converter?: boolean;
  /** set when an integer field (or an int-or-string) held a number */
  integers?: boolean;
}

const mismatch = (v: unknown, at: At, type: string, value = jsonKind(v)) =>
  `json: cannot unmarshal ${value} into Go struct field ${at.struct}.${at.path.join(".")} of type ${type}`;

/** reflect's Kind of a value in an unstructured map: integers are int64, other numbers float64. */
function goKind(v: unknown): string {
  if (Array.isArray(v)) return "slice";
  if (typeof v === "number") return Number.isInteger(v) ? "int64" : "float64";
  return typeof v === "boolean" ? "bool" : typeof v === "string" ? "string" : "map";
}

/**
 * The converter's words for a value that does not fit a field of Go type `type` whose kind is
 * `kind`: a struct, slice or map from anything else is "cannot restore"; a number into a
 * string or a fraction into an integer is "cannot convert", as Go can convert those kinds
 * but JSON cannot; any other simple value is an "unrecognized type".
 */
function unconvertible(v: unknown, type: string, kind: string): string {
  if (kind === "struct") return `cannot restore struct from: ${goKind(v)}`;
  if (kind === "slice" || kind === "map") return `cannot restore ${kind} from ${goKind(v)}`;
  const from = goKind(v);
  const convertible =
    (from === "int64" && kind === "string") || (from === "float64" && (kind === "int32" || kind === "int64"));
  return convertible ? `cannot convert ${from} to ${type}` : `unrecognized type: ${kind}`;
}

/** `mismatch` or `unconvertible`, as the walk's words are. */
const wrong = (v: unknown, at: At, type: string, kind: string, value?: string) =>
  at.converter ? unconvertible(v, type, kind) : mismatch(v, at, type, value);

/** Resolved schemas, by the schema object that refers to them (the definitions never change). */
const resolved = new WeakMap<Schema, { schema?: Schema; id?: string; struct?: string }>();

function lookup(schema: Schema): { schema?: Schema; id?: string; struct?: string } {
  let r = resolved.get(schema);
  if (!r) {
    const { schema: s, id } = resolveSchema(schema);
    r = { schema: s, id, struct: id && s?.properties ? goName(id).split(".")[1] : undefined };
    resolved.set(schema, r);
  }
  return r;
}

/** The first value under `v` that its field cannot hold, worded as encoding/json words it. */
function check(v: unknown, schema: Schema | undefined, at: At, named?: string): string | undefined {
  if (v === null || v === undefined || !schema) return undefined; // a null leaves the zero value
  const { schema: s, id, struct } = lookup(schema);
  if (v instanceof NumberText) {
    // Go's decoder reads the text: an integer refuses `1e3` and `80.0`, any other type the value
    if (id === INT_OR_STRING) return `json: cannot unmarshal number ${v.text} into Go value of type int32`;
    if (s?.type !== "integer" || at.converter) return check(v.value, schema, at, named);
    return mismatch(v, at, named ?? (s.format === "int32" ? "int32" : "int64"), `number ${v.text}`);
  }
  if (!s || s["x-kubernetes-preserve-unknown-fields"] === true || (id && RAW.has(id))) return undefined;
  if (id === INT_OR_STRING) {
    if (typeof v === "string") return undefined;
    if (typeof v === "number" && isInt32(v)) {
      at.integers = true;
      return undefined;
    }
    // its own decoder reads anything but a string as an int32
    const value = typeof v === "number" ? `number ${v}` : jsonKind(v);
    return `json: cannot unmarshal ${value} into Go value of type int32`;
  }
  if (id === QUANTITY) return parseQuantity(v) === undefined ? QUANTITY_FORMAT_MESSAGE : undefined;
  if (id && TIMES.has(id))
    return typeof v === "string"
      ? undefined
      : `json: cannot unmarshal ${jsonKind(v)} into Go value of type string`;
  const props = s.properties;
  if (props) {
    if (typeof v !== "object" || Array.isArray(v)) return wrong(v, at, id ? goName(id) : "struct", "struct");
    const outer = at.struct;
    const names = id ? NAMED[id] : undefined;
    for (const k in v as Record<string, unknown>) {
      const field = props[k];
      if (!field) continue; // unknown fields are field validation's (fields.ts)
      at.struct = struct ?? outer;
      at.path.push(k);
      const found = check((v as Record<string, unknown>)[k], field, at, names?.[k]);
      at.path.pop();
      if (found) return found;
    }
    at.struct = outer;
    return undefined;
  }
  switch (s.type) {
    case "string": {
      if (typeof v === "string") return undefined;
      const type = named ?? fieldGoType(s);
      if (s.format !== "byte") return wrong(v, at, type, "string");
      // []uint8: the converter takes a list of numbers as the bytes
      return at.converter && Array.isArray(v) ? undefined : wrong(v, at, type, "slice");
    }
    case "boolean":
      return typeof v === "boolean" ? undefined : wrong(v, at, named ?? "bool", "bool");
    case "number":
      return typeof v === "number" ? undefined : wrong(v, at, named ?? "float64", "float64");
    case "integer": {
      const int32 = s.format === "int32";
      const kind = int32 ? "int32" : "int64";
      const type = named ?? kind;
      if (typeof v !== "number") return wrong(v, at, type, kind);
      // the converter wraps a whole number too big for its field (Go's conversion does)
      const fits = int32 && !at.converter ? isInt32(v) : Number.isInteger(v);
      if (!fits) return wrong(v, at, type, kind, `number ${v}`);
      at.integers = true;
      return undefined;
    }
    case "array":
      if (!Array.isArray(v)) return wrong(v, at, named ?? fieldGoType(s), "slice");
      for (const x of v) {
        const found = check(x, s.items, at, innerType(named));
        if (found) return found;
      }
      return undefined;
    default: {
      const values = s.additionalProperties;
      if (!values || typeof values !== "object") return undefined;
      if (typeof v !== "object" || Array.isArray(v)) return wrong(v, at, named ?? fieldGoType(s), "map");
      for (const k in v as Record<string, unknown>) {
        const found = check((v as Record<string, unknown>)[k], values, at, innerType(named));
        if (found) return found;
      }
      return undefined;
    }
  }
}

const roots = new Map<string, Schema>();

/**
 * The first value of a body that its kind's Go type cannot hold, as upstream's decoder
 * reports it (undefined when every value fits, or when no schema is known for the kind).
 * `words`: encoding/json's (a body decoded, a merge or JSON patch's result) or the
 * unstructured converter's (a strategic merge patch's result, which upstream never encodes).
 * `numberTexts`: the body's value with the text of each number written with a fraction or an
 * exponent, asked for when an integer field held a number.
 */
export function decodeTypeError(
  apiVersion: string,
  kind: string,
  obj: unknown,
  words: "json" | "converter" = "json",
  numberTexts?: () => unknown,
): string | undefined {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/", 2) : ["", apiVersion];
  const id = definitionIdFor({ group, version, kind });
  if (!id) return undefined;
  let root = roots.get(id);
  if (!root) roots.set(id, (root = { $ref: `#/definitions/${id}` }));
  const at: At = { struct: kind, path: [], converter: words === "converter" };
  const found = check(obj, root, at);
  if (found || !at.integers || !numberTexts) return found;
  // an integer field held a number: Go refuses one written 1e3 or 80.0 (json-scan.ts)
  const marked = numberTexts();
  return marked === undefined ? undefined : check(marked, root, { struct: kind, path: [] });
}
