// The wire reader against protobufjs' writer, and the JSON forms of apimachinery value types.
import protobuf from "protobufjs";
import { describe, expect, it } from "vitest";
import { formatDuration, formatMicroTime, formatTime, toBase64 } from "../../../api/protobuf/special";
import { WireError, WireReader, WireType } from "../../../api/protobuf/wire";

describe("WireReader", () => {
  it("reads the scalar encodings protobufjs writes", () => {
    const w = protobuf.Writer.create();
    w.uint32((1 << 3) | 0).int32(-1);
    w.uint32((2 << 3) | 0).int64(-5);
    w.uint32((3 << 3) | 0).uint64(2 ** 40 + 7);
    w.uint32((4 << 3) | 0).bool(true);
    w.uint32((5 << 3) | 1).double(-2.5);
    w.uint32((6 << 3) | 5).fixed32(0xdeadbeef);
    w.uint32((7 << 3) | 0).sint32(-3);
    w.uint32((8 << 3) | 2).string("héllo");
    w.uint32((9 << 3) | 0).int64(2 ** 53 - 1);
    w.uint32((10 << 3) | 0).int32(2147483647);
    w.uint32((11 << 3) | 0).sint64(-1234567890123);
    w.uint32((12 << 3) | 1).sfixed64(-9);
    w.uint32((13 << 3) | 5).float(1.5);
    const r = new WireReader(w.finish());
    const next = (field: number, wireType: number) => expect(r.readTag()).toEqual({ field, wireType });
    next(1, WireType.Varint);
    expect(r.readInt32()).toBe(-1);
    next(2, WireType.Varint);
    expect(r.readInt64()).toBe(-5);
    next(3, WireType.Varint);
    expect(r.readUint64()).toBe(2 ** 40 + 7);
    next(4, WireType.Varint);
    expect(r.readBool()).toBe(true);
    next(5, WireType.Fixed64);
    expect(r.readDouble()).toBe(-2.5);
    next(6, WireType.Fixed32);
    expect(r.readFixed32()).toBe(0xdeadbeef);
    next(7, WireType.Varint);
    expect(r.readSint32()).toBe(-3);
    next(8, WireType.Bytes);
    expect(new TextDecoder().decode(r.readBytes())).toBe("héllo");
    next(9, WireType.Varint);
    expect(r.readInt64()).toBe(2 ** 53 - 1);
    next(10, WireType.Varint);
    expect(r.readInt32()).toBe(2147483647);
    next(11, WireType.Varint);
    expect(r.readSint64()).toBe(-1234567890123);
    next(12, WireType.Fixed64);
    expect(r.readSfixed64()).toBe(-9);
    next(13, WireType.Fixed32);
    expect(r.readFloat()).toBe(1.5);
    expect(r.eof()).toBe(true);
  });

  it("skips every supported wire type and rejects groups", () => {
    const w = protobuf.Writer.create();
    w.uint32((1 << 3) | 0).int64(-1);
    w.uint32((2 << 3) | 1).fixed64(1);
    w.uint32((3 << 3) | 2).bytes(new Uint8Array([1, 2, 3]));
    w.uint32((4 << 3) | 5).fixed32(1);
    w.uint32((5 << 3) | 0).int32(42);
    const r = new WireReader(w.finish());
    for (let i = 0; i < 4; i++) r.skip(r.readTag().wireType);
    expect(r.readTag().field).toBe(5);
    expect(r.readInt32()).toBe(42);
    expect(() => new WireReader(new Uint8Array([0x0b])).skip(WireType.StartGroup)).toThrow(WireError);
  });

  it("reads a sub-message through a bounded reader", () => {
    const inner = protobuf.Writer.create()
      .uint32((1 << 3) | 0)
      .int32(7)
      .finish();
    const w = protobuf.Writer.create()
      .uint32((1 << 3) | 2)
      .bytes(inner)
      .uint32((2 << 3) | 0)
      .int32(9);
    const r = new WireReader(w.finish());
    r.readTag();
    const sub = r.readSubReader();
    expect(sub.readTag()).toEqual({ field: 1, wireType: 0 });
    expect(sub.readInt32()).toBe(7);
    expect(sub.eof()).toBe(true);
    expect(r.readTag().field).toBe(2);
  });

  it("rejects malformed data", () => {
    expect(() => new WireReader(new Uint8Array([0x80, 0x80])).readInt64()).toThrow(WireError);
    expect(() => new WireReader(new Uint8Array(11).fill(0xff)).readInt64()).toThrow(/longer than 10 bytes/);
    expect(() => new WireReader(new Uint8Array([0x05, 0x61])).readBytes()).toThrow(/past the end/);
    expect(() => new WireReader(new Uint8Array([0x05, 0x61])).readSubReader()).toThrow(/past the end/);
    expect(() => new WireReader(new Uint8Array([0x00])).readTag()).toThrow(/field number 0/);
    expect(() => new WireReader(new Uint8Array([1, 2, 3])).readDouble()).toThrow(WireError);
  });
});

describe("value formats", () => {
  it.each([
    [0, "0s"],
    [1, "1ns"],
    [1500, "1.5µs"],
    [2_000_000, "2ms"],
    [1_500_000_000, "1.5s"],
    [90_000_000_000, "1m30s"],
    [3_600_000_000_000, "1h0m0s"],
    [9_900_500_000_000, "2h45m0.5s"],
    [-2_000_000_000, "-2s"],
  ])("formats a duration of %d ns as Go does (%s)", (ns, text) => {
    expect(formatDuration(ns)).toBe(text);
  });

  it("formats Time and MicroTime in UTC; zero is null", () => {
    const t = Date.parse("2024-02-29T23:59:58Z") / 1000;
    expect(formatTime(t, 999_999_999)).toBe("2024-02-29T23:59:58Z");
    expect(formatMicroTime(t, 5_000)).toBe("2024-02-29T23:59:58.000005Z");
    expect(formatTime(0, 0)).toBeNull();
    expect(formatMicroTime(0, 0)).toBeNull();
    expect(formatTime(-86400, 0)).toBe("1969-12-31T00:00:00Z");
    expect(() => formatTime(300_000_000_000, 0)).toThrow(RangeError);
  });

  it("encodes base64 like Buffer does", () => {
    for (let len = 0; len < 20; len++) {
      const bytes = new Uint8Array(len).map((_, i) => (i * 73 + len * 31) & 0xff);
      expect(toBase64(bytes)).toBe(Buffer.from(bytes).toString("base64"));
    }
  });
});
