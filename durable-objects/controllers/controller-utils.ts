// Helpers every controller shares: owner references, pod readiness, conditions, time
// stamps and error classes. Pure functions (no runtime imports) so tests load them alone.
import { StatusError } from "../../api/errors";
import type { ResourceDef } from "../../api/resource";
import { fromLabelSelector, matches, type Selector } from "../../api/selectors";
import type { KubeObject, OwnerReference } from "../../api/types";

export function keyOf(obj: KubeObject): string {
  const ns = obj.metadata.namespace;
  return ns ? `${ns}/${obj.metadata.name}` : obj.metadata.name!;
}

export function splitKey(key: string): { namespace?: string; name: string } {
  const i = key.indexOf("/");
  return i < 0 ? { name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

/** The API path of a resource (collection, object or subresource), as the apiserver serves it. */
export function pathFor(def: ResourceDef, namespace?: string, name?: string, sub?: string): string {
  const base = def.group ? `/apis/${def.group}/${def.version}` : `/api/${def.version}`;
  const ns = def.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : "";
  let p = `${base}${ns}/${def.resource}`;
  if (name) p += `/${encodeURIComponent(name)}`;
  if (sub) p += `/${sub}`;
  return p;
}

export function isNotFound(e: unknown): boolean {
  return e instanceof StatusError && e.code === 404;
}

export function isAlreadyExists(e: unknown): boolean {
  return e instanceof StatusError && e.reason === "AlreadyExists";
}

export function isConflict(e: unknown): boolean {
  return e instanceof StatusError && e.code === 409 && e.reason === "Conflict";
}

/** A create refused because its namespace is being deleted (nothing to do: it goes anyway). */
export function isNamespaceTerminating(e: unknown): boolean {
  return e instanceof StatusError && !!e.details?.causes?.some((c) => c.type === "NamespaceTerminating");
}

/** A namespace that takes new objects: there, not being deleted, Active (or no phase yet). */
export function isNamespaceActive(ns: KubeObject | undefined): boolean {
  return !!ns && !ns.metadata.deletionTimestamp && (!ns.status?.phase || ns.status.phase === "Active");
}

/**
 * The object as the apiserver has it now (not as a cache does), undefined when it is not
 * there. `api` is a controller's client (its request method).
 */
export async function findLive(
  api: { request(method: string, path: string): Promise<any> },
  def: ResourceDef,
  namespace: string | undefined,
  name: string,
): Promise<KubeObject | undefined> {
  try {
    return (await api.request("GET", pathFor(def, namespace, name))) as KubeObject;
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/** A NotFound about this very object (it was deleted while a sync was writing to it). */
export function isGone(e: unknown, resource: string, name: string): boolean {
  return (
    e instanceof StatusError && e.code === 404 && e.details?.kind === resource && e.details?.name === name
  );
}

/** Runs a write; a NotFound (already gone) is no error for a controller. */
export async function ignoreNotFound<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

// ---- time ----

export { rfc3339, timeOf } from "../../api/time";

// ---- owners ----

export function controllerRefOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller === true);
}

export function isControlledBy(obj: KubeObject, owner: KubeObject): boolean {
  return controllerRefOf(obj)?.uid === owner.metadata.uid;
}

export function newControllerRef(owner: KubeObject, apiVersion: string, kind: string): OwnerReference {
  return {
    apiVersion,
    kind,
    name: owner.metadata.name!,
    uid: owner.metadata.uid!,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * The parsed spec.selector of a workload; null selects nothing. A ReplicationController's
 * selector is a plain map of labels (every value a string), read as matchLabels.
 */
export function selectorOf(obj: KubeObject): Selector | null {
  const sel = obj.spec?.selector;
  const map =
    sel &&
    typeof sel === "object" &&
    !Array.isArray(sel) &&
    Object.values(sel).every((v) => typeof v === "string");
  try {
    return fromLabelSelector(map ? { matchLabels: sel } : sel);
  } catch {
    return null;
  }
}

export function selects(obj: KubeObject, target: KubeObject): boolean {
  const sel = selectorOf(obj);
  return !!sel && sel.length > 0 && matches(sel, target.metadata.labels);
}

// ---- conditions ----

export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  lastUpdateTime?: string;
  lastHeartbeatTime?: string;
  lastProbeTime?: string | null;
}

/**
 * Sets a condition in a list (returns a new list). The transition time stays when the status
 * does not change; when status, reason and message are all unchanged the old entry stays.
 */
export function setCondition(list: Condition[] | undefined, c: Condition): Condition[] {
  const out = [...(list ?? [])];
  const i = out.findIndex((x) => x.type === c.type);
  if (i < 0) return [...out, c];
  const old = out[i];
  if (old.status === c.status && old.reason === c.reason && old.message === c.message) return out;
  out[i] =
    old.status === c.status && old.lastTransitionTime
      ? { ...c, lastTransitionTime: old.lastTransitionTime }
      : c;
  return out;
}

export function removeCondition(list: Condition[] | undefined, type: string): Condition[] {
  return (list ?? []).filter((c) => c.type !== type);
}

export function getCondition(list: Condition[] | undefined, type: string): Condition | undefined {
  return list?.find((c) => c.type === type);
}

// ---- int-or-percent ----

/** Resolves an IntOrString against a total (upstream GetScaledValueFromIntOrPercent). */
export function scaledValue(v: number | string | undefined | null, total: number, roundUp: boolean): number {
  if (v === undefined || v === null) return 0;
  if (typeof v === "number") return v;
  const m = /^(-?\d+)%$/.exec(v);
  if (!m) {
    const n = Number(v);
    if (Number.isInteger(n)) return n;
    throw new Error(`invalid value for IntOrString: invalid value "${v}"`);
  }
  const x = (Number(m[1]) * total) / 100;
  return roundUp ? Math.ceil(x) : Math.floor(x);
}

/** Deep equality of JSON values (key order does not matter). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  return stableStringify(a) === stableStringify(b);
}

/** JSON with object keys sorted, dropping undefined values: a canonical form for hashing. */
export function stableStringify(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v) ?? "null";
  if (Array.isArray(v)) return `[${v.map((x) => (x === undefined ? "null" : stableStringify(x))).join(",")}]`;
  const keys = Object.keys(v as object)
    .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stableStringify((v as Record<string, unknown>)[k])}`).join(",")}}`;
}
