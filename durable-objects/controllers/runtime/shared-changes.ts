// Change events decoded once per isolate. The controllers and the scheduler both pull the
// changes of pods, nodes and storage from the same shards, and locally (workerd) every
// Durable Object runs in one isolate: each pod event was parsed, lightened and pooled once
// per component. The first puller's decoded object is kept here until the resource's other
// subscribers (SUBSCRIPTIONS) have taken it, so they share one object. On Cloudflare each
// object has an isolate of its own and nothing is shared: entries then leave by the bound.
//
// Shared objects are read only, as upstream's informer caches are: a component that wants to
// change a cached object copies it first.
import type { KubeObject } from "../../../api/types";
import { SUBSCRIPTIONS } from "./subscriptions";

interface Entry {
  obj: KubeObject;
  /** subscribers still to take it */
  left: number;
}

/** Decoded events not yet taken by every subscriber, by their JSON (FIFO-bounded). */
const pending = new Map<string, Entry>();
const MAX_PENDING = 1024;

/**
 * The object of a change event's JSON `data` of resource `res`. `prepare` runs on a freshly
 * parsed object only (lighten, pool its strings); `shared` says whether the object came
 * prepared from another subscriber.
 */
export function decodeChange(
  res: string,
  data: string,
  prepare: (obj: KubeObject) => void,
): { obj: KubeObject; prepared: boolean } {
  const readers = SUBSCRIPTIONS[res]?.length ?? 1;
  if (readers < 2) return { obj: JSON.parse(data) as KubeObject, prepared: false };
  const hit = pending.get(data);
  if (hit) {
    if (--hit.left <= 0) pending.delete(data);
    return { obj: hit.obj, prepared: true };
  }
  const obj = JSON.parse(data) as KubeObject;
  prepare(obj);
  pending.set(data, { obj, left: readers - 1 });
  if (pending.size > MAX_PENDING) pending.delete(pending.keys().next().value as string);
  return { obj, prepared: true };
}

/** Entries waiting for a subscriber (tests). */
export function pendingChanges(): number {
  return pending.size;
}
