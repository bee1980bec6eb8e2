// What the node's network parts know of the cluster: caches of Services, EndpointSlices,
// Pods, Namespaces, NetworkPolicies and Nodes, each filled by a list-and-watch informer
// (agent/lib/informer.ts). Every change bumps a version and tells the listeners which kind
// changed; readers (the proxier, the DNS server, the Service environment) read the caches.
import { Informer, type WatchClient } from "../lib/informer";
import { asApiBody } from "../lib/kube-types";
import {
  type EndpointSlice,
  keyOf,
  type Namespace,
  type NetworkPolicy,
  type Node,
  type Pod,
  type Service,
} from "./types";

/** The object each cache holds. */
export interface KindObjects {
  services: Service;
  endpointslices: EndpointSlice;
  pods: Pod;
  namespaces: Namespace;
  networkpolicies: NetworkPolicy;
  nodes: Node;
}

export type Kind = keyof KindObjects;
export type ClusterObject = KindObjects[Kind];

/**
 * A listed or watched item as the object its informer serves: the apiserver answers a kind's
 * path with objects of that kind, so only that it is an object is checked here.
 */
function objectOf(v: unknown): ClusterObject | undefined {
  return asApiBody(v) as ClusterObject | undefined;
}

const PATHS: Record<Kind, string> = {
  services: "/api/v1/services",
  endpointslices: "/apis/discovery.k8s.io/v1/endpointslices",
  pods: "/api/v1/pods",
  namespaces: "/api/v1/namespaces",
  networkpolicies: "/apis/networking.k8s.io/v1/networkpolicies",
  nodes: "/api/v1/nodes",
};

export class ClusterState {
  readonly caches = new Map<Kind, Map<string, ClusterObject>>();
  /** bumped on every change of any kind */
  version = 0;
  readonly versions = new Map<Kind, number>();
  private readonly informers: Informer[] = [];
  private readonly listeners: ((kind: Kind, obj?: ClusterObject) => void)[] = [];
  readonly synced: Promise<void>;

  constructor(
    client: WatchClient,
    kinds: Kind[],
    onError: (m: string) => void,
    /** extra list/watch query per kind (e.g. a field selector) */
    queries: Partial<Record<Kind, Record<string, string>>> = {},
  ) {
    for (const kind of kinds) {
      const cache = new Map<string, ClusterObject>();
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
              for (const item of items) {
                const o = objectOf(item);
                if (o) cache.set(keyOf(o), o);
              }
              this.changed(kind);
            },
            onEvent: (type, item) => {
              const obj = objectOf(item);
              if (!obj) return;
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

  onChange(fn: (kind: Kind, obj?: ClusterObject) => void): void {
    this.listeners.push(fn);
  }

  list<K extends Kind>(kind: K): IterableIterator<KindObjects[K]> {
    // each cache holds its own kind's objects (the constructor fills it from that kind's path)
    return ((this.caches.get(kind) ?? new Map()) as Map<string, KindObjects[K]>).values();
  }

  get<K extends Kind>(kind: K, key: string): KindObjects[K] | undefined {
    return this.caches.get(kind)?.get(key) as KindObjects[K] | undefined;
  }

  private changed(kind: Kind, obj?: ClusterObject): void {
    this.version++;
    this.versions.set(kind, (this.versions.get(kind) ?? 0) + 1);
    for (const fn of this.listeners) fn(kind, obj);
  }
}
