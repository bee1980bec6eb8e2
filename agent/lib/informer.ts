// List then watch one collection, as client-go's reflector does: watch from the list's
// resourceVersion, resume from the last seen one after a disconnect, re-list after
// 410 Gone or an ERROR event. Callers see a full snapshot after every (re-)list.
// Serves the simulated fleet and the edgelet alike: anything that can GET and watch.
import type { Reply, WatchFrame, WatchResult } from "./http";
import { itemsOf } from "./kube-types";

/** What an informer needs of a client: a GET, and a watch stream of parsed frames. */
export interface WatchClient {
  request(method: string, path: string): Promise<Reply>;
  /** onEvent may return false to close the stream. */
  watch(path: string, onEvent: (ev: WatchFrame) => unknown, signal: AbortSignal): Promise<WatchResult>;
}

export interface InformerHandlers {
  /** After every list: the complete current set. */
  onList(items: unknown[]): void;
  onEvent(type: "ADDED" | "MODIFIED" | "DELETED", obj: unknown): void;
}

export class Informer {
  private readonly abort = new AbortController();
  private rv = "";
  private done: Promise<void> | undefined;
  /** Resolves after the first successful list. */
  readonly synced: Promise<void>;
  private markSynced!: () => void;
  lists = 0;

  constructor(
    private readonly client: WatchClient,
    private readonly path: string,
    private readonly query: Record<string, string>,
    private readonly handlers: InformerHandlers,
    private readonly onError: (msg: string) => void = () => {},
  ) {
    this.synced = new Promise((r) => (this.markSynced = r));
  }

  start(): void {
    this.done ??= this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.done?.catch(() => {});
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  private url(extra: Record<string, string>): string {
    const q = new URLSearchParams({ ...this.query, ...extra });
    return `${this.path}?${q}`;
  }

  private async list(): Promise<void> {
    for (let delay = 200; !this.stopped; delay = Math.min(delay * 2, 5000)) {
      try {
        const r = await withRetry(() => this.client.request("GET", this.url({})), {
          stopped: () => this.stopped,
        });
        const items = r.status === 200 ? itemsOf(r.json) : undefined;
        if (items) {
          this.rv = r.json?.metadata?.resourceVersion ?? "";
          this.lists++;
          this.handlers.onList(items);
          this.markSynced();
          return;
        }
        this.onError(`list ${this.path}: ${r.status} ${r.json?.message ?? ""}`);
      } catch (e) {
        if (this.stopped) return;
        this.onError(`list ${this.path}: ${(e as Error).message}`);
      }
      await sleep(delay);
    }
  }

  private async run(): Promise<void> {
    let needList = true;
    let failures = 0;
    while (!this.stopped) {
      if (needList) {
        await this.list();
        needList = false;
      }
      if (this.stopped) return;
      let expired = false;
      let events = 0;
      const began = Date.now();
      try {
        const timeout = String(300 + Math.floor(Math.random() * 300));
        const path = this.url({
          watch: "1",
          resourceVersion: this.rv,
          allowWatchBookmarks: "true",
          timeoutSeconds: timeout,
        });
        const r = await this.client.watch(
          path,
          (ev) => {
            events++;
            const obj = ev.object;
            if (ev.type === "ERROR") {
              // 410 Expired and friends: this resourceVersion is no good, list again
              expired = true;
              if (obj?.code !== 410) this.onError(`watch ${this.path}: ${obj?.code} ${obj?.message ?? ""}`);
              return false;
            }
            const rv = obj?.metadata?.resourceVersion;
            if (rv) this.rv = rv;
            if (ev.type === "ADDED" || ev.type === "MODIFIED" || ev.type === "DELETED")
              this.handlers.onEvent(ev.type, obj);
            return true;
          },
          this.abort.signal,
        );
        if (r.status === 410) expired = true;
        else if (r.status !== 200) {
          this.onError(`watch ${this.path}: ${r.status} ${r.body?.message ?? ""}`);
          expired = true;
          failures++;
        } else if (!expired && events === 0 && Date.now() - began < 1000) {
          failures++; // closed at once with nothing said: back off rather than spin
        } else failures = 0;
      } catch (e) {
        if (this.stopped) return;
        failures++;
        this.onError(`watch ${this.path}: ${(e as Error).message} (reconnecting)`);
      }
      if (expired) needList = true;
      if (failures) await sleep(Math.min(200 * 2 ** failures, 5000));
    }
  }
}

/** Retries transport errors, 5xx and 429 with capped exponential backoff. */
export async function withRetry(
  fn: () => Promise<Reply>,
  opts: { attempts?: number; baseMs?: number; stopped?: () => boolean } = {},
): Promise<Reply> {
  const attempts = opts.attempts ?? 6;
  let delay = opts.baseMs ?? 200;
  for (let i = 1; ; i++) {
    try {
      const r = await fn();
      if ((r.status < 500 && r.status !== 429) || i >= attempts || opts.stopped?.()) return r;
    } catch (e) {
      if (i >= attempts || opts.stopped?.()) throw e;
    }
    await sleep(delay * (0.8 + Math.random() * 0.4));
    delay = Math.min(delay * 2, 5000);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
