// A pod watch for the scheduling benchmarks: one stream over a collection (all namespaces
// or one), reopened from the last resourceVersion if the server ends it, that records for
// each pod when it was first seen bound (spec.nodeName) and first seen Running.
import http from "node:http";
import { expectStatus, lineReader, oneShot, request, type Target } from "./http";

export interface PodSeen {
  /** performance.now() of the first event about the pod (its creation, normally) */
  seen: number;
  /** performance.now() of the first event with spec.nodeName set */
  bound?: number;
  /** performance.now() of the first event with status.phase Running */
  running?: number;
  nodeName?: string;
  labels: Record<string, string>;
}

export type PodListener = (key: string, pod: any, at: number) => void;

export class PodTracker {
  /** namespace/name -> what was seen */
  readonly pods = new Map<string, PodSeen>();
  boundCount = 0;
  runningCount = 0;
  lastBound = 0;
  firstBound = Number.POSITIVE_INFINITY;
  events = 0;
  reopens = 0;
  private readonly listeners = new Set<PodListener>();
  private req?: http.ClientRequest;
  private rv = "";
  private closed = false;

  constructor(
    private readonly target: Target,
    /** e.g. /api/v1/pods or /api/v1/namespaces/x/pods */
    private readonly path: string,
  ) {}

  /** Lists for the current resourceVersion, then watches from it. */
  async start(): Promise<void> {
    const r = await expectStatus(
      200,
      request(this.target, oneShot, "GET", `${this.path}?limit=1`),
      "list rv",
    );
    this.rv = (JSON.parse(r.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    await this.open();
  }

  on(fn: PodListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  close(): void {
    this.closed = true;
    this.req?.destroy();
  }

  private open(): Promise<void> {
    const path = `${this.path}?watch=1&allowWatchBookmarks=true&resourceVersion=${this.rv}`;
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: this.target.host, port: this.target.port, path, agent: false, headers: this.target.headers },
        (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            reject(new Error(`watch ${path}: HTTP ${res.statusCode}`));
            return;
          }
          res.setEncoding("utf8");
          res.on(
            "data",
            lineReader((line, at) => this.onLine(line, at)),
          );
          res.on("end", () => this.reopen());
          res.on("error", () => undefined);
          resolve();
        },
      );
      req.setNoDelay(true);
      req.on("error", (e) => {
        if (this.req === req) this.reopen();
        reject(e);
      });
      req.end();
      this.req = req;
    });
  }

  private reopen(): void {
    if (this.closed) return;
    this.reopens++;
    setTimeout(() => void this.open().catch(() => undefined), 50);
  }

  private onLine(line: string, at: number): void {
    let ev: { type: string; object: any };
    try {
      ev = JSON.parse(line);
    } catch {
      return;
    }
    const obj = ev.object;
    if (obj?.metadata?.resourceVersion) this.rv = obj.metadata.resourceVersion;
    if (ev.type === "BOOKMARK" || ev.type === "ERROR" || ev.type === "DELETED") return;
    this.events++;
    const key = `${obj.metadata.namespace}/${obj.metadata.name}`;
    let seen = this.pods.get(key);
    if (!seen) {
      seen = { seen: at, labels: obj.metadata.labels ?? {} };
      this.pods.set(key, seen);
    }
    if (seen.bound === undefined && obj.spec?.nodeName) {
      seen.bound = at;
      seen.nodeName = obj.spec.nodeName;
      this.boundCount++;
      this.lastBound = at;
      if (at < this.firstBound) this.firstBound = at;
    }
    if (seen.running === undefined && obj.status?.phase === "Running") {
      seen.running = at;
      this.runningCount++;
    }
    for (const fn of this.listeners) fn(key, obj, at);
  }
}

/** Resolves when pred() holds (checked every `everyMs`), false on timeout. */
export async function waitUntil(pred: () => boolean, timeoutMs: number, everyMs = 20): Promise<boolean> {
  const end = performance.now() + timeoutMs;
  while (!pred()) {
    if (performance.now() > end) return false;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return true;
}
