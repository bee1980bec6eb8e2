// ResourceQuota (upstream plugin/pkg/admission/resourcequota): a create that would take a
// namespace past a quota's hard limits is refused. Usage is reserved before the object is
// stored, by an optimistic-concurrency update of the quota's status.used (409 -> re-read and
// retry): the quota's store shard serialises those writes, so concurrent creates cannot both
// take the last unit. A new quota starts from the usage of the objects already there; a delete
// gives its usage back (best effort, as upstream's quota controller would recompute it).
import { StatusError } from "../../api/errors";
import { allResources } from "../../api/registry";
import type { ResourceDef } from "../../api/resource";
import { storageClassOf } from "../../api/strategies/persistentvolumes";
import type { KubeObject } from "../../api/types";
import { Store } from "../../durable-objects/store/client";
import type { AdmissionAttributes, AdmissionPlugin } from "./index";
import {
  admissionForbidden,
  cachedListIn,
  coreDef,
  formatQuantity,
  isObj,
  listIn,
  podContainers,
  qty,
} from "./util";

type Usage = Record<string, number>;

/** Core kinds upstream also counts under their bare names. */
const LEGACY_COUNTS = new Set([
  "pods",
  "services",
  "configmaps",
  "secrets",
  "replicationcontrollers",
  "resourcequotas",
  "persistentvolumeclaims",
]);
const COMPUTE = ["cpu", "memory", "ephemeral-storage"];
/** The infix of a storage class's quota names: gold.storageclass.storage.k8s.io/requests.storage */
const CLASS_QUOTA = ".storageclass.storage.k8s.io/";

function podAmount(spec: any, part: "requests" | "limits", r: string): number {
  let sum = 0;
  let initMax = 0;
  for (const { c, kind } of podContainers(spec, false)) {
    const m = isObj(c.resources?.[part]) ? c.resources[part] : {};
    if (!(r in m)) continue;
    if (kind === "init container") initMax = Math.max(initMax, qty(m[r]));
    else sum += qty(m[r]);
  }
  return Math.max(sum, initMax);
}

const isTerminal = (o: KubeObject) => o.status?.phase === "Succeeded" || o.status?.phase === "Failed";

/** What one object counts against quotas. */
export function usageOf(def: ResourceDef, obj: KubeObject): Usage {
  const u: Usage = {};
  if (def.resource === "pods" && def.group === "" && isTerminal(obj)) return u;
  u[`count/${def.group ? `${def.resource}.${def.group}` : def.resource}`] = 1;
  if (def.group !== "") return u;
  if (LEGACY_COUNTS.has(def.resource)) u[def.resource] = 1;
  if (def.resource === "pods") {
    // a pod's overhead (its RuntimeClass's) counts with its requests, and with its limits where
    // it has one, as upstream's PodRequests and PodLimits add it
    const overhead = isObj(obj.spec?.overhead) ? obj.spec.overhead : {};
    for (const r of COMPUTE) {
      const extra = r in overhead ? qty(overhead[r]) : 0;
      const req = podAmount(obj.spec, "requests", r) + extra;
      const hasLimit = podContainers(obj.spec, false).some(
        (x) => isObj(x.c.resources?.limits) && r in x.c.resources.limits,
      );
      const lim = podAmount(obj.spec, "limits", r) + (hasLimit ? extra : 0);
      u[`requests.${r}`] = req;
      if (r !== "ephemeral-storage") u[r] = req;
      u[`limits.${r}`] = lim;
    }
  } else if (def.resource === "services") {
    if (obj.spec?.type === "LoadBalancer") u["services.loadbalancers"] = 1;
    if (obj.spec?.type === "NodePort" || obj.spec?.type === "LoadBalancer")
      u["services.nodeports"] = (Array.isArray(obj.spec?.ports) ? obj.spec.ports : []).length;
  } else if (def.resource === "persistentvolumeclaims") {
    const storage = qty(obj.spec?.resources?.requests?.storage);
    u["requests.storage"] = storage;
    // and per class: <class>.storageclass.storage.k8s.io/requests.storage and /persistentvolumeclaims
    const cls = storageClassOf(obj);
    if (cls) {
      u[`${cls}${CLASS_QUOTA}requests.storage`] = storage;
      u[`${cls}${CLASS_QUOTA}persistentvolumeclaims`] = 1;
    }
  }
  return u;
}

