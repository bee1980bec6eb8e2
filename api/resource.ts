// What the generic registry knows about one resource: its names for discovery,
// its subresources, and its strategy (defaulting, validation, table columns,
// selectable fields). One ResourceDef per resource; no per-resource handlers.

import type { StatusCause } from "./errors";
import type { KubeObject } from "./types";
import type { UserInfo } from "./user";

export interface TableColumn {
  name: string;
  type: "string" | "integer" | "number" | "boolean" | "date";
  format?: string;
  description: string;
  /** 0 = always shown; 1 = only with -o wide */
  priority: number;
  cell: (obj: KubeObject, now: number) => unknown;
}

export interface ResourceStrategy {
  /** Upstream's SetDefaults for the kind; mutates obj. Runs on create, update and patch results. */
  defaults?(obj: KubeObject): void;
  /**
   * Field validation beyond the schema; returns one cause per bad field (empty = valid). `warn`
   * takes what is let through with a warning (a custom resource's ratcheted rules).
   */
  validate?(obj: KubeObject, old?: KubeObject, warn?: (message: string) => void): StatusCause[];
  /** An update through a subresource with rules of its own (pods/ephemeralcontainers), in place of validate. */
  validateSubresource?: Record<string, (obj: KubeObject, old: KubeObject) => StatusCause[]>;
  /** Columns for `kubectl get` (Table). NAME is added by the registry when absent. */
  columns?: TableColumn[];
  /** Values of the fields a field selector may name (metadata.name/namespace are always there). */
  fields?(obj: KubeObject): Record<string, string>;
  /**
   * A delete that names no propagation policy orphans the dependents (upstream keeps this for
   * batch/v1 Jobs), and says so in this warning.
   */
  orphanByDefault?: string;
  /** Warnings a create answers with (upstream's WarningsOnCreate), e.g. a deprecated annotation. */
  warningsOnCreate?(obj: KubeObject): string[];
  /** Whether spec changes bump metadata.generation (true for most kinds with a spec). */
  generation?: boolean;
  /** Adjust a status subresource update against the stored object (e.g. a phase's transition time). */
  prepareForStatusUpdate?(obj: KubeObject, old: KubeObject): void;
  /**
   * Other subresources whose body is the object itself, served like status (a
   * CertificateSigningRequest's approval): each adjusts the update (the stored object with
   * the status the client sent) against the stored object.
   */
  prepareForSubresourceUpdate?: Record<string, (obj: KubeObject, old: KubeObject) => void>;
  /**
   * Drops the fields the kind's schema does not declare and returns their paths
   * (a custom resource's pruning); fieldValidation decides what the client hears of them.
   */
  prune?(obj: KubeObject): string[];
  /** What a generation counts changes of, when not spec (a custom resource: all but metadata and status). */
  generationOf?(obj: KubeObject): unknown;
  /**
   * What the first DELETE adds to the object besides its deletionTimestamp (a CRD: the
   * finalizer that holds it until its objects are gone, and its Terminating condition).
   */
  markForDeletion?(obj: KubeObject): void;
  /**
   * Prepare a new object before it is stored (e.g. a pod's status.phase = Pending). `user` is
   * who asked, as upstream's strategies read it from the request's context (a
   * CertificateSigningRequest records its requester); absent for objects the server makes itself.
   */
  prepareForCreate?(obj: KubeObject, user?: UserInfo): void;
  /** Prepare an update of the main resource from the stored object, before defaulting. */
  prepareForUpdate?(obj: KubeObject, old: KubeObject): void;
  /** Values no two objects of the resource may hold, handed out by the store shard. */
  allocator?: Allocator;
  /**
   * Objects expire this long after their last write (upstream's --event-ttl for Events): the
   * seconds are read from the named Worker variable, else the default.
   */
  ttl?: { variable: string; defaultSeconds: number };
}

export interface AllocatorContext {
  /** whether another object of the resource holds this key */
  taken(key: string): boolean;
  /** the deployment's settings (ranges to allocate from) */
  env: Record<string, string | undefined>;
}

/**
 * Runs in the store shard, in the same step as the write: fills in the values the object
 * lacks and checks the ones it asks for (one cause per value that cannot be had).
 */
export interface Allocator {
  /** the keys a stored object holds, e.g. "ip:10.96.0.10" (env: the deployment's settings) */
  held(obj: KubeObject, env?: Record<string, string | undefined>): string[];
  allocate(obj: KubeObject, old: KubeObject | undefined, ctx: AllocatorContext): StatusCause[];
}

export interface SubresourceDef {
  /** the kind served at this subresource, e.g. Scale, Binding, Pod */
  kind: string;
  group?: string;
  version?: string;
  verbs: string[];
}

export interface ResourceDef {
  group: string;
  version: string;
  /** plural, lower case: pods */
  resource: string;
  kind: string;
  listKind: string;
  singular: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  verbs: string[];
  subresources?: Record<string, SubresourceDef>;
  strategy: ResourceStrategy;
  /** Upstream serves the resource as deprecated: each answer warns with this text. */
  deprecation?: string;
  /** Served from another resource's store in another shape (events.k8s.io Events are core Events). */
  storedIn?: StorageView;
  /** A custom resource (api/custom): what its CustomResourceDefinition says beyond the above. */
  custom?: CustomInfo;
}

/** What a custom resource's def carries from its CustomResourceDefinition. */
export interface CustomInfo {
  /** the name the store shard is called with: it rebuilds the def from it (api/custom/key.ts) */
  storeKey: string;
  /** how a watch names this version's view, when it is one (api/custom/key.ts: customViewKey) */
  viewKey?: string;
  /** the selectable fields' JSON paths the store computes values of (every version's) */
  selectable?: string[];
  /** the field selector labels this version accepts (the Worker's defs; api/custom/selectable.ts) */
  fieldLabels?: string[];
  /** the scale subresource's paths into the object, when the version has one */
  scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
  /** its CRD is being deleted: the objects are still served, but none is created */
  terminating?: boolean;
  /** the printer columns of its tables (the Worker's defs), sent to the shard with a table query */
  columns?: import("./custom/definition").PrinterColumn[];
  /** OpenAPI definition ids of the kind and its list, and their schemas (the Worker's defs) */
  openapi?: { id: string; listId: string; schemas: Record<string, Record<string, unknown>> };
}

/** One stored resource seen through another API group's shape, as upstream's conversion does. */
export interface StorageView {
  /** the resource key ("/events") whose store shard holds the objects */
  key: string;
  toStorage(obj: KubeObject): KubeObject;
  fromStorage(obj: KubeObject): KubeObject;
  /** field selector names of this shape -> the stored resource's */
  fieldLabels: Record<string, string>;
  /** fromStorage changes what a table's cells show: a list's table is drawn from its objects */
  redraws?: boolean;
}

export const STANDARD_VERBS = [
  "create",
  "delete",
  "deletecollection",
  "get",
  "list",
  "patch",
  "update",
  "watch",
];

export function apiVersionOf(def: { group: string; version: string }): string {
  return def.group ? `${def.group}/${def.version}` : def.version;
}
