// A minimal SPDY/3.1 client session, enough to drive the container runtime's streaming server
// for exec/attach (remotecommand v4.channel.k8s.io over SPDY): create streams with headers,
// send data, half-close (FIN), receive data per stream. Unlike the WebSocket form of that
// protocol, SPDY can half-close stdin, which `kubectl exec -i` needs to deliver EOF.
//
// Frames (SPDY/3): a control frame is [0x80|ver>>8, ver, type(2), flags(1), length(3)] + body;
// a data frame is [stream id(4, top bit 0), flags(1), length(3)] + data. Header blocks are
// zlib streams, ONE per direction for the whole session. Ours is written as stored
// (uncompressed) deflate blocks with no preset dictionary, which any zlib reader accepts,
// including one given the SPDY dictionary; the peer's header blocks are skipped, never read.
import type { Duplex } from "node:stream";

const VERSION = 3;
export const SYN_STREAM = 1;
export const SYN_REPLY = 2;
export const RST_STREAM = 3;
export const PING = 6;
export const GOAWAY = 7;
export const HEADERS = 8;
export const FLAG_FIN = 0x01;

export function controlFrame(type: number, flags: number, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt16BE(0x8000 | VERSION, 0);
  head.writeUInt16BE(type, 2);
  head.writeUInt32BE(body.length, 4);
  head[4] = flags;
  return Buffer.concat([head, body]);
}

export function dataFrame(stream: number, flags: number, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(stream & 0x7fffffff, 0);
  head.writeUInt32BE(data.length, 4);
  head[4] = flags;
  return Buffer.concat([head, data]);
}

/**
 * One header block as the next piece of our zlib stream: the zlib header before the first
 * block, the bytes in non-final stored deflate blocks (type 00, LEN, ~LEN), then an empty
 * stored block, as a sync flush ends: a reader hands out what it has at an empty stored
 * block, while after a non-empty one it first reads ahead for the next block header.
 */
export function storedBlock(data: Buffer, first: boolean): Buffer {
  const parts: Buffer[] = first ? [Buffer.from([0x78, 0x01])] : [];
  const block = (piece: Buffer) => {
    const head = Buffer.alloc(5);
    head[0] = 0; // BFINAL 0, BTYPE 00, padding to the byte boundary
    head.writeUInt16LE(piece.length, 1);
    head.writeUInt16LE(~piece.length & 0xffff, 3);
    parts.push(head, piece);
  };
  for (let at = 0; at < data.length; at += 0xffff) block(data.subarray(at, at + 0xffff));
  block(Buffer.alloc(0));
  return Buffer.concat(parts);
}

/** The uncompressed name/value block: count, then length-prefixed names and values. */
export function headerBlock(headers: Record<string, string>): Buffer {
  const parts: Buffer[] = [];
  const n = Buffer.alloc(4);
  n.writeUInt32BE(Object.keys(headers).length, 0);
  parts.push(n);
  for (const [k, v] of Object.entries(headers)) {
    for (const s of [k.toLowerCase(), v]) {
      const b = Buffer.from(s);
      const len = Buffer.alloc(4);
      len.writeUInt32BE(b.length, 0);
      parts.push(len, b);
    }
  }
  return Buffer.concat(parts);
}

export interface ParsedFrame {
  control: boolean;
  type: number;
  flags: number;
  stream: number;
  body: Buffer;
}

/** Splits a byte stream into frames; keeps an incomplete tail for the next call. */
export class FrameReader {
  private buf: Buffer = Buffer.alloc(0);
  push(chunk: Buffer): ParsedFrame[] {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    const out: ParsedFrame[] = [];
    while (this.buf.length >= 8) {
      const len = this.buf.readUInt32BE(4) & 0xffffff;
      if (this.buf.length < 8 + len) break;
      const control = (this.buf[0] & 0x80) !== 0;
      const body = this.buf.subarray(8, 8 + len);
      const flags = this.buf[4];
      if (control) {
        const type = this.buf.readUInt16BE(2);
        const stream = body.length >= 4 ? body.readUInt32BE(0) & 0x7fffffff : 0;
        out.push({ control, type, flags, stream, body });
      } else {
        out.push({ control, type: 0, flags, stream: this.buf.readUInt32BE(0) & 0x7fffffff, body });
      }
      this.buf = this.buf.subarray(8 + len);
    }
    return out;
  }
}

export interface SpdyStream {
  id: number;
  write(data: Buffer): void;
  /** half-close: no more data from us */
  end(): void;
}

/** A client session over an upgraded socket. */
export class SpdyClient {
  private nextId = 1;
  private headerBytesSent = false;
  private readonly reader = new FrameReader();
  private readonly handlers = new Map<number, { data(b: Buffer): void; fin(): void }>();

  constructor(
    private readonly socket: Duplex,
    private readonly onClose: () => void,
  ) {
    socket.on("data", (chunk: Buffer) => {
      for (const f of this.reader.push(chunk)) this.frame(f);
    });
    socket.on("close", () => {
      for (const h of this.handlers.values()) h.fin();
      this.handlers.clear();
      this.onClose();
    });
    socket.on("error", () => socket.destroy());
  }

  private compress(block: Buffer): Buffer {
    const out = storedBlock(block, !this.headerBytesSent);
    this.headerBytesSent = true;
    return out;
  }

  private send(frame: Buffer): void {
    if (!this.socket.destroyed) this.socket.write(frame);
  }

  /** Opens a stream with headers; `on` receives its data and its end. */
  open(headers: Record<string, string>, on: { data(b: Buffer): void; fin(): void }): SpdyStream {
    const id = this.nextId;
    this.nextId += 2;
    this.handlers.set(id, on);
    const block = this.compress(headerBlock(headers));
    const fixed = Buffer.alloc(10);
    fixed.writeUInt32BE(id, 0);
    fixed.writeUInt32BE(0, 4);
    this.send(controlFrame(SYN_STREAM, 0, Buffer.concat([fixed, block])));
    return {
      id,
      write: (data) => this.send(dataFrame(id, 0, data)),
      end: () => this.send(dataFrame(id, FLAG_FIN, Buffer.alloc(0))),
    };
  }

  close(): void {
    this.socket.destroy();
  }

  private frame(f: ParsedFrame): void {
    if (!f.control) {
      const h = this.handlers.get(f.stream);
      if (!h) return;
      if (f.body.length) h.data(Buffer.from(f.body));
      if (f.flags & FLAG_FIN) {
        this.handlers.delete(f.stream);
        h.fin();
      }
      return;
    }
    switch (f.type) {
      case PING:
        this.send(controlFrame(PING, 0, Buffer.from(f.body)));
        return;
      case RST_STREAM: {
        const h = this.handlers.get(f.stream);
        this.handlers.delete(f.stream);
        h?.fin();
        return;
      }
      case SYN_REPLY:
      case HEADERS:
        // FIN on a reply ends the peer's side of the stream
        if (f.flags & FLAG_FIN) {
          const h = this.handlers.get(f.stream);
          this.handlers.delete(f.stream);
          h?.fin();
        }
        return;
      case GOAWAY:
        return;
    }
  }
}
