// What the node's network parts know of the cluster: caches of Services, EndpointSlices,
// Pods, Namespaces, NetworkPolicies and Nodes, each filled by a list-and-watch informer
// (agent/lib/informer.ts). Every change bumps a version and tells the listeners which kind
// changed; readers (the proxier, the DNS server, the Service environment) read the caches.
import { Informer, type WatchClient } from "../lib/informer";
import { keyOf } from "./types";

export type Kind = "services" | "endpointslices" | "pods" | "namespaces" | "networkpolicies" | "nodes";

const PATHS: Record<Kind, string> = {
  services: "/api/v1/services",
  endpointslices: "/apis/discovery.k8s.io/v1/endpointslices",
  pods: "/api/v1/pods",
  namespaces: "/api/v1/namespaces",
  networkpolicies: "/apis/networking.k8s.io/v1/networkpolicies",
  nodes: "/api/v1/nodes",
};

export class ClusterState {
  readonly caches = new Map<Kind, Map<string, any>>();
  /** bumped on every change of any kind */
  version = 0;
  readonly versions = new Map<Kind, number>();
  private readonly informers: Informer[] = [];
  private readonly listeners: ((kind: Kind, obj?: any) => void)[] = [];
  readonly synced: Promise<void>;

  constructor(
    client: WatchClient,
    kinds: Kind[],
    onError: (m: string) => void,
    /** extra list/watch query per kind (e.g. a field selector) */
    queries: Partial<Record<Kind, Record<string, string>>> = {},
  ) {
    for (const kind of kinds) {
      const cache = new Map<string, any>();
      this.caches.set(kind, cache);
      this.versions.set(kind, 0);
      this.informers.push(
        new Informer(
          client,
          PATHS[kind],
          queries[kind] ?? {},
          {
            onList: (items) => {
              cache.clear();
              for (const o of items) cache.set(keyOf(o), o);
              this.changed(kind);
            },
            onEvent: (type, obj) => {
              if (type === "DELETED") cache.delete(keyOf(obj));
              else cache.set(keyOf(obj), obj);
              this.changed(kind, obj);
            },
          },
          onError,
        ),
      );
    }
    this.synced = Promise.all(this.informers.map((i) => i.synced)).then(() => {});
  }

  start(): void {
    for (const i of this.informers) i.start();
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.stop()));
  }

  onChange(fn: (kind: Kind, obj?: any) => void): void {
    this.listeners.push(fn);
  }

  list<T = any>(kind: Kind): IterableIterator<T> {
    return (this.caches.get(kind) ?? new Map()).values();
  }

  get<T = any>(kind: Kind, key: string): T | undefined {
    return this.caches.get(kind)?.get(key);
  }

  private changed(kind: Kind, obj?: any): void {
    this.version++;
    this.versions.set(kind, (this.versions.get(kind) ?? 0) + 1);
    for (const fn of this.listeners) fn(kind, obj);
  }
}
