// The steady workload a chaos run keeps up while it kills things, and what it checks after:
// - writes: ConfigMaps created, updated (a counter) and deleted, one at a time; each answer
//   that acknowledged a write goes in a ledger (an unanswered attempt is noted as "maybe");
// - watches: `watches` watches on those ConfigMaps from one resourceVersion, each re-opened
//   from the last resourceVersion it saw whenever it ends (as an informer does);
// - pods: bare pods created and deleted; Deployments rolled (template changes) and scaled.
// Checks: every acknowledged write is there (no later attempt lost it either), every watch saw
// every acknowledged write in order exactly once (resourceVersions strictly increasing, none
// missing, no 410 forcing a re-list), no ReplicaSet runs more pods than it wants, every
// Deployment converges.
import http from "node:http";
import { sleep } from "./processes";

export interface Api {
  url: string;
  token: string;
}

export interface Answer {
  status: number;
  json: any;
}

/** One request; status 0 when it got no answer (a connection cut, a timeout). */
export async function call(
  api: Api,
  method: string,
  path: string,
  body?: unknown,
  timeoutMs = 10_000,
): Promise<Answer> {
  try {
    const r = await fetch(api.url + path, {
      method,
      headers: {
        authorization: `Bearer ${api.token}`,
        ...(body === undefined
          ? {}
          : { "content-type": method === "PATCH" ? "application/merge-patch+json" : "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await r.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {}
    return { status: r.status, json };
  } catch {
    return { status: 0, json: undefined };
  }
}

/** What happened to one ConfigMap, as far as answers said. */
interface Entry {
  created: boolean;
  /** resourceVersions of acknowledged creates and updates, and the counter each set */
  acked: { rv: number; counter: number }[];
  /** the highest counter ever sent (an unanswered update may have gone through) */
  tried: number;
  deleted: "no" | "acked" | "maybe";
}

export class Writes {
  readonly entries = new Map<string, Entry>();
  acked = 0;
  unanswered = 0;
  private n = 0;
  private stopped = false;
  private done?: Promise<void>;
  constructor(
    readonly api: Api,
    readonly ns: string,
  ) {}

  private path(name = "") {
    return `/api/v1/namespaces/${this.ns}/configmaps${name ? `/${name}` : ""}`;
  }

  private async one() {
    const live = [...this.entries].filter(([, e]) => e.created && e.deleted === "no");
    const roll = Math.random();
    if (live.length < 5 || roll < 0.5) {
      const name = `cm-${++this.n}`;
      const e: Entry = { created: false, acked: [], tried: 0, deleted: "no" };
      this.entries.set(name, e);
      const r = await call(this.api, "POST", this.path(), {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name },
        data: { counter: "0" },
      });
      if (r.status === 201) {
        e.created = true;
        e.acked.push({ rv: Number(r.json.metadata.resourceVersion), counter: 0 });
        this.acked++;
      } else if (r.status === 0 || r.status >= 500) {
        e.created = true; // maybe: it may exist
        e.deleted = "maybe";
        this.unanswered++;
      } else this.entries.delete(name);
      return;
    }
    const [name, e] = live[Math.floor(Math.random() * live.length)];
    if (roll < 0.85) {
      const counter = ++e.tried;
      const r = await call(this.api, "PATCH", this.path(name), { data: { counter: String(counter) } });
      if (r.status === 200) {
        e.acked.push({ rv: Number(r.json.metadata.resourceVersion), counter });
        this.acked++;
      } else if (r.status === 0 || r.status >= 500) this.unanswered++;
    } else {
      const r = await call(this.api, "DELETE", this.path(name));
      if (r.status === 200) {
        e.deleted = "acked";
        this.acked++;
      } else if (r.status === 0 || r.status >= 500) {
        e.deleted = "maybe";
        this.unanswered++;
      }
    }
  }

  start(perSecond = 8) {
    this.done = (async () => {
      while (!this.stopped) {
        const t0 = Date.now();
        await this.one();
        await sleep(Math.max(0, 1000 / perSecond - (Date.now() - t0)));
      }
    })();
  }
  async stop() {
    this.stopped = true;
    await this.done;
  }

  /** The highest acknowledged resourceVersion. */
  lastRv(): number {
    let rv = 0;
    for (const e of this.entries.values()) for (const a of e.acked) rv = Math.max(rv, a.rv);
    return rv;
  }

  /** Acknowledged writes the store no longer has: a description of each. */
  async lost(): Promise<string[]> {
    const lost: string[] = [];
    for (const [name, e] of this.entries) {
      if (!e.acked.length && e.deleted !== "acked") continue;
      const r = await call(this.api, "GET", this.path(name));
      if (e.deleted === "acked") {
        if (r.status !== 404) lost.push(`${name}: deleted (acknowledged) but answers ${r.status}`);
        continue;
      }
      if (e.deleted === "maybe") continue;
      if (r.status !== 200) {
        lost.push(`${name}: created (acknowledged) but answers ${r.status}`);
        continue;
      }
      const counter = Number(r.json.data?.counter);
      const last = e.acked[e.acked.length - 1].counter;
      if (!(counter >= last && counter <= e.tried))
        lost.push(`${name}: counter ${counter}, acknowledged ${last}, last sent ${e.tried}`);
    }
    return lost;
  }
}

/** One watch, re-opened from the last resourceVersion it saw whenever it ends. */
class Watch {
  last: number;
  /** resourceVersions of the events it saw, in order */
  readonly seen: number[] = [];
  readonly violations: string[] = [];
  reopened = 0;
  expired = 0;
  private req?: http.ClientRequest;
  private stopped = false;
  constructor(
    readonly api: Api,
    readonly path: string,
    readonly from: number,
    readonly id: number,
  ) {
    this.last = from;
  }

  open() {
    if (this.stopped) return;
    const url = new URL(
      `${this.api.url}${this.path}?watch=1&allowWatchBookmarks=true&resourceVersion=${this.last}&timeoutSeconds=${20 + Math.floor(Math.random() * 40)}`,
    );
    const again = (ms: number) => {
      this.req = undefined;
      if (this.stopped) return;
      this.reopened++;
      setTimeout(() => this.open(), ms);
    };
    const req = http.get(
      url,
      { agent: false, headers: { authorization: `Bearer ${this.api.token}` } },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return again(500);
        }
        let buf = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          buf += chunk;
          let i: number;
          while ((i = buf.indexOf("\n")) >= 0) {
            const line = buf.slice(0, i).trim();
            buf = buf.slice(i + 1);
            if (line) this.event(line);
          }
        });
        res.on("end", () => again(100));
        res.on("error", () => again(500));
      },
    );
    req.on("error", () => again(500));
    this.req = req;
  }

  private event(line: string) {
    let e: { type: string; object: any };
    try {
      e = JSON.parse(line);
    } catch {
      this.violations.push(`watch ${this.id}: unreadable line ${line.slice(0, 80)}`);
      return;
    }
    if (e.type === "ERROR") {
      // 410 Gone: the watch would have to re-list, and events between would be lost to it
      if (e.object?.code === 410) this.expired++;
      this.violations.push(
        `watch ${this.id}: ERROR ${e.object?.code} ${e.object?.message ?? ""} after ${this.last}`,
      );
      this.req?.destroy();
      return;
    }
    const rv = Number(e.object?.metadata?.resourceVersion);
    if (e.type === "BOOKMARK") {
      if (rv < this.last) this.violations.push(`watch ${this.id}: bookmark ${rv} after ${this.last}`);
      else this.last = rv;
      return;
    }
    if (!(rv > this.last))
      this.violations.push(
        `watch ${this.id}: ${e.type} ${e.object?.metadata?.name} at ${rv} after ${this.last}`,
      );
    else {
      this.seen.push(rv);
      this.last = rv;
    }
  }

  stop() {
    this.stopped = true;
    this.req?.destroy();
  }
}

