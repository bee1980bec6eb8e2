// The pods bound to this node, from the apiserver: list, then watch from the
// list's resourceVersion with fieldSelector spec.nodeName=<node>; re-list on
// 410 Gone, reconnect with backoff, and a full re-list every resync period.
// Every list is diffed against the source's own cache.
import type { WatchFrame } from "../lib/http";
import { isPod, itemsOf, type Pod } from "../lib/kube-types";
import { type Api, sleep } from "./api";

export type PodUpdate = "add" | "update" | "remove" | "resync";

export interface PodSourceOptions {
  api: Api;
  nodeName: string;
  resyncMs: number;
  onUpdate(kind: PodUpdate, pod: Pod): void;
  log(msg: string): void;
}

export class PodSource {
  readonly pods = new Map<string, Pod>();
  private rv = "";
  private readonly abort = new AbortController();
  private running?: Promise<void>;
  private watchAbort?: AbortController;
  private firstList!: () => void;
  /** Resolves once the first list has been delivered. */
  readonly synced = new Promise<void>((r) => (this.firstList = r));
  lists = 0;

  constructor(private readonly o: PodSourceOptions) {}

  private get query(): string {
    return `fieldSelector=${encodeURIComponent(`spec.nodeName=${this.o.nodeName}`)}`;
  }

  start(): void {
    this.running ??= this.loop();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.watchAbort?.abort();
    await this.running?.catch(() => {});
  }

  private async list(): Promise<boolean> {
    const r = await this.o.api.get(`/api/v1/pods?${this.query}`);
    const items = r.status === 200 ? itemsOf(r.json) : undefined;
    if (!items) {
      this.o.log(`list pods: ${r.status} ${r.json?.message ?? ""}`);
      return false;
    }
    this.rv = r.json?.metadata?.resourceVersion ?? "";
    this.lists++;
    const seen = new Set<string>();
    for (const pod of items) {
      if (!isPod(pod)) continue; // the apiserver never lists such a thing; it is skipped, not run
      const uid = pod.metadata.uid;
      seen.add(uid);
      const old = this.pods.get(uid);
      this.pods.set(uid, pod);
      if (!old) this.o.onUpdate("add", pod);
      else if (old.metadata.resourceVersion !== pod.metadata.resourceVersion) this.o.onUpdate("update", pod);
      else this.o.onUpdate("resync", pod);
    }
    for (const [uid, pod] of this.pods) {
      if (!seen.has(uid)) {
        this.pods.delete(uid);
        this.o.onUpdate("remove", pod);
      }
    }
    this.firstList();
    return true;
  }

  private event(type: WatchFrame["type"], pod: unknown): void {
    if (!isPod(pod)) return;
    const uid = pod.metadata.uid;
    if (type === "DELETED") {
      this.pods.delete(uid);
      this.o.onUpdate("remove", pod);
      return;
    }
    const known = this.pods.has(uid);
    this.pods.set(uid, pod);
    this.o.onUpdate(known ? "update" : "add", pod);
  }

  private async loop(): Promise<void> {
    let needList = true;
    let failures = 0;
    let lastList = 0;
    const signal = this.abort.signal;
    while (!signal.aborted) {
      try {
        if (needList || Date.now() - lastList >= this.o.resyncMs) {
          if (!(await this.list())) throw new Error("list failed");
          needList = false;
          lastList = Date.now();
        }
        const left = Math.max(1, Math.ceil((this.o.resyncMs - (Date.now() - lastList)) / 1000));
        const path = `/api/v1/pods?${this.query}&watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(this.rv)}&timeoutSeconds=${left}`;
        this.watchAbort = new AbortController();
        const timer = setTimeout(() => this.watchAbort?.abort(), (left + 5) * 1000);
        const onAbort = () => this.watchAbort?.abort();
        signal.addEventListener("abort", onAbort, { once: true });
        let gone = false;
        const r = await this.o.api
          .watch(
            path,
            (ev) => {
              if (gone) return;
              if (ev.type === "ERROR") {
                gone = true;
                if (ev.object?.code !== 410)
                  this.o.log(`watch pods: ${ev.object?.code} ${ev.object?.message ?? ""}`);
                this.watchAbort?.abort();
                return;
              }
              const rv = ev.object?.metadata?.resourceVersion;
              if (rv) this.rv = rv;
              if (ev.type !== "BOOKMARK") this.event(ev.type, ev.object);
            },
            this.watchAbort.signal,
          )
          .finally(() => {
            clearTimeout(timer);
            signal.removeEventListener("abort", onAbort);
          });
        if (r.status === 410) gone = true;
        else if (r.status !== 200 && !signal.aborted)
          throw new Error(`watch status ${r.status} ${r.body?.message ?? ""}`);
        if (gone) needList = true;
        failures = 0;
      } catch (e) {
        if (signal.aborted) return;
        failures++;
        needList = true;
        this.o.log(`pod source: ${(e as Error).message}; retrying`);
        await sleep(Math.min(200 * 2 ** failures, 10_000), signal);
      }
    }
  }
}
