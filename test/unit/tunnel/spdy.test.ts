import zlib from "node:zlib";
import { describe, expect, it } from "vitest";
import {
  controlFrame,
  dataFrame,
  FLAG_FIN,
  FrameReader,
  headerBlock,
  PING,
  storedBlock,
} from "../../../agent/tunnel/spdy";

describe("SPDY framing", () => {
  it("writes header blocks as one zlib stream any inflater reads block by block", () => {
    const a = headerBlock({ streamType: "error" });
    const b = headerBlock({ streamtype: "stdin", port: "8080" });
    const first = storedBlock(a, true);
    const second = storedBlock(b, false);
    const opts = { finishFlush: zlib.constants.Z_SYNC_FLUSH };
    expect(zlib.inflateSync(first, opts)).toEqual(a);
    expect(zlib.inflateSync(Buffer.concat([first, second]), opts)).toEqual(Buffer.concat([a, b]));
    // names are lower-cased, lengths are 32-bit
    expect(a.readUInt32BE(0)).toBe(1);
    expect(a.subarray(8, 18).toString()).toBe("streamtype");
  });

  it("splits frames across chunk boundaries", () => {
    const frames = Buffer.concat([
      dataFrame(3, FLAG_FIN, Buffer.from("hello")),
      controlFrame(PING, 0, Buffer.from([0, 0, 0, 2])),
    ]);
    const r = new FrameReader();
    const got = [
      ...r.push(frames.subarray(0, 6)),
      ...r.push(frames.subarray(6, 15)),
      ...r.push(frames.subarray(15)),
    ];
    expect(got).toHaveLength(2);
    expect(got[0]).toMatchObject({ control: false, stream: 3, flags: FLAG_FIN });
    expect(got[0].body.toString()).toBe("hello");
    expect(got[1]).toMatchObject({ control: true, type: PING, stream: 2 });
    expect([...frames.subarray(13, 17)]).toEqual([0x80, 3, 0, PING]);
  });
});
