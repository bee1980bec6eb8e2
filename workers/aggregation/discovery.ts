// Aggregated groups in discovery: /apis (APIGroupList and the aggregated apidiscovery.k8s.io
// v2 list kubectl 1.32 reads) and /apis/<group> list the group/versions of Available
// APIServices that name a Service, with the resources each backend lists at
// /apis/<group>/<version> (fetched through the node tunnel as the aggregator, kept a few
// seconds per isolate). A backend that does not answer is left out until it does.
import { discoveryPath } from "../../api/apiservice-backend";
import type { ResourceDef } from "../../api/resource";
import { type APIService, apiservices, isAvailable } from "../../api/strategies/apiservices";
import type { UserInfo } from "../../api/user";
import type { Env } from "../../durable-objects/env";
import { Store } from "../../durable-objects/store/client";
import { forward } from "./proxy";

const FRESH_MS = 10_000;
/** who the aggregator asks backends as (upstream: system:kube-aggregator in system:masters) */
const AGGREGATOR: UserInfo = { name: "system:kube-aggregator", uid: "", groups: ["system:masters"] };

interface APIResource {
  name?: string;
  singularName?: string;
  namespaced?: boolean;
  kind?: string;
  verbs?: string[];
  shortNames?: string[];
  categories?: string[];
}

/** A backend's APIResourceList as ResourceDefs for the discovery documents (never served here). */
export function defsFromResourceList(group: string, version: string, list: unknown): ResourceDef[] {
  const resources = ((list as { resources?: APIResource[] })?.resources ?? []).filter(
    (r) => typeof r?.name === "string" && r.name && typeof r.kind === "string",
  );
  const defs: ResourceDef[] = [];
  for (const r of resources) {
    const [base, sub] = r.name!.split("/");
    if (sub) {
      const parent = defs.find((d) => d.resource === base);
      if (parent)
        parent.subresources = { ...parent.subresources, [sub]: { kind: r.kind!, verbs: r.verbs ?? [] } };
      continue;
    }
    defs.push({
      group,
      version,
      resource: base,
      kind: r.kind!,
      listKind: `${r.kind}List`,
      singular: r.singularName || r.kind!.toLowerCase(),
      namespaced: r.namespaced === true,
      shortNames: r.shortNames,
      categories: r.categories,
      verbs: Array.isArray(r.verbs) ? r.verbs : [],
      strategy: {},
    });
  }
  return defs;
}

interface Cached {
  /** the APIService list's resourceVersion the defs were fetched for, and when */
  rv: string;
  at: number;
  defs: ResourceDef[];
  /** the served defs the last combined array was built from, and that array */
  base?: ResourceDef[];
  combined?: ResourceDef[];
}

const cache = new Map<string, Cached>();

async function backendDefs(env: Env, svc: APIService): Promise<ResourceDef[]> {
  const group = svc.spec?.group ?? "";
  const version = svc.spec?.version ?? "";
  try {
    const res = await forward(env, svc, AGGREGATOR, {
      method: "GET",
      path: discoveryPath(svc),
      headers: [["accept", "application/json"]],
    });
    if (!res.ok) {
      console.warn(
        `aggregated discovery: ${svc.metadata.name}: ${res.status} ${(await res.text()).slice(0, 200)}`,
      );
      return [];
    }
    return defsFromResourceList(group, version, await res.json());
  } catch (e) {
    console.warn(`aggregated discovery: ${svc.metadata.name}: ${(e as Error)?.message ?? e}`);
    return [];
  }
}

const withoutStrategy = (defs: ResourceDef[]) => JSON.stringify(defs.map(({ strategy: _, ...d }) => d));

/**
 * The served defs with the aggregated groups' added: the same array while nothing changed (the
 * discovery documents are cached per array), `served` itself when there is none. The
 * APIServices are read each time (a change of one, e.g. becoming Available, shows at once);
 * the backends are asked again when they changed or every few seconds.
 */
export async function withAggregated(env: Env, served: ResourceDef[]): Promise<ResourceDef[]> {
  const key = env.EDGEPLANE_CLUSTER;
  const list = JSON.parse(await new Store(env, apiservices).listText({}));
  const rv = String(list.metadata?.resourceVersion ?? "");
  let c = cache.get(key);
  if (!c || c.rv !== rv || Date.now() - c.at > FRESH_MS) {
    const remote = ((list.items ?? []) as APIService[]).filter((s) => s.spec?.service && isAvailable(s));
    const defs = (await Promise.all(remote.map((s) => backendDefs(env, s)))).flat();
    c =
      c && withoutStrategy(c.defs) === withoutStrategy(defs)
        ? { ...c, rv, at: Date.now() }
        : { rv, at: Date.now(), defs };
    cache.set(key, c);
  }
  if (!c.defs.length) return served;
  if (c.base !== served || !c.combined) {
    const local = new Set(served.map((d) => `${d.group}/${d.version}`));
    c.base = served;
    c.combined = [...served, ...c.defs.filter((d) => !local.has(`${d.group}/${d.version}`))];
  }
  return c.combined;
}
