// A busy resource over several store shards (docs/sharding.md). EDGEPLANE_STORE_SHARDS names
// the resources spread and how: "pods=4,events=4,leases=4" (a resource by its plural, or its
// plural and group: "leases.coordination.k8s.io=4"; "/name" or "/namespace" after the count
// picks the split). Split by namespace, a namespace's objects share one shard, so
// what one namespace asks for touches one shard; split by name (leases, by default: a
// cluster's node leases are all in one namespace) each object goes by a hash of its key.
//
// Each shard keeps its own revision, so an object's resourceVersion is its shard's (a plain
// number, as before). What spans shards (a list or watch of the whole resource) answers with
// a vector: every shard's revision, joined by dots ("12.0.57.3"), which clients hand back as
// an opaque string; a list from it reads each shard at its revision, a watch resumes each
// shard after its own. A query aimed at one shard stays that shard's, plain number and all.
import { badRequest } from "../../api/errors";
import { parseFieldSelector } from "../../api/selectors";

export type SplitBy = "namespace" | "name";

export interface ShardPlan {
  count: number;
  by: SplitBy;
}

const ONE: ShardPlan = { count: 1, by: "namespace" };

/** Resources split by name unless the setting says otherwise. */
const BY_NAME_DEFAULT = new Set(["leases", "leases.coordination.k8s.io"]);

const parsed = new Map<string, Map<string, ShardPlan>>();

function plans(setting: string | undefined): Map<string, ShardPlan> {
  const text = setting ?? "";
  let m = parsed.get(text);
  if (m) return m;
  m = new Map();
  for (const part of text.split(",")) {
    const item = part.trim();
    if (!item) continue;
    const match = /^([a-z0-9.-]+)=(\d+)(?:\/(name|namespace))?$/.exec(item);
    if (!match)
      throw new Error(
        `EDGEPLANE_STORE_SHARDS: cannot read "${item}" (want resource=count[/name|/namespace])`,
      );
    const count = Number(match[2]);
    if (count < 1 || count > 64) throw new Error(`EDGEPLANE_STORE_SHARDS: ${match[1]} wants 1 to 64 shards`);
    const by = (match[3] as SplitBy | undefined) ?? (BY_NAME_DEFAULT.has(match[1]) ? "name" : "namespace");
    m.set(match[1], { count, by });
  }
  parsed.set(text, m);
  return m;
}

/** The plan of a resource's store (its group and plural as stored). */
export function shardPlan(
  env: { EDGEPLANE_STORE_SHARDS?: string },
  def: { group: string; resource: string },
): ShardPlan {
  const m = plans(env.EDGEPLANE_STORE_SHARDS);
  if (!m.size) return ONE;
  // "leases.coordination.k8s.io", or the plural alone
  return (def.group && m.get(`${def.resource}.${def.group}`)) || m.get(def.resource) || ONE;
}

/** Checks the setting once at start, so a typo is said at once rather than per request. */
export function checkShardSetting(setting: string | undefined): void {
  plans(setting);
}

/** FNV-1a of the text, as an unsigned 32-bit number. */
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** Which shard holds the object named so. */
export function shardOf(plan: ShardPlan, namespace: string, name: string): number {
  if (plan.count === 1) return 0;
  return hash32(plan.by === "namespace" ? namespace : `${namespace}/${name}`) % plan.count;
}

/**
 * The one shard a list or watch can be answered from, when there is one: a namespace's, split
 * by namespace; a named object's (a metadata.name field selector in a namespace), split by name.
 */
export function singleShard(
  plan: ShardPlan,
  namespaced: boolean,
  namespace: string | undefined,
  fieldSelector: string | undefined,
): number | undefined {
  if (plan.count === 1) return 0;
  if (!namespaced) {
    const name = selectedName(fieldSelector);
    return plan.by === "name" && name !== undefined ? shardOf(plan, "", name) : undefined;
  }
  if (namespace === undefined) return undefined;
  if (plan.by === "namespace") return shardOf(plan, namespace, "");
  const name = selectedName(fieldSelector);
  return name === undefined ? undefined : shardOf(plan, namespace, name);
}

function selectedName(fieldSelector: string | undefined): string | undefined {
  if (!fieldSelector) return undefined;
  try {
    for (const r of parseFieldSelector(fieldSelector))
      if (r.key === "metadata.name" && (r.op === "=" || (r.op === "in" && r.values.length === 1)))
        return r.values[0];
  } catch {
    // the shard says what is wrong with it
  }
  return undefined;
}

/** The name of shard `i`'s Durable Object: shard 0's is `base` (an unspread resource's), shard i's "<base>~i". */
export function shardObjectName(base: string, i: number): string {
  return i === 0 ? base : `${base}~${i}`;
}

/**
 * The resource key a call to shard i carries ("/pods~2"; shard 0's is the key alone): the
 * shard learns its number from it, as its object name may not be known to it (a shard in
 * another process of the local engine has an id without its name). Also the key of shard i's
 * relay at the front door.
 */
export function shardKey(key: string, i: number): string {
  return i ? `${key}~${i}` : key;
}

/** A shard's key split into the resource's key and the shard's number. */
export function splitShardKey(res: string): { key: string; shard: number } {
  const t = res.lastIndexOf("~");
  if (t < 0) return { key: res, shard: 0 };
  const shard = Number(res.slice(t + 1));
  return Number.isInteger(shard) && shard > 0 ? { key: res.slice(0, t), shard } : { key: res, shard: 0 };
}

/** A vector resourceVersion: each shard's revision. */
export function formatVector(revs: readonly number[]): string {
  return revs.join(".");
}

/** Each shard's revision in a list's resourceVersion (a plain number: the one shard's). */
export function parseVector(rv: string): number[] {
  return rv.split(".").map(Number);
}

export function isVector(rv: string): boolean {
  return rv.includes(".");
}

/**
 * A resourceVersion a client gave for a query over all `count` shards: each shard's part.
 * "" and "0" mean the same for every shard. A plain number cannot say where the other shards
 * were: undefined then (a watch answers 410, so the client lists again).
 */
export function vectorParts(rv: string | undefined, count: number): string[] | undefined {
  if (rv === undefined || rv === "" || rv === "0") return new Array(count).fill(rv ?? "");
  if (!isVector(rv)) return undefined;
  const parts = rv.split(".");
  if (parts.length !== count || parts.some((p) => !/^\d+$/.test(p)))
    throw badRequest(`invalid resource version: ${rv}`);
  return parts;
}

/** The part of a resourceVersion that is shard `i`'s: a vector's component, a plain number as it is. */
export function localVersion(rv: string, i: number, count: number): string {
  if (!isVector(rv)) return rv;
  const parts = rv.split(".");
  if (parts.length !== count) throw badRequest(`invalid resource version: ${rv}`);
  return parts[i];
}