/** The pod evaluator's constraints: a quota on cpu or memory needs every container (init
 * containers too) to state them; the names missing, sorted. */
export function missingCompute(obj: KubeObject, tracked: string[]): string[] {
  const missing = new Set<string>();
  for (const t of tracked) {
    const m = /^(?:(requests|limits)\.)?(cpu|memory)$/.exec(t);
    if (!m) continue;
    const part = m[1] ?? "requests";
    for (const { c } of podContainers(obj.spec, false))
      if (!(isObj(c.resources?.[part]) && m[2] in c.resources[part])) missing.add(t);
  }
  return [...missing].sort();
}

const hasCompute = (o: KubeObject) =>
  podContainers(o.spec, false).some(({ c }) =>
    ["requests", "limits"].some((p) => COMPUTE.some((r) => isObj(c.resources?.[p]) && r in c.resources[p])),
  );

/** Whether a quota's scopes (spec.scopes and In/NotIn/Exists scopeSelector terms) cover a pod. */
export function scopesMatch(q: KubeObject, def: ResourceDef, obj: KubeObject): boolean {
  const scopes: { scope: string; op: string; values: string[] }[] = [
    ...(Array.isArray(q.spec?.scopes) ? q.spec.scopes : []).map((s: string) => ({
      scope: s,
      op: "Exists",
      values: [],
    })),
    ...(Array.isArray(q.spec?.scopeSelector?.matchExpressions)
      ? q.spec.scopeSelector.matchExpressions
      : []
    ).map((e: any) => ({
      scope: e?.scopeName,
      op: e?.operator,
      values: Array.isArray(e?.values) ? e.values : [],
    })),
  ];
  if (!scopes.length) return true;
  // scoped quotas only track pods
  if (def.group !== "" || def.resource !== "pods") return false;
  return scopes.every(({ scope, op, values }) => {
    switch (scope) {
      case "Terminating":
        return obj.spec?.activeDeadlineSeconds != null;
      case "NotTerminating":
        return obj.spec?.activeDeadlineSeconds == null;
      case "BestEffort":
        return !hasCompute(obj);
      case "NotBestEffort":
        return hasCompute(obj);
      case "PriorityClass": {
        const pc = obj.spec?.priorityClassName ?? "";
        if (op === "Exists") return pc !== "";
        if (op === "DoesNotExist") return pc === "";
        return op === "In" ? values.includes(pc) : !values.includes(pc);
      }
      default:
        return false;
    }
  });
}

export const hardOf = (q: KubeObject): Record<string, unknown> =>
  isObj(q.status?.hard) ? q.status.hard : isObj(q.spec?.hard) ? q.spec.hard : {};

const pretty = (m: Record<string, string>) =>
  Object.keys(m)
    .sort()
    .map((k) => `${k}=${m[k]}`)
    .join(",");

/** The new status.used, or the exceeded message when the delta does not fit. */
export function addUsage(
  q: KubeObject,
  delta: Usage,
): { used: Record<string, string> } | { exceeded: string } {
  const hard = hardOf(q);
  const used: Record<string, string> = { ...(isObj(q.status?.used) ? q.status.used : {}) };
  const over: string[] = [];
  for (const [k, d] of Object.entries(delta)) {
    if (!(k in hard) || d === 0) continue;
    const next = qty(used[k]) + d;
    if (d > 0 && next > qty(hard[k])) over.push(k);
    used[k] = formatQuantity(k, Math.max(0, next));
  }
  if (over.length) {
    const pick = (f: (k: string) => string) => Object.fromEntries(over.map((k) => [k, f(k)]));
    const cur = isObj(q.status?.used) ? q.status.used : {};
    return {
      exceeded: `exceeded quota: ${q.metadata.name}, requested: ${pretty(pick((k) => formatQuantity(k, delta[k])))}, used: ${pretty(pick((k) => String(cur[k] ?? "0")))}, limited: ${pretty(pick((k) => String(hard[k])))}`,
    };
  }
  return { used };
}

