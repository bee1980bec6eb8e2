// Decodes Kubernetes protobuf request bodies (Content-Type: application/vnd.kubernetes.protobuf)
// into the JSON object upstream's JSON encoding would produce for the same Go struct.
//
// Envelope (apimachinery runtime/serializer/protobuf): the 4 bytes "k8s\0", then a
// runtime.Unknown message {typeMeta{apiVersion=1, kind=2}=1, raw=2, contentEncoding=3,
// contentType=4}; raw holds the object's own message.
//
// JSON shaping follows Go's encoding/json on the struct gogo-protobuf would have filled:
// - a zero scalar present on the wire is dropped when its JSON tag has omitempty, unless the
//   Go field is a pointer (pointers are only written when set);
// - absent fields without omitempty get Go's zero value (scalars) or null (slices, maps,
//   pointers); absent non-pointer structs are emitted as their zero object (structs ignore
//   omitempty in encoding/json), so metadata.creationTimestamp comes out as null like kubectl's
//   own JSON bodies.
import { badRequest, StatusError, unsupportedMediaType } from "../errors";
import { readScalar, scalarZero, wireTypeFor } from "./scalars";
import { type FieldSpec, isScalar, lookupMessage, type MessageSpec, messageForKind } from "./schema/index";
import { formatDuration, formatMicroTime, formatTime } from "./special";
import { WireError, WireReader, WireType } from "./wire";

export const KUBE_PROTOBUF_MEDIA_TYPE = "application/vnd.kubernetes.protobuf";

/** The 4-byte prefix of every Kubernetes protobuf body: "k8s\0". */
export const KUBE_PROTOBUF_MAGIC = new Uint8Array([0x6b, 0x38, 0x73, 0x00]);

export interface DecodedKubeProtobuf {
  /** The object as JSON, with kind and apiVersion from the envelope. */
  object: Record<string, unknown>;
  /** Fields present on the wire that the tables do not know, as "<json path>.#<field number>". */
  unknownFields: string[];
}

/** True when a Content-Type header names the Kubernetes protobuf media type (parameters ignored). */
export function isKubeProtobuf(contentType: string | null | undefined): boolean {
  if (!contentType) return false;
  return contentType.split(";")[0].trim().toLowerCase() === KUBE_PROTOBUF_MEDIA_TYPE;
}

const MAX_DEPTH = 100;
const utf8 = new TextDecoder("utf-8");

/** A decode failure caused by the body (reported as 400). */
class BodyError extends Error {}

const isZeroScalar = (v: unknown) => v === "" || v === 0 || v === false;

const join = (path: string, name: string) => (path ? `${path}.${name}` : name);

/** Parses embedded JSON bytes (RawExtension, FieldsV1); a nested protobuf envelope is decoded too. */
function parseEmbedded(bytes: Uint8Array, path: string, d: Decoder): unknown {
  if (bytes.length === 0) return null;
  if (hasMagic(bytes)) return d.decodeEnvelope(bytes, path).object;
  try {
    return JSON.parse(utf8.decode(bytes));
  } catch {
    throw new BodyError(`${path || "object"}: embedded value is neither JSON nor Kubernetes protobuf`);
  }
}

function hasMagic(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && KUBE_PROTOBUF_MAGIC.every((b, i) => bytes[i] === b);
}

class Decoder {
  readonly unknownFields: string[] = [];
  private depth = 0;

  /** Reads a runtime.Unknown envelope (magic included) into a JSON object. */
  decodeEnvelope(bytes: Uint8Array, path: string): DecodedKubeProtobuf {
    if (!hasMagic(bytes)) {
      throw new BodyError('the body does not start with the Kubernetes protobuf prefix "k8s\\x00"');
    }
    const r = new WireReader(bytes, 4);
    let apiVersion = "";
    let kind = "";
    let raw: Uint8Array = new Uint8Array(0);
    let contentEncoding = "";
    let contentType = "";
    while (!r.eof()) {
      const { field, wireType } = r.readTag();
      if (wireType !== WireType.Bytes) {
        r.skip(wireType);
        continue;
      }
      if (field === 1) {
        const tm = r.readSubReader();
        while (!tm.eof()) {
          const t = tm.readTag();
          if (t.field === 1 && t.wireType === WireType.Bytes) apiVersion = utf8.decode(tm.readBytes());
          else if (t.field === 2 && t.wireType === WireType.Bytes) kind = utf8.decode(tm.readBytes());
          else tm.skip(t.wireType);
        }
      } else if (field === 2) raw = r.readBytes();
      else if (field === 3) contentEncoding = utf8.decode(r.readBytes());
      else if (field === 4) contentType = utf8.decode(r.readBytes());
      else r.skip(wireType);
    }
    if (contentEncoding) {
      throw unsupported(
        `content encoding "${contentEncoding}" inside the protobuf envelope is not supported`,
      );
    }
    if (contentType && !isKubeProtobuf(contentType)) {
      throw unsupported(`the protobuf envelope wraps content of type "${contentType}"`);
    }
    if (!kind) throw new BodyError("Object 'Kind' is missing in the protobuf envelope");
    if (!apiVersion) throw new BodyError(`Object 'apiVersion' is missing for kind "${kind}"`);
    const spec = messageForKind(apiVersion, kind);
    if (!spec) throw unsupported(`no protobuf decoding for kind "${kind}" in "${apiVersion}"`);
    const body = this.decodeMessage(new WireReader(raw), spec, path) as Record<string, unknown>;
    return { object: { kind, apiVersion, ...body }, unknownFields: this.unknownFields };
  }