export class Watches {
  readonly watches: Watch[] = [];
  constructor(
    readonly api: Api,
    readonly path: string,
    readonly from: number,
    count: number,
  ) {
    for (let i = 0; i < count; i++) this.watches.push(new Watch(api, path, from, i));
  }
  start() {
    for (const w of this.watches) w.open();
  }
  stop() {
    for (const w of this.watches) w.stop();
  }
  /** Waits until every watch has seen `rv` (or `ms` passed). */
  async caughtUp(rv: number, ms: number) {
    const end = Date.now() + ms;
    while (Date.now() < end && this.watches.some((w) => w.last < rv)) await sleep(200);
  }
  reopened() {
    return this.watches.reduce((n, w) => n + w.reopened, 0);
  }
  /** Gaps, duplicates, disorder and expiries; each acknowledged write missing from a watch. */
  violations(writes: Writes): string[] {
    const out: string[] = [];
    const acked = [...writes.entries.values()]
      .flatMap((e) => e.acked.map((a) => a.rv))
      .filter((rv) => rv > this.from);
    for (const w of this.watches) {
      out.push(...w.violations);
      const seen = new Set(w.seen);
      const missing = acked.filter((rv) => !seen.has(rv));
      if (missing.length)
        out.push(
          `watch ${w.id}: ${missing.length} acknowledged writes never seen (first at ${Math.min(...missing)})`,
        );
    }
    return out;
  }
}