/** status.used plus a delta, limits ignored (giving back a failed delete's units). */
function forced(q: KubeObject, delta: Usage): Record<string, string> {
  const hard = hardOf(q);
  const used: Record<string, string> = { ...(isObj(q.status?.used) ? q.status.used : {}) };
  for (const [k, d] of Object.entries(delta))
    if (k in hard && d !== 0) used[k] = formatQuantity(k, Math.max(0, qty(used[k]) + d));
  return used;
}

const isConflict = (e: unknown) => e instanceof StatusError && e.code === 409;

/** Applies `sign * usage` to one quota, retrying on conflicts; throws when it would exceed. */
async function charge(
  a: AdmissionAttributes,
  quota: KubeObject,
  usage: Usage,
  sign: 1 | -1,
  force = false,
): Promise<void> {
  const store = new Store(a.w.c.env, coreDef("resourcequotas"));
  const delta = Object.fromEntries(Object.entries(usage).map(([k, v]) => [k, sign * v]));
  let q = quota;
  for (let attempt = 0; attempt < 50; attempt++) {
    const r = addUsage(q, delta);
    if ("exceeded" in r && !force) {
      // the first look may come from a cached list: refuse only on the stored quota's word
      const fresh =
        attempt === 0 ? await store.find(q.metadata.namespace ?? "", q.metadata.name!) : undefined;
      if (!fresh || fresh.metadata.resourceVersion === q.metadata.resourceVersion)
        throw admissionForbidden(a, r.exceeded);
      q = fresh;
      continue;
    }
    if (a.w.dryRun) return;
    const next = structuredClone(q);
    next.status = {
      ...(isObj(q.status) ? q.status : {}),
      hard: hardOf(q),
      used: "used" in r ? r.used : forced(q, delta),
    };
    try {
      await store.update(next, { expectRV: q.metadata.resourceVersion });
      return;
    } catch (e) {
      if (!isConflict(e)) throw e;
      const fresh = await store.find(q.metadata.namespace ?? "", q.metadata.name!);
      if (!fresh) return;
      q = fresh;
    }
  }
  throw new StatusError(500, "InternalError", `too many conflicts updating quota ${q.metadata.name}`);
}

/** Initial usage of a quota being created: the objects already in its namespace. */
async function initialStatus(a: AdmissionAttributes, q: KubeObject): Promise<void> {
  const hard = isObj(q.spec?.hard) ? q.spec.hard : {};
  const total: Usage = {};
  const resources = new Set<string>();
  for (const k of Object.keys(hard)) {
    const m = /^count\/([^.]+)(?:\.(.+))?$/.exec(k);
    if (m) resources.add(m[2] ? `${m[1]}.${m[2]}` : m[1]);
    else if (LEGACY_COUNTS.has(k)) resources.add(k);
    else if (/^(requests|limits)\.|^(cpu|memory)$/.test(k))
      resources.add(k === "requests.storage" ? "persistentvolumeclaims" : "pods");
    else if (k.startsWith("services.")) resources.add("services");
    else if (k.includes(CLASS_QUOTA)) resources.add("persistentvolumeclaims");
  }
  for (const r of resources) {
    const [resource, ...group] = r.split(".");
    const def = allResources().find((d) => d.resource === resource && d.group === group.join("."));
    if (!def?.namespaced) continue;
    for (const o of await listIn(a.w.c.env, def, q.metadata.namespace ?? ""))
      if (scopesMatch(q, def, o))
        for (const [k, v] of Object.entries(usageOf(def, o))) total[k] = (total[k] ?? 0) + v;
  }
  // the quota itself counts against a quota on quotas
  if (resources.has("resourcequotas")) {
    total.resourcequotas = (total.resourcequotas ?? 0) + 1;
    total["count/resourcequotas"] = (total["count/resourcequotas"] ?? 0) + 1;
  }
  const used: Record<string, string> = {};
  for (const k of Object.keys(hard)) used[k] = formatQuantity(k, total[k] ?? 0);
  q.status = { hard: { ...hard }, used };
}

const QUOTAS = "resourcequotas";

/** What this request charged, by the object admitted: undone when the write then fails. */
const reservations = new WeakMap<object, { quotas: KubeObject[]; usage: Usage; sign: 1 | -1 }>();

