// The custom resources this cluster serves: the established CustomResourceDefinitions read
// from their store shard and turned into ResourceDefs (api/custom/definition.ts), kept per
// isolate for a moment and dropped when this isolate writes a CRD. A request for a resource
// the cache does not know reads the CRDs again first, so a resource is served as soon as its
// CRD is written, whichever isolate wrote it.
import { type Crd, customDefsOf } from "../api/custom/definition";
import { allResources } from "../api/registry";
import type { ResourceDef } from "../api/resource";
import { clusters } from "../api/strategies/clusters";
import { customresourcedefinitions } from "../api/strategies/customresourcedefinitions";
import { clusterNameOf } from "../durable-objects/clusters";
import type { Env } from "../durable-objects/env";
import { onStoreWrite, Store } from "../durable-objects/store/client";

const FRESH_MS = 1000;
/** A miss reads the CRDs again unless they were read this recently (a burst of 404s reads once). */
const MISS_REREAD_MS = 50;

interface Served {
  at: number;
  /** the CRD list's resourceVersion: the arrays stay the same objects while it does */
  rv: string;
  custom: ResourceDef[];
  /** built-in and custom together, for discovery (whose documents are cached per array) */
  all: ResourceDef[];
}

const served = new Map<string, Served>();
let listening = false;

async function load(env: Env): Promise<Served> {
  if (!listening) {
    listening = true;
    onStoreWrite((def) => {
      if (def === customresourcedefinitions) served.clear();
    });
  }
  const at = Date.now();
  const list = JSON.parse(await new Store(env, customresourcedefinitions).listText({}));
  const rv = String(list.metadata?.resourceVersion ?? "");
  const prev = served.get(env.EDGEPLANE_CLUSTER);
  if (prev && prev.rv === rv) {
    prev.at = at;
    return prev;
  }
  const custom = ((list.items ?? []) as Crd[]).flatMap((crd) => customDefsOf(crd));
  // Cluster objects are the root cluster's alone (docs/clusters.md)
  const builtIn = (allResources() as ResourceDef[]).filter((d) => d !== clusters || !clusterNameOf(env));
  const next: Served = { at, rv, custom, all: [...builtIn, ...custom] };
  served.set(env.EDGEPLANE_CLUSTER, next);
  return next;
}

async function current(env: Env, maxAgeMs = FRESH_MS): Promise<Served> {
  const s = served.get(env.EDGEPLANE_CLUSTER);
  if (s && Date.now() - s.at < maxAgeMs) return s;
  return load(env);
}

/** Every resource served, built-in first, then the custom ones. */
export async function servedDefs(env: Env): Promise<ResourceDef[]> {
  return (await current(env)).all;
}

const findIn = (defs: ResourceDef[], group: string, version: string, resource: string) =>
  defs.find((d) => d.group === group && d.version === version && d.resource === resource);

/** The custom resource group/version/resource served now (the caller looked among the built-in ones). */
export async function customDef(
  env: Env,
  group: string,
  version: string,
  resource: string,
): Promise<ResourceDef | undefined> {
  if (!group.includes(".")) return undefined; // a CRD's group has a dot
  const found = findIn((await current(env)).custom, group, version, resource);
  if (found) return found;
  return findIn((await current(env, MISS_REREAD_MS)).custom, group, version, resource);
}
