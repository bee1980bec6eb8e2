// A list's JSON as a stream of byte chunks. A whole list of 10,000 pods is ~27 MB of JSON:
// joined into one string it was copied whole across the call to the Worker and again into
// the response, each copy a large object in the isolate's heap, with the items' strings
// alive until the join. Here each item is encoded into a chunk as soon as it is read, so
// its string dies young, and the chunks (outside the JS heap) go to the client as they are.
// The list is still read whole, from one snapshot, within the call (list.ts).
import type { ResourceDef } from "../../api/resource";
import { listInto } from "./list";
import type { ListQuery } from "./protocol";
import type { StoreShard } from "./shard";

/** Characters per chunk (bytes, for the ASCII most JSON is). */
const CHUNK = 256 * 1024;

export function listStream(shard: StoreShard, def: ResourceDef, q: ListQuery): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const chunks: Uint8Array[] = [];
  let text = "";
  let first = true;
  const frame = listInto(shard, def, q, (data) => {
    text += first ? data : `,${data}`;
    first = false;
    if (text.length >= CHUNK) {
      chunks.push(encoder.encode(text));
      text = "";
    }
  });
  chunks.unshift(encoder.encode(frame.head));
  chunks.push(encoder.encode(text + frame.tail));
  let next = 0;
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const chunk = chunks[next];
        chunks[next++] = EMPTY; // the client has it: let it go
        controller.enqueue(chunk);
        if (next === chunks.length) controller.close();
      },
    },
    { highWaterMark: 0 },
  );
}

const EMPTY = new Uint8Array(0);
