// A list's JSON as a stream of byte chunks, read a page at a time. A list of 10,000 pods is
// ~27 MB of JSON. Read whole in one call it held the shard's thread (and every request
// behind it) ~110 ms, ~300 ms as a Table, and sat in memory whole until the client took it.
// A list with no limit is now read a page (~1 MB) at a time, each page when the client
// wants more: every page reads the same snapshot (later pages see objects changed since
// through the change log, as a continue token's page does), and compaction keeps that
// snapshot readable while the stream is open (ListPins). A list cut at a limit is read in
// one call, as before: its continue token goes before its items.
import type { ResourceDef } from "../../api/resource";
import { type ListAdd, listFrame, planList, readList } from "./list";
import type { ListQuery } from "./protocol";
import type { StoreShard } from "./shard";

/** Characters per chunk (bytes, for the ASCII most JSON is). */
const CHUNK = 256 * 1024;

/**
 * Characters of objects read per page: ~5 ms of the shard's thread for pods as JSON, ~10 ms
 * as a Table. Smaller pages cost more in all: each page is a query of its own.
 */
const PAGE = 1024 * 1024;

/** How long an open list stream keeps its snapshot from compaction at most. */
const PIN_MS = 5 * 60 * 1000;

/** The snapshots of lists being streamed: compaction stops short of each (shard.compactTo). */
export class ListPins {
  private readonly pins = new Map<symbol, { snap: number; until: number }>();

  pin(snap: number, now = Date.now()): symbol {
    const token = Symbol("list");
    this.pins.set(token, { snap, until: now + PIN_MS });
    return token;
  }

  unpin(token: symbol | undefined): void {
    if (token) this.pins.delete(token);
  }

  /** The furthest compaction may go toward `point` and leave every open list's snapshot readable. */
  clamp(point: number, now = Date.now()): number {
    let to = point;
    for (const [token, p] of this.pins) {
      if (p.until < now) this.pins.delete(token);
      else to = Math.min(to, p.snap - 1);
    }
    return to;
  }
}

export function listStream(shard: StoreShard, def: ResourceDef, q: ListQuery): ReadableStream<Uint8Array> {
  const plan = planList(shard, def, q);
  const encoder = new TextEncoder();
  const chunks: Uint8Array[] = [];
  let text = "";
  let first = true;
  const add: ListAdd = (data) => {
    text += first ? data : `,${data}`;
    first = false;
    if (text.length >= CHUNK) {
      chunks.push(encoder.encode(text));
      text = "";
    }
  };
  const paged = plan.limit === Number.POSITIVE_INFINITY;
  const firstRead = readList(shard, plan, add, paged ? PAGE : undefined);
  const frame = listFrame(shard, plan, firstRead);
  chunks.unshift(encoder.encode(frame.head));
  let open = false;
  let pin: symbol | undefined;
  const end = () => {
    chunks.push(encoder.encode(text + frame.tail));
    text = "";
    open = false;
    shard.listPins.unpin(pin);
  };
  /** reads the next page into chunks, or ends the list */
  const page = () => {
    if (plan.snap <= shard.compacted) throw new Error(`list snapshot ${plan.snap} was compacted`);
    const read = readList(shard, plan, add, PAGE);
    if (!read.paused) end();
    else if (text) {
      chunks.push(encoder.encode(text));
      text = "";
    }
  };
  if (firstRead.paused) {
    // more pages may follow
    open = true;
    pin = shard.listPins.pin(plan.snap);
  } else end();
  let next = 0;
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        try {
          while (next === chunks.length && open) page();
        } catch (e) {
          shard.listPins.unpin(pin);
          controller.error(e);
          return;
        }
        const chunk = chunks[next];
        chunks[next++] = EMPTY; // the client has it: let it go
        controller.enqueue(chunk);
        if (next === chunks.length && !open) controller.close();
      },
      cancel() {
        shard.listPins.unpin(pin);
      },
    },
    { highWaterMark: 0 },
  );
}

const EMPTY = new Uint8Array(0);
