// A raw watch connection read line by line: events as the server framed them.
import type { ClientHttp2Session } from "node:http2";
import type { Target } from "./cluster";

export interface WatchEvent {
  type: string;
  object: any;
}

export interface WatchStream {
  events: WatchEvent[];
  /** Resolves when at least `n` events arrived; rejects after `ms`. */
  waitFor(n: number, ms?: number): Promise<WatchEvent[]>;
  /** Resolves when the server ended the stream. */
  ended: Promise<void>;
  close(): void;
}

export async function openWatch(t: Target, path: string): Promise<WatchStream> {
  const ctrl = new AbortController();
  const res = await fetch(t.url + path, {
    headers: { authorization: `Bearer ${t.token}` },
    signal: ctrl.signal,
  });
  if (res.status !== 200) throw new Error(`watch ${path}: HTTP ${res.status} ${await res.text()}`);
  return readWatch(res.body as unknown as AsyncIterable<Uint8Array>, () => ctrl.abort());
}

/** The same as a stream of `session`, an HTTP/2 connection to the front door. */
export async function openH2Watch(
  session: ClientHttp2Session,
  t: Target,
  path: string,
): Promise<WatchStream> {
  const req = session.request({ ":path": path, authorization: `Bearer ${t.token}` });
  const status = await new Promise<number>((resolve, reject) => {
    req.once("response", (h) => resolve(Number(h[":status"])));
    req.once("error", reject);
  });
  if (status !== 200) throw new Error(`watch ${path}: HTTP/2 ${status}`);
  return readWatch(req, () => req.close());
}

/** Events of a watch's body, read line by line as they come. */
function readWatch(body: AsyncIterable<Uint8Array>, close: () => void): WatchStream {
  let cancelled = false;
  const events: WatchEvent[] = [];
  const waiters: Array<() => void> = [];
  const notify = () => {
    for (const w of waiters.splice(0)) w();
  };
  const ended = (async () => {
    const dec = new TextDecoder();
    let buf = "";
    try {
      for await (const value of body) {
        buf += dec.decode(value, { stream: true });
        let i: number;
        while ((i = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, i).trim();
          buf = buf.slice(i + 1);
          if (line) events.push(JSON.parse(line));
        }
        notify();
      }
    } catch (e) {
      if (!cancelled) throw e;
    } finally {
      notify();
    }
  })();
  let finished = false;
  ended.then(
    () => (finished = true),
    () => (finished = true),
  );
  const waitFor = async (n: number, ms = 10_000) => {
    const deadline = Date.now() + ms;
    while (events.length < n) {
      if (finished) throw new Error(`watch ended after ${events.length} of ${n} events`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${n} events, got ${events.length}`);
      await new Promise<void>((r) => {
        const timer = setTimeout(r, Math.min(left, 500));
        waiters.push(() => {
          clearTimeout(timer);
          r();
        });
      });
    }
    return events;
  };
  return {
    events,
    waitFor,
    ended,
    close: () => {
      cancelled = true;
      close();
    },
  };
}

/** The (type, name, resourceVersion) triple of an event: enough to compare sequences. */
export function eventKey(e: WatchEvent): string {
  return `${e.type} ${e.object?.metadata?.name} ${e.object?.metadata?.resourceVersion}`;
}
