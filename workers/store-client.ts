// Reaching a store shard: one Durable Object per (cluster, resource), named so.
import { StatusError } from "../api/errors";
import { resourceKey } from "../api/registry";
import type { ResourceDef } from "../api/resource";
import type { KubeObject } from "../api/types";
import type {
  DeleteOptions,
  ListQuery,
  Reply,
  UpdateOptions,
  WatchQuery,
  WriteOptions,
} from "../durable-objects/store/protocol";
import type { Env } from "./env";

function unwrap(r: Reply): string {
  if (!r.ok) throw StatusError.fromStatus(r.status);
  return r.body;
}

/** Called after every successful write through a Store, e.g. to drop caches of that resource. */
const writeListeners = new Set<(def: ResourceDef) => void>();

export function onStoreWrite(fn: (def: ResourceDef) => void): void {
  writeListeners.add(fn);
}

function wrote(def: ResourceDef): void {
  for (const fn of writeListeners) fn(def);
}

/** A typed handle on one resource's shard. */
export class Store {
  readonly key: string;
  private readonly stub: DurableObjectStub<import("../durable-objects/store/shard").StoreShard>;

  constructor(
    env: Env,
    readonly def: ResourceDef,
  ) {
    this.key = resourceKey(def);
    this.stub = env.STORE.get(env.STORE.idFromName(`${env.EDGEPLANE_CLUSTER}/${this.key}`));
  }

  async getText(namespace: string, name: string): Promise<string> {
    return unwrap(await this.stub.get(this.key, namespace, name));
  }

  async get(namespace: string, name: string): Promise<KubeObject> {
    return JSON.parse(await this.getText(namespace, name));
  }

  /** The object, or undefined when it does not exist. */
  async find(namespace: string, name: string): Promise<KubeObject | undefined> {
    const r = await this.stub.get(this.key, namespace, name);
    if (!r.ok) {
      if (r.status.code === 404) return undefined;
      throw StatusError.fromStatus(r.status);
    }
    return JSON.parse(r.body);
  }

  async listText(q: ListQuery): Promise<string> {
    return unwrap(await this.stub.list(this.key, q));
  }

  async create(obj: KubeObject, opts: WriteOptions = {}): Promise<{ body: string; code: number }> {
    const r = await this.stub.create(this.key, obj, opts);
    const body = unwrap(r);
    wrote(this.def);
    return { body, code: (r.ok && r.code) || 201 };
  }

  async update(obj: KubeObject, opts: UpdateOptions = {}): Promise<string> {
    const body = unwrap(await this.stub.update(this.key, obj, opts));
    wrote(this.def);
    return body;
  }

  async remove(
    namespace: string,
    name: string,
    opts: DeleteOptions = {},
  ): Promise<{ body: string; code: number }> {
    const r = await this.stub.remove(this.key, namespace, name, opts);
    const body = unwrap(r);
    wrote(this.def);
    return { body, code: (r.ok && r.code) || 200 };
  }

  async removeCollection(q: ListQuery, opts: DeleteOptions = {}): Promise<string> {
    const body = unwrap(await this.stub.removeCollection(this.key, q, opts));
    wrote(this.def);
    return body;
  }

  async watch(query: WatchQuery, signal?: AbortSignal): Promise<Response> {
    return this.stub.fetch("https://store/watch", {
      method: "POST",
      body: JSON.stringify({ res: this.key, query }),
      signal,
    });
  }

  /** A watch over a hibernatable WebSocket held by the shard; the response is its 101. */
  async watchSocket(query: WatchQuery): Promise<Response> {
    return this.stub.fetch("https://store/watch", {
      headers: { upgrade: "websocket", "x-watch": JSON.stringify({ res: this.key, query }) },
    });
  }

  async compactNow(): Promise<number> {
    return this.stub.compactNow();
  }
}
