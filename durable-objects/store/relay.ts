// A relay: one stream from a shard to the local front door (local-engine/watch-relay.ts) that
// carries the events of every HTTP watch the front door holds open on that shard. Without
// it each watcher is a stream of its own, and one event to a thousand watchers is a
// thousand writes inside workerd, each crossing the runtime and the socket to the front
// door; with it the event is one message naming the watchers it is for, and the front door
// writes it to each client. Filters, replay, bookmarks, timeouts and errors stay here; the
// front door only copies bytes. On Cloudflare there is no front door and no relay: watches
// are streams of their own, as before.
//
// The protocol's names and numbers, and its message format, are in api/wire/watch-relay.ts.

import { DATA, END } from "../../api/wire/watch-relay";
import type { Sink, Watcher, WatchHub } from "./watchers";

export {
  DATA,
  END,
  RELAY_NO_HEADER,
  RELAY_OFFER_HEADER,
  RELAY_PATH,
  RELAY_SHARD_HEADER,
  RELAY_WATCH_HEADER,
  RELAYED_HEADER,
} from "../../api/wire/watch-relay";

/** Queued bytes past which a relay is cut: the front door stopped reading. */
const MAX_BACKLOG = 64 << 20;

export class Relay {
  readonly readable: ReadableStream<Uint8Array>;
  /** the watchers whose events go out here, by the front door's id */
  readonly watchers = new Map<number, Watcher>();
  closed = false;
  private readonly writer: WritableStreamDefaultWriter<Uint8Array>;

  constructor(
    /** the front door's number for this relay, echoed on each watch it carries */
    readonly no: string,
    onClosed: (relay: Relay) => void,
  ) {
    const { readable, writable } = new IdentityTransformStream({ highWaterMark: 1 << 20 });
    this.readable = readable;
    this.writer = writable.getWriter();
    const closed = () => {
      if (this.closed) return;
      this.closed = true;
      onClosed(this);
    };
    this.writer.closed.then(closed, closed);
  }

  /** One message: `data` for each of `ids`, or (END) the end of their watches. */
  send(kind: typeof DATA | typeof END, ids: readonly number[], data?: Uint8Array): void {
    if (this.closed) return;
    if (-(this.writer.desiredSize ?? 0) > MAX_BACKLOG) {
      this.close();
      return;
    }
    const head = 9 + 4 * ids.length;
    const bytes = new Uint8Array(head + (data?.length ?? 0));
    const view = new DataView(bytes.buffer);
    view.setUint32(0, bytes.length - 4, true);
    view.setUint8(4, kind);
    view.setUint32(5, ids.length, true);
    for (let i = 0; i < ids.length; i++) view.setUint32(9 + 4 * i, ids[i]!, true);
    if (data) bytes.set(data, head);
    this.writer.write(bytes).catch(() => {});
  }

  /** Where one watcher's own writes go (replay, bookmarks, errors, its end). */
  sink(id: number): Sink {
    return {
      write: (bytes) => this.send(DATA, [id], bytes),
      close: () => {
        this.watchers.delete(id);
        this.send(END, [id]);
      },
      backlog: () => 0,
    };
  }

  close(): void {
    this.writer.abort("relay closed").catch(() => {});
  }
}

/** A shard's relay: the one the front door opened last, while it is open. */
export class Relays {
  current?: Relay;

  constructor(private readonly hub: WatchHub) {}

  /** A new relay replaces the last one (the front door opens one per shard); their watches end. */
  open(no: string): Relay {
    this.current?.close();
    const relay = new Relay(no, (r) => {
      if (this.current === r) this.current = undefined;
      for (const w of [...r.watchers.values()]) this.hub.close(w);
    });
    this.current = relay;
    return relay;
  }

  /** Ends relayed watches whose clients went away. */
  cancel(no: string, ids: readonly number[]): void {
    const relay = this.current;
    if (relay?.no !== no) return;
    for (const id of ids) {
      const w = relay.watchers.get(id);
      if (w) this.hub.close(w);
    }
  }
}