/** A pod that reaches Succeeded or Failed no longer counts (upstream's controller recomputes). */
async function releaseFinished(a: AdmissionAttributes): Promise<void> {
  const { object: obj, old } = a;
  if (a.w.def.group !== "" || a.w.def.resource !== "pods" || !obj || !old) return;
  if (isTerminal(old) || !isTerminal(obj) || old.metadata.deletionTimestamp) return;
  const quotas = await cachedListIn(a.w.c.env, coreDef(QUOTAS), obj.metadata.namespace ?? "");
  const usage = usageOf(a.w.def, old);
  for (const q of quotas)
    if (scopesMatch(q, a.w.def, old)) await charge(a, q, usage, -1).catch(() => undefined);
}

export const resourceQuota: AdmissionPlugin = {
  name: "ResourceQuota",
  async mutate(a) {
    // a quota's status follows its spec: initial usage on create, new hard limits on update
    if (a.w.def.group !== "" || a.w.def.resource !== QUOTAS || !a.object || a.w.info.subresource) return;
    if (a.operation === "CREATE") await initialStatus(a, a.object);
    else if (a.operation === "UPDATE" && isObj(a.object.spec?.hard))
      a.object.status = { ...(a.old?.status ?? {}), hard: { ...a.object.spec.hard } };
  },
  async validate(a) {
    if (a.w.info.subresource === "status" && a.operation === "UPDATE") return releaseFinished(a);
    if (!a.w.def.namespaced || a.w.info.subresource) return;
    const creating = a.operation === "CREATE" && a.object;
    const deleting = a.operation === "DELETE" && a.old && !a.old.metadata.deletionTimestamp;
    if (!creating && !deleting) return;
    if (a.w.def.group === "" && a.w.def.resource === QUOTAS && creating) return;
    const obj = (creating ? a.object : a.old)!;
    const quotas = (await cachedListIn(a.w.c.env, coreDef(QUOTAS), obj.metadata.namespace ?? "")).filter(
      (q) => !(a.w.def.resource === QUOTAS && q.metadata.name === obj.metadata.name),
    );
    if (!quotas.length) return;
    const usage = usageOf(a.w.def, obj);
    if (deleting) {
      const released: KubeObject[] = [];
      for (const q of quotas)
        if (scopesMatch(q, a.w.def, obj))
          await charge(a, q, usage, -1).then(
            () => released.push(q),
            () => undefined,
          );
      if (!a.w.dryRun) reservations.set(obj, { quotas: released, usage, sign: -1 });
      return;
    }
    const charged: KubeObject[] = [];
    try {
      for (const q of quotas) {
        if (!scopesMatch(q, a.w.def, obj)) continue;
        const tracked = Object.keys(hardOf(q)).filter((k) => k in usage);
        if (!tracked.length) continue;
        if (a.w.def.resource === "pods" && a.w.def.group === "") {
          const missing = missingCompute(obj, tracked);
          if (missing.length)
            throw admissionForbidden(
              a,
              `failed quota: ${q.metadata.name}: must specify ${missing.join(",")}`,
            );
        }
        await charge(a, q, usage, 1);
        charged.push(q);
      }
      if (charged.length && !a.w.dryRun) reservations.set(obj, { quotas: charged, usage, sign: 1 });
    } catch (e) {
      // give back what was already reserved on the other quotas
      for (const q of charged) {
        const fresh = await new Store(a.w.c.env, coreDef(QUOTAS)).find(
          q.metadata.namespace ?? "",
          q.metadata.name!,
        );
        if (fresh) await charge(a, fresh, usage, -1).catch(() => undefined);
      }
      throw e;
    }
  },
  async rollback(a) {
    const obj = a.object ?? a.old;
    const r = obj && reservations.get(obj);
    if (!r) return;
    reservations.delete(obj);
    const store = new Store(a.w.c.env, coreDef(QUOTAS));
    for (const q of r.quotas) {
      const fresh = await store.find(q.metadata.namespace ?? "", q.metadata.name!);
      if (fresh) await charge(a, fresh, r.usage, r.sign === 1 ? -1 : 1, true).catch(() => undefined);
    }
  },
};
