// Reading a container's CRI log file the way the kubelet serves pods/log. Each line of the
// file is `<RFC3339Nano time> <stdout|stderr> <F|P> <text>`: F ends a line, P is a partial
// line the runtime split (the text continues in the next entry, no newline in between).
import { open, stat } from "node:fs/promises";

export interface LogEntry {
  /** the timestamp as written (RFC 3339 with nanoseconds) */
  time: string;
  /** milliseconds since the epoch (for since filters) */
  ms: number;
  stream: "stdout" | "stderr";
  partial: boolean;
  text: string;
}

export interface LogOptions {
  follow?: boolean;
  timestamps?: boolean;
  tailLines?: number;
  sinceSeconds?: number;
  sinceTime?: string;
  limitBytes?: number;
}

/** Parses one line of a CRI log file (without its newline); undefined if malformed. */
export function parseCriLogLine(line: string): LogEntry | undefined {
  const a = line.indexOf(" ");
  if (a <= 0) return undefined;
  const b = line.indexOf(" ", a + 1);
  if (b < 0) return undefined;
  const stream = line.slice(a + 1, b);
  if (stream !== "stdout" && stream !== "stderr") return undefined;
  const time = line.slice(0, a);
  const ms = Date.parse(time);
  if (Number.isNaN(ms)) return undefined;
  // the tag field: "F" or "P", possibly with more colon-separated tags
  const c = line.indexOf(" ", b + 1);
  const tag = c < 0 ? line.slice(b + 1) : line.slice(b + 1, c);
  const text = c < 0 ? "" : line.slice(c + 1);
  return { time, ms, stream, partial: tag.split(":")[0] === "P", text };
}

/** What one entry contributes to the output. */
export function formatEntry(e: LogEntry, timestamps: boolean): string {
  const body = e.partial ? e.text : `${e.text}\n`;
  return timestamps ? `${e.time} ${body}` : body;
}

/** The cut-off time in ms for since filters, or undefined. */
export function sinceMs(opts: LogOptions, now = Date.now()): number | undefined {
  if (opts.sinceSeconds !== undefined) return now - opts.sinceSeconds * 1000;
  if (opts.sinceTime) {
    const t = Date.parse(opts.sinceTime);
    return Number.isNaN(t) ? undefined : t;
  }
  return undefined;
}

/**
 * The output of a whole log file's text under the options (no follow): since filter,
 * then the last tailLines entries, timestamps on request. limitBytes is applied by the caller.
 */
export function renderLog(text: string, opts: LogOptions, now = Date.now()): string {
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const since = sinceMs(opts, now);
  let entries = lines.map(parseCriLogLine).filter((e): e is LogEntry => !!e);
  if (since !== undefined) entries = entries.filter((e) => e.ms >= since);
  if (opts.tailLines !== undefined) entries = opts.tailLines === 0 ? [] : entries.slice(-opts.tailLines);
  return entries.map((e) => formatEntry(e, !!opts.timestamps)).join("");
}

/** Caps output at limitBytes over a whole stream. */
export class ByteLimit {
  private left: number;
  constructor(limit?: number) {
    this.left = limit === undefined ? Number.POSITIVE_INFINITY : limit;
  }
  get done(): boolean {
    return this.left <= 0;
  }
  take(chunk: Buffer): Buffer {
    if (this.left === Number.POSITIVE_INFINITY) return chunk;
    const out = chunk.subarray(0, Math.max(0, this.left));
    this.left -= out.length;
    return out;
  }
}

export interface FollowSource {
  /** whether the container may still write (false ends a follow at end of file) */
  running(): Promise<boolean>;
  /** aborts the follow */
  signal: AbortSignal;
}

const POLL_MS = 200;
const RUNNING_CHECK_MS = 1000;

/**
 * Streams a log file: the initial content (per renderLog), then with follow every entry
 * appended later, until the container stops and the file is drained, or the signal aborts.
 * A file that shrinks (rotated or truncated) is read again from its start.
 */
export async function streamLogFile(
  path: string,
  opts: LogOptions,
  write: (chunk: Buffer) => void | Promise<void>,
  source?: FollowSource,
): Promise<void> {
  const limit = new ByteLimit(opts.limitBytes);
  const emit = async (s: string) => {
    if (!s || limit.done) return;
    const out = limit.take(Buffer.from(s));
    if (out.length) await write(out);
  };
  let offset = 0;
  let rest = "";
  const readNew = async (): Promise<string> => {
    let size: number;
    try {
      size = (await stat(path)).size;
    } catch {
      return "";
    }
    if (size < offset) {
      offset = 0;
      rest = "";
    }
    if (size === offset) return "";
    const fh = await open(path, "r");
    try {
      const buf = Buffer.alloc(size - offset);
      const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
      offset += bytesRead;
      const text = rest + buf.subarray(0, bytesRead).toString("utf8");
      const cut = text.lastIndexOf("\n");
      rest = cut < 0 ? text : text.slice(cut + 1);
      return cut < 0 ? "" : text.slice(0, cut + 1);
    } finally {
      await fh.close();
    }
  };
  await emit(renderLog(await readNew(), opts));
  if (!opts.follow || !source) return;
  const since = sinceMs(opts);
  let lastCheck = Date.now();
  let stopping = false;
  while (!source.signal.aborted && !limit.done) {
    const text = await readNew();
    if (text) {
      const out = text
        .split("\n")
        .filter(Boolean)
        .map(parseCriLogLine)
        .filter((e): e is LogEntry => !!e && (since === undefined || e.ms >= since))
        .map((e) => formatEntry(e, !!opts.timestamps))
        .join("");
      await emit(out);
      continue;
    }
    if (stopping) return;
    if (Date.now() - lastCheck >= RUNNING_CHECK_MS) {
      lastCheck = Date.now();
      // one more read after the container stopped drains what it wrote last
      if (!(await source.running().catch(() => false))) stopping = true;
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
