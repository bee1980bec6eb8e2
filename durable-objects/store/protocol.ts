// What the apiserver Worker and a store shard say to each other over RPC.

import type { PrinterColumn } from "../../api/custom/definition";
import type { Status } from "../../api/errors";
import type { IncludeObject } from "../../api/table";

export interface ListQuery {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  resourceVersionMatch?: string;
  /** when set, the body is a meta.k8s.io/v1 Table */
  /** columns: a custom resource's printer columns (api/custom/definition.ts tableDef) */
  table?: { include: IncludeObject; columns?: PrinterColumn[] };
}

export interface WatchQuery {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  allowWatchBookmarks?: boolean;
  timeoutSeconds?: number;
  sendInitialEvents?: boolean;
  /** columns: a custom resource's printer columns (api/custom/definition.ts tableDef) */
  table?: { include: IncludeObject; columns?: PrinterColumn[] };
  /** the resource key whose shape events are shown in, when it is stored in another's shard */
  view?: string;
  /** the front door's id for this watch: its events may go out on the shard's relay (relay.ts) */
  relay?: number;
}

export interface WriteOptions {
  dryRun?: boolean;
  /** a create in a cluster with an object limit (docs/clusters.md) */
  limit?: ObjectLimit;
}

/** A cluster's object limits as a create brings them to the shard (store/counts.ts). */
export interface ObjectLimit {
  /** the Cluster's name, shown in the refusal */
  cluster: string;
  /** spec.limits.objects, when set */
  objects?: number;
  /** the objects of the cluster's other shards, as last published in its status */
  others: number;
  /**
   * a resource spread over shards (shard-plan.ts): its own count as last published, all its
   * shards together; the shard takes its own last report out and its live count in
   */
  ownPublished?: number;
  /** spec.limits' count/<resource> for the shard's resource, when set: its objects alone */
  resource?: { name: string; limit: number };
}

export interface UpdateOptions extends WriteOptions {
  /** the resourceVersion the caller read; the update fails with 409 if the object moved on */
  expectRV?: string;
}

export interface DeleteOptions extends WriteOptions {
  gracePeriodSeconds?: number;
  propagationPolicy?: "Orphan" | "Background" | "Foreground";
  preconditions?: { uid?: string; resourceVersion?: string };
  /**
   * A collection's deletion only: the objects admission let go, "namespace/name" -> uid. Any
   * other the query selects (created since admission looked, or replaced by one of the same
   * name) is left alone.
   */
  admitted?: Record<string, string>;
}

/** Bodies cross RPC as JSON text: one parse at the edge, none in between. */
export type Answer = { ok: true; body: string; code?: number };
export type Reply = Answer | { ok: false; status: Status };
/** A list as a stream of its JSON (list-stream.ts). */
export type StreamReply = { ok: true; stream: ReadableStream<Uint8Array> } | { ok: false; status: Status };

/** A create the Worker encoded itself (see prepared.ts): the shard only fills in the revision. */
export interface PreparedCreate {
  /** the object's JSON; its metadata.resourceVersion is `rvMark` */
  json: string;
  rvMark: string;
  namespace: string;
  name: string;
  uid: string;
  labels: Record<string, string>;
  /** the resource's selectable fields of the object (fields.ts) */
  fields: Record<string, string>;
}

/**
 * An update the Worker encoded against the stored object it read (see prepared.ts): it
 * applies only while that is still the stored revision, which the shard checks.
 */
export interface PreparedUpdate extends PreparedCreate {
  /** the revision the Worker read the object at */
  expectRV: string;
  /** it changes nothing: the answer is the stored object, at its revision */
  unchanged: boolean;
  /** it leaves a deleted object no finalizer and no grace period: the object goes */
  remove: boolean;
}
