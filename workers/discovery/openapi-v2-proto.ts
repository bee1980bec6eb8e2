// Protobuf encoding of a Swagger 2.0 JSON document as the gnostic
// `openapi.v2.Document` message, which kubectl asks for with
// Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf.
// Field numbers are those of gnostic's OpenAPIv2.proto. Vendor extensions,
// enums and defaults travel as `Any{yaml}`; JSON text is valid YAML.

/** What kubectl puts in Accept. */
export const OPENAPI_V2_PROTO_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/** What the reply carries: '@' is not valid in a media type, and client-go parses Content-Type. */
export const OPENAPI_V2_PROTO_CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

type Json = Record<string, unknown>;

/** A message under construction: a list of encoded chunks. */
class Msg {
  private chunks: Uint8Array[] = [];
  private size = 0;
  private static enc = new TextEncoder();

  private push(b: Uint8Array): void {
    this.chunks.push(b);
    this.size += b.length;
  }

  private varint(n: number): void {
    const out: number[] = [];
    let v = n;
    while (v > 0x7f) {
      out.push((v & 0x7f) | 0x80);
      v = Math.floor(v / 128);
    }
    out.push(v);
    this.push(Uint8Array.from(out));
  }

  private tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  bytes(field: number, b: Uint8Array): this {
    this.tag(field, 2);
    this.varint(b.length);
    this.push(b);
    return this;
  }

  string(field: number, s: unknown): this {
    if (typeof s === "string" && s !== "") this.bytes(field, Msg.enc.encode(s));
    return this;
  }

  strings(field: number, list: unknown): this {
    if (Array.isArray(list))
      for (const s of list) if (typeof s === "string") this.bytes(field, Msg.enc.encode(s));
    return this;
  }

  uint(field: number, n: number): this {
    this.tag(field, 0);
    this.varint(n);
    return this;
  }

  bool(field: number, b: unknown): this {
    if (b === true) {
      this.tag(field, 0);
      this.varint(1);
    }
    return this;
  }

  msg(field: number, m: Msg | undefined): this {
    if (m) this.bytes(field, m.finish());
    return this;
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.size);
    let off = 0;
    for (const c of this.chunks) {
      out.set(c, off);
      off += c.length;
    }
    return out;
  }
}

const isObj = (v: unknown): v is Json => !!v && typeof v === "object" && !Array.isArray(v);

/** Any { yaml = 2 } */
function anyYaml(v: unknown): Msg {
  return new Msg().string(2, JSON.stringify(v));
}

/** repeated NamedAny vendor_extension, from the x-* keys of o. */
function vendorExtensions(m: Msg, field: number, o: Json): void {
  for (const [k, v] of Object.entries(o)) {
    if (k.startsWith("x-")) m.msg(field, new Msg().string(1, k).msg(2, anyYaml(v)));
  }
}

function schema(s: Json): Msg {
  const m = new Msg();
  m.string(1, s.$ref).string(2, s.format).string(3, s.title).string(4, s.description);
  if (s.default !== undefined) m.msg(5, anyYaml(s.default));
  m.strings(19, s.required);
  if (Array.isArray(s.enum)) for (const e of s.enum) m.msg(20, anyYaml(e));
  if (isObj(s.additionalProperties)) m.msg(21, new Msg().msg(1, schema(s.additionalProperties)));
  else if (typeof s.additionalProperties === "boolean") {
    // a oneof member: encoded even when false
    m.msg(21, new Msg().uint(2, s.additionalProperties ? 1 : 0));
  }
  if (typeof s.type === "string") m.msg(22, new Msg().string(1, s.type));
  if (isObj(s.items)) m.msg(23, new Msg().msg(1, schema(s.items)));
  if (Array.isArray(s.allOf)) for (const a of s.allOf) if (isObj(a)) m.msg(24, schema(a));
  if (isObj(s.properties)) {
    const props = new Msg();
    for (const [name, p] of Object.entries(s.properties))
      if (isObj(p)) props.msg(1, new Msg().string(1, name).msg(2, schema(p)));
    m.msg(25, props);
  }
  m.bool(27, s.readOnly);
  vendorExtensions(m, 31, s);
  return m;
}

