// Protobuf scalar types: expected wire type, reading, and Go's zero value in JSON.
import { toBase64 } from "./special";
import { type WireReader, WireType } from "./wire";

const utf8 = new TextDecoder("utf-8");

export function wireTypeFor(type: string): number {
  switch (type) {
    case "bool":
    case "int32":
    case "int64":
    case "uint32":
    case "uint64":
    case "sint32":
    case "sint64":
      return WireType.Varint;
    case "fixed64":
    case "sfixed64":
    case "double":
      return WireType.Fixed64;
    case "fixed32":
    case "sfixed32":
    case "float":
      return WireType.Fixed32;
    default:
      return WireType.Bytes;
  }
}

export function readScalar(r: WireReader, type: string): unknown {
  switch (type) {
    case "string":
      return utf8.decode(r.readBytes());
    case "bytes":
      return toBase64(r.readBytes());
    case "bool":
      return r.readBool();
    case "int32":
      return r.readInt32();
    case "int64":
      return r.readInt64();
    case "uint32":
      return r.readUint32();
    case "uint64":
      return r.readUint64();
    case "sint32":
      return r.readSint32();
    case "sint64":
      return r.readSint64();
    case "fixed32":
      return r.readFixed32();
    case "sfixed32":
      return r.readSfixed32();
    case "fixed64":
      return r.readFixed64();
    case "sfixed64":
      return r.readSfixed64();
    case "double":
      return r.readDouble();
    case "float":
      return r.readFloat();
    default:
      throw new Error(`not a scalar type: ${type}`);
  }
}

export function scalarZero(type: string): unknown {
  if (type === "string") return "";
  if (type === "bool") return false;
  if (type === "bytes") return null;
  return 0;
}
