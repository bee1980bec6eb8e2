import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseCriLogLine, renderLog, streamLogFile } from "../../../agent/tunnel/cri-log";

const FILE = [
  "2026-11-29T10:00:00.000000001Z stdout F first",
  "2026-11-29T10:00:01.5Z stderr F oops",
  "2026-11-29T10:00:02.000000000Z stdout P part-",
  "2026-11-29T10:00:02.100000000Z stdout F whole",
  "2026-11-29T10:00:03Z stdout F ",
  "garbage line",
  "2026-11-29T10:00:04Z stdout F last one",
  "",
].join("\n");

describe("CRI log lines", () => {
  it("parses time, stream, tag and text (spaces kept)", () => {
    expect(parseCriLogLine("2026-11-29T10:00:04.123456789Z stderr F a  b ")).toEqual({
      time: "2026-11-29T10:00:04.123456789Z",
      ms: Date.parse("2026-11-29T10:00:04.123Z"),
      stream: "stderr",
      partial: false,
      text: "a  b ",
    });
    expect(parseCriLogLine("2026-11-29T10:00:04Z stdout P x")?.partial).toBe(true);
    expect(parseCriLogLine("2026-11-29T10:00:04Z stdout F")?.text).toBe("");
    expect(parseCriLogLine("not a time stdout F x")).toBeUndefined();
    expect(parseCriLogLine("2026-11-29T10:00:04Z stdin F x")).toBeUndefined();
  });

  it("joins partial lines and skips malformed ones", () => {
    expect(renderLog(FILE, {})).toBe("first\noops\npart-whole\n\nlast one\n");
  });

  it("applies tailLines, sinceTime and timestamps", () => {
    expect(renderLog(FILE, { tailLines: 2 })).toBe("\nlast one\n");
    expect(renderLog(FILE, { tailLines: 0 })).toBe("");
    expect(renderLog(FILE, { sinceTime: "2026-11-29T10:00:02.05Z" })).toBe("whole\n\nlast one\n");
    const now = Date.parse("2026-11-29T10:00:05Z");
    expect(renderLog(FILE, { sinceSeconds: 2 }, now)).toBe("\nlast one\n");
    expect(renderLog(FILE, { timestamps: true, tailLines: 1 })).toBe("2026-11-29T10:00:04Z last one\n");
  });
});

describe("streaming a log file", () => {
  const dir = mkdtempSync(join(tmpdir(), "tunnel-log-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("honours limitBytes", async () => {
    const path = join(dir, "limit.log");
    writeFileSync(path, FILE);
    let out = "";
    await streamLogFile(path, { limitBytes: 8 }, (c) => {
      out += c.toString();
    });
    expect(out).toBe("first\noo");
  });

  it("follows appended lines until the container stops", async () => {
    const path = join(dir, "follow.log");
    writeFileSync(path, "2026-11-29T10:00:00Z stdout F one\n");
    let running = true;
    let out = "";
    const ac = new AbortController();
    const done = streamLogFile(
      path,
      { follow: true },
      (c) => {
        out += c.toString();
      },
      { running: async () => running, signal: ac.signal },
    );
    await new Promise((r) => setTimeout(r, 300));
    appendFileSync(path, "2026-11-29T10:00:01Z stdout F two\n2026-11-29T10:00:02Z stdout P thr");
    await new Promise((r) => setTimeout(r, 400));
    expect(out).toBe("one\ntwo\n"); // a file line without its newline is not read yet
    appendFileSync(path, "\n2026-11-29T10:00:02Z stdout F ee\n");
    running = false;
    await done;
    expect(out).toBe("one\ntwo\nthree\n");
  }, 10_000);
});