  /** Decodes one message of the given qualified type (table, list wrapper or special type). */
  decodeType(r: WireReader, type: string, path: string): unknown {
    const special = this.decodeSpecial(r, type, path);
    if (special !== NOT_SPECIAL) return special;
    const spec = lookupMessage(type);
    if (!spec) throw new Error(`protobuf table has no message ${type}`);
    return this.decodeMessage(r, spec, path);
  }

  private decodeMessage(r: WireReader, spec: MessageSpec, path: string): unknown {
    if (++this.depth > MAX_DEPTH) throw new BodyError(`objects nested deeper than ${MAX_DEPTH} levels`);
    try {
      if (spec.listOf) return this.decodeList(r, spec.listOf, path);
      const values = new Map<number, unknown>();
      while (!r.eof()) {
        const { field, wireType } = r.readTag();
        const f = spec.byNumber.get(field);
        if (!f) {
          this.unknownFields.push(`${join(path, `#${field}`)}`);
          r.skip(wireType);
          continue;
        }
        this.readField(r, f, wireType, values, path);
      }
      return this.shape(spec, values, path);
    } finally {
      this.depth--;
    }
  }

  private decodeList(r: WireReader, elementType: string, path: string): unknown[] {
    const items: unknown[] = [];
    const f: FieldSpec = {
      number: 1,
      jsonName: "items",
      type: elementType,
      repeated: true,
      omitEmpty: false,
      pointer: false,
      inline: false,
    };
    const values = new Map<number, unknown>([[1, items]]);
    while (!r.eof()) {
      const { field, wireType } = r.readTag();
      if (field === 1) this.readField(r, f, wireType, values, path);
      else {
        this.unknownFields.push(join(path, `#${field}`));
        r.skip(wireType);
      }
    }
    return items;
  }

  private readField(
    r: WireReader,
    f: FieldSpec,
    wireType: number,
    values: Map<number, unknown>,
    path: string,
  ) {
    const name = f.jsonName ? join(path, f.jsonName) : path;
    if (f.mapKey) {
      if (wireType !== WireType.Bytes) throw wireMismatch(name, wireType);
      const map = (values.get(f.number) as Record<string, unknown> | undefined) ?? {};
      values.set(f.number, map);
      const [key, value] = this.readMapEntry(r.readSubReader(), f, name);
      // defineProperty: a key such as "__proto__" must stay an ordinary entry.
      Object.defineProperty(map, key, { value, enumerable: true, writable: true, configurable: true });
      return;
    }
    const expected = wireTypeFor(f.type);
    const scalar = isScalar(f.type);
    if (f.repeated) {
      const list = (values.get(f.number) as unknown[] | undefined) ?? [];
      values.set(f.number, list);
      if (scalar && expected !== WireType.Bytes && wireType === WireType.Bytes) {
        const packed = r.readSubReader();
        while (!packed.eof()) list.push(readScalar(packed, f.type));
        return;
      }
      if (wireType !== expected) throw wireMismatch(name, wireType);
      const at = `${name}[${list.length}]`;
      list.push(scalar ? readScalar(r, f.type) : this.decodeType(r.readSubReader(), f.type, at));
      return;
    }
    if (wireType !== expected) throw wireMismatch(name, wireType);
    if (scalar) {
      values.set(f.number, readScalar(r, f.type));
      return;
    }
    const value = this.decodeType(r.readSubReader(), f.type, name);
    const prev = values.get(f.number);
    // A message repeated on the wire merges into the earlier one.
    if (isPlainObject(prev) && isPlainObject(value)) values.set(f.number, { ...prev, ...value });
    else values.set(f.number, value);
  }

  private readMapEntry(r: WireReader, f: FieldSpec, path: string): [string, unknown] {
    let key: unknown = scalarZero(f.mapKey!);
    let value: unknown;
    while (!r.eof()) {
      const { field, wireType } = r.readTag();
      if (field === 1 && wireType === wireTypeFor(f.mapKey!)) key = readScalar(r, f.mapKey!);
      else if (field === 2 && wireType === wireTypeFor(f.type)) {
        value = isScalar(f.type)
          ? readScalar(r, f.type)
          : this.decodeType(r.readSubReader(), f.type, `${path}[${String(key)}]`);
      } else r.skip(wireType);
    }
    if (value === undefined) {
      if (f.type === "bytes") value = "";
      else
        value = isScalar(f.type)
          ? scalarZero(f.type)
          : this.decodeType(new WireReader(new Uint8Array(0)), f.type, path);
    }
    return [String(key), value];
  }

  /** Builds the JSON object in Go struct order, applying omitempty and Go zero values. */
  private shape(spec: MessageSpec, values: Map<number, unknown>, path: string): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const f of spec.fields) {
      const has = values.has(f.number);
      const v = values.get(f.number);
      if (f.inline) {
        const sub = has
          ? v
          : f.pointer
            ? undefined
            : this.decodeType(new WireReader(new Uint8Array(0)), f.type, path);
        if (isPlainObject(sub)) Object.assign(out, sub);
        continue;
      }
      const key = f.jsonName;
      if (f.repeated || f.mapKey) {
        if (has) out[key] = v;
        else if (!f.omitEmpty) out[key] = null;
      } else if (isScalar(f.type)) {
        if (has) {
          if (!(f.omitEmpty && !f.pointer && isZeroScalar(v))) out[key] = v;
        } else if (!f.omitEmpty) out[key] = f.pointer ? null : scalarZero(f.type);
      } else if (has) out[key] = v;
      else if (!f.pointer)
        out[key] = this.decodeType(new WireReader(new Uint8Array(0)), f.type, join(path, key));
      else if (!f.omitEmpty) out[key] = null;
    }
    return out;
  }

  /** apimachinery types whose JSON is not an object of their protobuf fields (no table entry). */
  private decodeSpecial(r: WireReader, type: string, path: string): unknown {
    switch (type) {
      case "meta.v1.Time":
      case "meta.v1.MicroTime": {
        const [seconds, nanos] = readFields(r, { 1: (x) => x.readInt64(), 2: (x) => x.readInt32() }, [0, 0]);
        return type === "meta.v1.Time" ? formatTime(seconds, nanos) : formatMicroTime(seconds, nanos);
      }
      case "meta.v1.Duration":
        return formatDuration(readFields(r, { 1: (x) => x.readInt64() }, [0])[0]);
      case "resource.Quantity":
      case "resource.QuantityValue":
        return readFields(r, { 1: (x) => utf8.decode(x.readBytes()) }, [""])[0] || "0";
      case "intstr.IntOrString": {
        const [kind, intVal, strVal] = readFields(
          r,
          { 1: (x) => x.readInt64(), 2: (x) => x.readInt32(), 3: (x) => utf8.decode(x.readBytes()) },
          [0, 0, ""],
        );
        return kind === 1 ? strVal : intVal;
      }
      case "meta.v1.FieldsV1":
      case "runtime.RawExtension": {
        const [raw] = readFields<[Uint8Array | null]>(r, { 1: (x) => x.readBytes() }, [null]);
        return raw === null ? null : parseEmbedded(raw, path, this);
      }
      default:
        return NOT_SPECIAL;
    }
  }
}

