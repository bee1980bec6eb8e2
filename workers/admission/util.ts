// Small helpers shared by the admission plugins: reading other objects, forbidden messages
// in upstream's words, walking a pod's containers, and quantity arithmetic.
import { forbidden, qualifiedResource, type StatusError } from "../../api/errors";
import { parseQuantity } from "../../api/quantity";
import { lookupGVR } from "../../api/registry";
import type { ResourceDef } from "../../api/resource";
import { isObject } from "../../api/strategies/common";
import type { KubeObject } from "../../api/types";
import type { Env } from "../../durable-objects/env";
import { onStoreWrite, Store } from "../../durable-objects/store/client";
import type { AdmissionAttributes } from "./index";

/** The strategies' isObject, by the name the admission plugins use. */
export const isObj = isObject;

export function coreDef(resource: string): ResourceDef {
  return lookupGVR("", "v1", resource)!;
}

/** Every object of a resource in one namespace (without one: all of them, e.g. of a cluster-scoped kind). */
export async function listIn(env: Env, def: ResourceDef, namespace?: string): Promise<KubeObject[]> {
  const text = await new Store(env, def).listText(namespace === undefined ? {} : { namespace });
  return (JSON.parse(text).items ?? []) as KubeObject[];
}

/**
 * The name a request is about, as upstream's admission attributes give it: the URL's (a
 * subresource, an update, a delete), else the object's (a create), else its generateName.
 * Options objects (a CONNECT's PodExecOptions) have no metadata at all.
 */
export function admissionName(a: AdmissionAttributes): string {
  const meta = (a.object ?? a.old)?.metadata as KubeObject["metadata"] | undefined;
  return a.w.info.name || meta?.name || meta?.generateName || "";
}

/** admission.NewForbidden: `pods "x" is forbidden: <why>`, a 403. */
export function admissionForbidden(a: AdmissionAttributes, why: string): StatusError {
  const name = admissionName(a);
  return forbidden(`${qualifiedResource(a.w.def)} "${name}" is forbidden: ${why}`, {
    name,
    group: a.w.def.group || undefined,
    kind: a.w.def.resource,
  });
}

/** True for the main resource of core/v1 `resource` (no subresource). */
export function isCore(a: AdmissionAttributes, resource: string): boolean {
  return a.w.def.group === "" && a.w.def.resource === resource && !a.w.info.subresource;
}

export interface ContainerRef {
  c: Record<string, any>;
  /** "container", "init container" or "ephemeral container", as upstream's messages say */
  kind: string;
}

export function podContainers(spec: any, withEphemeral = true): ContainerRef[] {
  const out: ContainerRef[] = [];
  for (const c of Array.isArray(spec?.initContainers) ? spec.initContainers : [])
    if (isObj(c)) out.push({ c, kind: "init container" });
  for (const c of Array.isArray(spec?.containers) ? spec.containers : [])
    if (isObj(c)) out.push({ c, kind: "container" });
  if (withEphemeral)
    for (const c of Array.isArray(spec?.ephemeralContainers) ? spec.ephemeralContainers : [])
      if (isObj(c)) out.push({ c, kind: "ephemeral container" });
  return out;
}

/** A quantity's value, 0 when missing or unparsable. */
export const qty = (v: unknown): number => parseQuantity(v) ?? 0;

/** A base-unit value printed as a quantity: cpu-like in cores/millicores, else with binary suffixes. */
export function formatQuantity(resource: string, value: number): string {
  if (Number.isInteger(value) && !/cpu/.test(resource)) {
    for (const [s, m] of [
      ["Ti", 2 ** 40],
      ["Gi", 2 ** 30],
      ["Mi", 2 ** 20],
      ["Ki", 2 ** 10],
    ] as const)
      if (value !== 0 && value % m === 0) return `${value / m}${s}`;
    return String(value);
  }
  if (Number.isInteger(value)) return String(value);
  const milli = Math.round(value * 1000);
  return milli % 1000 === 0 ? String(milli / 1000) : `${milli}m`;
}

/** Plugin enablement, as upstream's --enable-admission-plugins/--disable-admission-plugins in one
 * variable: EDGEPLANE_ADMISSION_PLUGINS="SecurityContextDeny,-PodSecurity" enables the first and
 * disables the second; a name alone or with "+" enables it. Unlisted plugins keep their default. */
export function pluginSwitches(value: string | undefined): Map<string, boolean> {
  const m = new Map<string, boolean>();
  for (const raw of (value ?? "").split(",")) {
    const t = raw.trim();
    if (!t) continue;
    if (t.startsWith("-")) m.set(t.slice(1).trim(), false);
    else m.set(t.replace(/^\+/, "").trim(), true);
  }
  return m;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Reads cached per isolate for a moment, dropped whenever this isolate writes that resource.
 * Only settled values are shared: a promise from another request's I/O must not be awaited
 * (workerd cancels it as hung). */
const CACHE_TTL_MS = 1000;
/** Cached values as JSON: parsing a copy of a small object is cheaper than structuredClone. */
const cache = new Map<string, { at: number; def: ResourceDef; json: string | undefined }>();
let listening = false;
/** Writes seen per resource: a load that overlapped a write is not cached. */
const writes = new Map<ResourceDef, number>();

/** For tests: forget every cached read. */
export function clearReadCache(): void {
  cache.clear();
}

export async function cachedRead<T>(
  env: Env,
  def: ResourceDef,
  key: string,
  load: () => Promise<T>,
): Promise<T> {
  if (!listening) {
    listening = true;
    onStoreWrite((written) => {
      writes.set(written, (writes.get(written) ?? 0) + 1);
      for (const [k, e] of cache) if (e.def === written) cache.delete(k);
    });
  }
  const full = `${env.EDGEPLANE_CLUSTER}/${def.group}/${def.resource}/${key}`;
  const hit = cache.get(full);
  if (hit && Date.now() - hit.at < CACHE_TTL_MS)
    return (hit.json === undefined ? undefined : JSON.parse(hit.json)) as T;
  const at = Date.now();
  const seen = writes.get(def) ?? 0;
  const value = await load();
  if ((writes.get(def) ?? 0) === seen) cache.set(full, { at, def, json: JSON.stringify(value) });
  return value;
}

/** listIn through the cache. */
export const cachedListIn = (env: Env, def: ResourceDef, namespace?: string) =>
  cachedRead(env, def, namespace === undefined ? "list*" : `list:${namespace}`, () =>
    listIn(env, def, namespace),
  );
