// A raw watch connection read line by line: events as the server framed them.
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
  const events: WatchEvent[] = [];
  const waiters: Array<() => void> = [];
  const notify = () => {
    for (const w of waiters.splice(0)) w();
  };
  const ended = (async () => {
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let buf = "";
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
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
      if (!ctrl.signal.aborted) throw e;
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
  return { events, waitFor, ended, close: () => ctrl.abort() };
}

/** The (type, name, resourceVersion) triple of an event: enough to compare sequences. */
export function eventKey(e: WatchEvent): string {
  return `${e.type} ${e.object?.metadata?.name} ${e.object?.metadata?.resourceVersion}`;
}
