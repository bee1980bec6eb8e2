// A small protocol-buffers wire-format reader (no dependencies, runs in Workers).
// Kubernetes' gogo-generated messages only use varint (0), 64-bit (1), length-delimited (2)
// and 32-bit (5) wire types; groups (3, 4) are rejected.

export const WireType = { Varint: 0, Fixed64: 1, Bytes: 2, StartGroup: 3, EndGroup: 4, Fixed32: 5 } as const;

/** Malformed wire data; the decoder turns it into a 400. */
export class WireError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WireError";
  }
}

export interface Tag {
  field: number;
  wireType: number;
}

const TWO_32 = 4294967296;

export class WireReader {
  pos: number;

  constructor(
    readonly buf: Uint8Array,
    start = 0,
    readonly end = buf.length,
  ) {
    this.pos = start;
  }

  eof(): boolean {
    return this.pos >= this.end;
  }

  readTag(): Tag {
    const at = this.pos;
    const v = this.readVarint32();
    const field = v >>> 3;
    const wireType = v & 7;
    if (field === 0) throw new WireError(`invalid field number 0 at offset ${at}`);
    return { field, wireType };
  }

  /** Reads a varint as two unsigned 32-bit halves. */
  private readVarintParts(): [number, number] {
    let lo = 0;
    let hi = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new WireError("unexpected end of data in varint");
      const b = this.buf[this.pos++];
      if (i < 4) lo |= (b & 0x7f) << (i * 7);
      else if (i === 4) {
        lo |= (b & 0x0f) << 28;
        hi |= (b & 0x7f) >> 4;
      } else hi |= (b & 0x7f) << (i * 7 - 32);
      if ((b & 0x80) === 0) return [lo >>> 0, hi >>> 0];
    }
    throw new WireError("varint is longer than 10 bytes");
  }

  /** Low 32 bits of a varint, unsigned (tags, lengths). */
  readVarint32(): number {
    return this.readVarintParts()[0];
  }

  readInt32(): number {
    return this.readVarintParts()[0] | 0;
  }

  readUint32(): number {
    return this.readVarintParts()[0];
  }

  /** Signed 64-bit varint as a JS number (exact up to 2^53). */
  readInt64(): number {
    const [lo, hi] = this.readVarintParts();
    if (hi & 0x80000000) {
      return Number(BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)));
    }
    return hi * TWO_32 + lo;
  }

  readUint64(): number {
    const [lo, hi] = this.readVarintParts();
    return hi * TWO_32 + lo;
  }

  readSint32(): number {
    const n = this.readVarintParts()[0];
    return (n >>> 1) ^ -(n & 1);
  }

  readSint64(): number {
    const [lo, hi] = this.readVarintParts();
    const u = (BigInt(hi) << 32n) | BigInt(lo);
    return Number((u >> 1n) ^ -(u & 1n));
  }

  readBool(): boolean {
    const [lo, hi] = this.readVarintParts();
    return lo !== 0 || hi !== 0;
  }

  private view(n: number): DataView {
    if (this.pos + n > this.end) throw new WireError("unexpected end of data in fixed-width value");
    const v = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, n);
    this.pos += n;
    return v;
  }

  readFixed32(): number {
    return this.view(4).getUint32(0, true);
  }

  readSfixed32(): number {
    return this.view(4).getInt32(0, true);
  }

  readFixed64(): number {
    const v = this.view(8);
    return v.getUint32(4, true) * TWO_32 + v.getUint32(0, true);
  }

  readSfixed64(): number {
    return Number(this.view(8).getBigInt64(0, true));
  }

  readFloat(): number {
    return this.view(4).getFloat32(0, true);
  }

  readDouble(): number {
    return this.view(8).getFloat64(0, true);
  }

  /** A length-delimited payload, as a view into the buffer (no copy). */
  readBytes(): Uint8Array {
    const len = this.readVarint32();
    if (this.pos + len > this.end) {
      throw new WireError(`length ${len} at offset ${this.pos} runs past the end of the data`);
    }
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }

  /** A reader over the next length-delimited payload. */
  readSubReader(): WireReader {
    const len = this.readVarint32();
    const start = this.pos;
    if (start + len > this.end) {
      throw new WireError(`length ${len} at offset ${start} runs past the end of the data`);
    }
    this.pos += len;
    return new WireReader(this.buf, start, start + len);
  }

  skip(wireType: number): void {
    switch (wireType) {
      case WireType.Varint:
        this.readVarintParts();
        return;
      case WireType.Fixed64:
        this.view(8);
        return;
      case WireType.Bytes:
        this.readBytes();
        return;
      case WireType.Fixed32:
        this.view(4);
        return;
      default:
        throw new WireError(`unsupported wire type ${wireType}`);
    }
  }
}