const NOT_SPECIAL = Symbol("not special");

/** Message types decoded by name rather than from a table. */
export const SPECIAL_MESSAGE_TYPES = [
  "meta.v1.Time",
  "meta.v1.MicroTime",
  "meta.v1.Duration",
  "meta.v1.FieldsV1",
  "runtime.RawExtension",
  "intstr.IntOrString",
  "resource.Quantity",
  "resource.QuantityValue",
] as const;

/** Reads a small fixed-shape message: field number -> reader; other fields are skipped. */
function readFields<T extends unknown[]>(
  r: WireReader,
  readers: Record<number, (r: WireReader) => unknown>,
  initial: T,
): T {
  const out = [...initial] as T;
  while (!r.eof()) {
    const { field, wireType } = r.readTag();
    const read = readers[field];
    if (read) out[field - 1] = read(r);
    else r.skip(wireType);
  }
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function wireMismatch(path: string, wireType: number): BodyError {
  return new BodyError(`field ${path || "object"}: unexpected wire type ${wireType}`);
}

function unsupported(why: string): StatusError {
  const base = unsupportedMediaType(KUBE_PROTOBUF_MEDIA_TYPE);
  return new StatusError(415, "UnsupportedMediaType", `${base.message}: ${why}`);
}

/**
 * Decodes a request body sent as application/vnd.kubernetes.protobuf into the JSON object the
 * apiserver would have read from the equivalent JSON body. Throws a 400 StatusError for malformed
 * data and a 415 StatusError for kinds it has no tables for.
 */
export function decodeKubeProtobuf(bytes: Uint8Array): DecodedKubeProtobuf {
  try {
    return new Decoder().decodeEnvelope(bytes, "");
  } catch (err) {
    if (err instanceof StatusError) throw err;
    if (err instanceof BodyError || err instanceof WireError || err instanceof RangeError) {
      throw badRequest(`unable to decode protobuf body: ${err.message}`);
    }
    throw err;
  }
}