/** Bare pods created and deleted at a steady pace, on `nodeSelector`'s nodes. */
export class PodChurn {
  created = 0;
  deleted = 0;
  private stopped = false;
  private done?: Promise<void>;
  private live: { name: string; at: number }[] = [];
  private n = 0;
  constructor(
    readonly api: Api,
    readonly ns: string,
    readonly nodeSelector: Record<string, string>,
  ) {}
  start() {
    this.done = (async () => {
      while (!this.stopped) {
        const name = `churn-${++this.n}`;
        const r = await call(this.api, "POST", `/api/v1/namespaces/${this.ns}/pods`, {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name, labels: { app: "churn" } },
          spec: {
            nodeSelector: this.nodeSelector,
            terminationGracePeriodSeconds: 1,
            containers: [
              { name: "c", image: "127.0.0.1:5000/edgeplane/busybox:1", command: ["sleep", "3600"] },
            ],
          },
        });
        if (r.status === 201) {
          this.created++;
          this.live.push({ name, at: Date.now() });
        }
        for (const p of this.live.filter((p) => Date.now() - p.at > 5000)) {
          const d = await call(this.api, "DELETE", `/api/v1/namespaces/${this.ns}/pods/${p.name}`);
          if (d.status === 200 || d.status === 404) {
            this.deleted++;
            this.live = this.live.filter((x) => x !== p);
          }
        }
        await sleep(1000);
      }
    })();
  }
  async stop() {
    this.stopped = true;
    await this.done;
  }
}

export interface DeploymentSpec {
  name: string;
  replicas: number;
  nodeSelector: Record<string, string>;
}

/** Deployments kept rolling: a template change or a new scale every few seconds. */
export class Rollouts {
  rolled = 0;
  scaled = 0;
  private stopped = false;
  private done?: Promise<void>;
  constructor(
    readonly api: Api,
    readonly ns: string,
    readonly deployments: DeploymentSpec[],
  ) {}
  private path(name = "") {
    return `/apis/apps/v1/namespaces/${this.ns}/deployments${name ? `/${name}` : ""}`;
  }
  async create() {
    for (const d of this.deployments) {
      const r = await call(this.api, "POST", this.path(), {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: d.name },
        spec: {
          replicas: d.replicas,
          selector: { matchLabels: { app: d.name } },
          strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 1 } },
          template: {
            metadata: { labels: { app: d.name }, annotations: { "chaos/rev": "0" } },
            spec: {
              nodeSelector: d.nodeSelector,
              terminationGracePeriodSeconds: 1,
              containers: [
                { name: "c", image: "127.0.0.1:5000/edgeplane/busybox:1", command: ["sleep", "3600"] },
              ],
            },
          },
        },
      });
      if (r.status !== 201) throw new Error(`deployment ${d.name}: ${r.status} ${JSON.stringify(r.json)}`);
    }
  }
  start(everyMs = 4000) {
    this.done = (async () => {
      let rev = 0;
      while (!this.stopped) {
        await sleep(everyMs);
        const d = this.deployments[Math.floor(Math.random() * this.deployments.length)];
        if (Math.random() < 0.6) {
          const r = await call(this.api, "PATCH", this.path(d.name), {
            spec: { template: { metadata: { annotations: { "chaos/rev": String(++rev) } } } },
          });
          if (r.status === 200) this.rolled++;
        } else {
          const replicas = 1 + Math.floor(Math.random() * 3);
          const r = await call(this.api, "PATCH", this.path(d.name), { spec: { replicas } });
          if (r.status === 200) this.scaled++;
        }
      }
    })();
  }
  async stop() {
    this.stopped = true;
    await this.done;
  }

  /** Why each Deployment has not converged (an empty list when all have). */
  async unconverged(): Promise<string[]> {
    const out: string[] = [];
    for (const d of this.deployments) {
      const r = await call(this.api, "GET", this.path(d.name));
      if (r.status !== 200) {
        out.push(`${d.name}: ${r.status}`);
        continue;
      }
      const { metadata: m, spec, status: s = {} } = r.json;
      const want = spec.replicas;
      const ok =
        s.observedGeneration >= m.generation &&
        s.updatedReplicas === want &&
        s.replicas === want &&
        s.readyReplicas === want &&
        s.availableReplicas === want;
      if (!ok)
        out.push(
          `${d.name}: generation ${m.generation} observed ${s.observedGeneration}, want ${want}: replicas ${s.replicas} updated ${s.updatedReplicas} ready ${s.readyReplicas} available ${s.availableReplicas}`,
        );
    }
    return out;
  }

  /** ReplicaSets running more pods than they want: one line each. */
  async duplicates(): Promise<string[]> {
    const out: string[] = [];
    const rss = await call(this.api, "GET", `/apis/apps/v1/namespaces/${this.ns}/replicasets`);
    const pods = await call(this.api, "GET", `/api/v1/namespaces/${this.ns}/pods`);
    if (rss.status !== 200 || pods.status !== 200) return [`listing: ${rss.status} ${pods.status}`];
    for (const rs of rss.json.items) {
      const active = pods.json.items.filter(
        (p: any) =>
          !p.metadata.deletionTimestamp &&
          p.status?.phase !== "Failed" &&
          p.status?.phase !== "Succeeded" &&
          p.metadata.ownerReferences?.some((o: any) => o.uid === rs.metadata.uid),
      );
      if (active.length > rs.spec.replicas)
        out.push(`${rs.metadata.name}: ${active.length} pods for ${rs.spec.replicas} replicas`);
    }
    return out;
  }
}
