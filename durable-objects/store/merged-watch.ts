// A watch over all shards of a spread resource (shard-plan.ts): each shard's stream of events
// (one JSON event per line), merged as they come. The merge keeps the vector of where each
// shard's stream is, and every event goes out with that vector as its object's
// resourceVersion: a client resuming from any event's version resumes each shard right after
// what it was given of that shard, with no gap and nothing twice.
//
// A watch from the current state ("", "0", or sendInitialEvents) asks every shard for its
// state and the bookmark that ends it; the state events are held until every shard's is in,
// and go out with the vector of those bookmarks: the state as of one vector, as a list's.
import { formatVector } from "./shard-plan";

const encoder = new TextEncoder();

const RV = /"resourceVersion":"(\d+)"/;
const INITIAL_END = '"k8s.io/initial-events-end":"true"';

export interface MergeOptions {
  /** where each shard's stream starts (its revision); 0 until a state watch's bookmark says */
  start: number[];
  /** a watch from the current state: hold each shard's state events until its bookmark */
  fromState: boolean;
  /** the client asked for bookmarks (its own, and the initial-events-end one when it asked for state) */
  bookmarks: boolean;
  /** the client asked for sendInitialEvents: it gets one initial-events-end bookmark */
  initialEvents: boolean;
  /** a Table watch: the column definitions go out once */
  table: boolean;
}

/** The merged stream of newline-separated events; cancelling it cancels every shard's stream. */
export function mergeWatchStreams(
  streams: ReadableStream<Uint8Array>[],
  opts: MergeOptions,
): ReadableStream<Uint8Array> {
  const vec = [...opts.start];
  const readers = streams.map((s) => s.getReader());
  const held: { shard: number; line: string; state: boolean }[] = [];
  let headersSent = false;
  let closed = false;
  let controller!: ReadableStreamDefaultController<Uint8Array>;

  const stop = (error?: unknown) => {
    if (closed) return;
    closed = true;
    for (const r of readers) r.cancel().catch(() => {});
    if (error) controller.error(error);
    else controller.close();
  };

  const send = (line: string): void => {
    if (!closed) controller.enqueue(encoder.encode(`${line}\n`));
  };

  /** The event with the vector as its version (every place the shard put its revision). */
  const stamped = (line: string, rv: string): string => {
    let out = line.split(`"resourceVersion":"${rv}"`).join(`"resourceVersion":"${formatVector(vec)}"`);
    if (opts.table && out.includes('"columnDefinitions":[{')) {
      if (headersSent) {
        const ev = JSON.parse(out);
        ev.object.columnDefinitions = [];
        out = JSON.stringify(ev);
      }
      headersSent = true;
    } else if (opts.table && out.includes('"columnDefinitions"')) headersSent = true;
    return out;
  };

  const n = streams.length;
  /** shards whose state has ended (a watch from the current state) */
  const stateDone = new Set<number>();

  const emit = (shard: number, line: string, state: boolean) => {
    const m = RV.exec(line);
    if (!m) return send(line);
    // a state event shows the state's vector; a change moves its shard's part to its revision
    if (!state) vec[shard] = Math.max(vec[shard], Number(m[1]));
    send(stamped(line, m[1]));
  };

  const onLine = (shard: number, line: string) => {
    if (!line) return;
    if (line.startsWith('{"type":"ERROR"')) {
      send(line);
      stop();
      return;
    }
    const inState = opts.fromState && stateDone.size < n;
    if (line.startsWith('{"type":"BOOKMARK"')) {
      const m = RV.exec(line);
      if (!m) return;
      if (opts.fromState && !stateDone.has(shard) && line.includes(INITIAL_END)) {
        stateDone.add(shard);
        vec[shard] = Number(m[1]);
        if (stateDone.size < n) return;
        // every shard's state is in: it goes out at the vector of their bookmarks
        for (const h of held.splice(0)) emit(h.shard, h.line, h.state);
        if (opts.initialEvents) {
          const ev = JSON.parse(line);
          ev.object.metadata.resourceVersion = formatVector(vec);
          send(JSON.stringify(ev));
        }
        return;
      }
      if (inState) return; // a periodic bookmark while states are still coming
      vec[shard] = Math.max(vec[shard], Number(m[1]));
      if (opts.bookmarks) send(line.replace(RV, `"resourceVersion":"${formatVector(vec)}"`));
      return;
    }
    const state = opts.fromState && !stateDone.has(shard);
    if (inState) held.push({ shard, line, state });
    else emit(shard, line, state);
  };

  const pump = async (shard: number) => {
    try {
      await readLines(readers[shard], (line) => {
        onLine(shard, line);
        return !closed;
      });
      // one shard's stream ended (its timeout, or it closed): the watch ends, as one shard's would
      stop();
    } catch (e) {
      if (!closed) stop(e);
    }
  };

  return new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      for (let i = 0; i < readers.length; i++) void pump(i);
    },
    cancel() {
      closed = true;
      for (const r of readers) r.cancel().catch(() => {});
    },
  });
}

/**
 * Hands `onLine` each newline-ended line the reader gives (and a last unended one), until the
 * stream ends or `onLine` answers false.
 */
export async function readLines(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  onLine: (line: string) => boolean,
): Promise<void> {
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let nl = buf.indexOf("\n");
    while (nl >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (!onLine(line)) return;
      nl = buf.indexOf("\n");
    }
  }
  if (buf) onLine(buf);
}