function parameter(p: Json): Msg {
  if (p.in === "body") {
    const body = new Msg().string(1, p.description).string(2, p.name).string(3, p.in).bool(4, p.required);
    if (isObj(p.schema)) body.msg(5, schema(p.schema));
    return new Msg().msg(1, new Msg().msg(1, body));
  }
  // Query (field 3) and path (field 4) sub-schemas differ in their later field numbers.
  const isPath = p.in === "path";
  const sub = new Msg().bool(1, p.required).string(2, p.in).string(3, p.description).string(4, p.name);
  if (isPath) sub.string(5, p.type).string(6, p.format).bool(19, p.uniqueItems);
  else sub.string(6, p.type).string(7, p.format).bool(20, p.uniqueItems);
  const nonBody = new Msg().msg(isPath ? 4 : 3, sub);
  return new Msg().msg(1, new Msg().msg(2, nonBody));
}

function operation(o: Json): Msg {
  const m = new Msg()
    .strings(1, o.tags)
    .string(2, o.summary)
    .string(3, o.description)
    .string(5, o.operationId);
  m.strings(6, o.produces).strings(7, o.consumes);
  if (Array.isArray(o.parameters)) for (const p of o.parameters) if (isObj(p)) m.msg(8, parameter(p));
  if (isObj(o.responses)) {
    const rs = new Msg();
    for (const [code, r] of Object.entries(o.responses)) {
      if (!isObj(r)) continue;
      const resp = new Msg().string(1, r.description);
      if (isObj(r.schema)) resp.msg(2, new Msg().msg(1, schema(r.schema)));
      rs.msg(1, new Msg().string(1, code).msg(2, new Msg().msg(1, resp)));
    }
    m.msg(9, rs);
  }
  m.strings(10, o.schemes);
  vendorExtensions(m, 13, o);
  return m;
}

const METHOD_FIELDS: Record<string, number> = {
  get: 2,
  put: 3,
  post: 4,
  delete: 5,
  options: 6,
  head: 7,
  patch: 8,
};

function pathItem(item: Json): Msg {
  const m = new Msg();
  for (const [method, field] of Object.entries(METHOD_FIELDS))
    if (isObj(item[method])) m.msg(field, operation(item[method] as Json));
  if (Array.isArray(item.parameters)) for (const p of item.parameters) if (isObj(p)) m.msg(9, parameter(p));
  vendorExtensions(m, 10, item);
  return m;
}

/** Encodes a Swagger 2.0 JSON document as an openapi.v2.Document. */
export function encodeOpenapiV2(doc: Json): Uint8Array {
  const m = new Msg().string(1, doc.swagger);
  if (isObj(doc.info))
    m.msg(2, new Msg().string(1, doc.info.title).string(2, doc.info.version).string(3, doc.info.description));
  m.string(3, doc.host)
    .string(4, doc.basePath)
    .strings(5, doc.schemes)
    .strings(6, doc.consumes)
    .strings(7, doc.produces);
  if (isObj(doc.paths)) {
    const paths = new Msg();
    for (const [p, item] of Object.entries(doc.paths))
      if (isObj(item)) paths.msg(2, new Msg().string(1, p).msg(2, pathItem(item)));
    m.msg(8, paths);
  }
  if (isObj(doc.definitions)) {
    const defs = new Msg();
    for (const [name, s] of Object.entries(doc.definitions))
      if (isObj(s)) defs.msg(1, new Msg().string(1, name).msg(2, schema(s)));
    m.msg(9, defs);
  }
  if (Array.isArray(doc.security)) {
    for (const req of doc.security) {
      if (!isObj(req)) continue;
      const r = new Msg();
      for (const [name, scopes] of Object.entries(req))
        r.msg(1, new Msg().string(1, name).msg(2, new Msg().strings(1, scopes)));
      m.msg(12, r);
    }
  }
  if (isObj(doc.securityDefinitions)) {
    const sd = new Msg();
    for (const [name, d] of Object.entries(doc.securityDefinitions)) {
      if (!isObj(d) || d.type !== "apiKey") continue;
      const key = new Msg().string(1, d.type).string(2, d.name).string(3, d.in).string(4, d.description);
      sd.msg(1, new Msg().string(1, name).msg(2, new Msg().msg(2, key)));
    }
    m.msg(13, sd);
  }
  vendorExtensions(m, 16, doc);
  return m.finish();
}
