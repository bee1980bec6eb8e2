// Many clusters in one deployment (docs/clusters.md). Every Durable Object is named after
// its cluster's key: the root cluster's key is EDGEPLANE_CLUSTER ("default"); a cluster
// made by a Cluster object in the root is keyed "<root>@<name>@<uid>", so a cluster created
// again under the same name starts from objects no earlier one ever wrote. Store shards
// and node tunnels are "<key>/<rest>", the controller manager and the scheduler "<key>".
// A cluster's whole configuration is the root's environment with its key and its own
// identity settings: no credential the root (or another cluster) accepts is accepted in it.
import type { Env } from "./env";

/** What may follow "/clusters/" in a URL: a DNS-1123 label (the Cluster object's name rules). */
export const CLUSTER_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const CLUSTER_NAME_MAX = 63;

export function isClusterName(name: string): boolean {
  return name.length <= CLUSTER_NAME_MAX && CLUSTER_NAME.test(name);
}

/** The key of cluster `name` (incarnation `uid`) in a deployment whose root is `root`. */
export function childClusterKey(root: string, name: string, uid: string): string {
  return `${root}@${name}@${uid}`;
}

/** The cluster name in a child key, undefined for the root's own key. */
export function clusterNameOf(env: Pick<Env, "EDGEPLANE_CLUSTER">): string | undefined {
  const parts = env.EDGEPLANE_CLUSTER.split("@");
  return parts.length === 3 ? parts[1] : undefined;
}

/** The service account issuer of a child cluster: the root's, under the cluster's path. */
function childIssuer(root: Env, name: string): string {
  const rootIssuer = ((root as unknown as Record<string, string | undefined>).EDGEPLANE_SA_ISSUER ?? "")
    .split(",")
    .map((s) => s.trim())
    .find((s) => s);
  return `${rootIssuer ?? "https://kubernetes.default.svc.cluster.local"}/clusters/${name}`;
}

/**
 * Settings of the root that must not reach another cluster: credentials and identity
 * providers (static tokens, passwords, the signing key, OIDC, client certificates), the root
 * CA's key (a cluster's admin approves its own CSRs: signed with the root's CA they would be
 * credentials the root trusts) and policies written for the root (ABAC, the authorization
 * webhook). The apiserver address
 * (EDGEPLANE_APISERVER_ADDRESS) is every cluster's: their nodes' relays dial it and name
 * their cluster first (api/wire/cluster-preamble.ts).
 */
const ROOT_ONLY = [
  "EDGEPLANE_TOKENS",
  "EDGEPLANE_BASIC_AUTH_FILE",
  "EDGEPLANE_SA_SIGNING_KEY",
  "EDGEPLANE_SA_JWKS_URI",
  "EDGEPLANE_API_AUDIENCES",
  "EDGEPLANE_OIDC_ISSUER_URL",
  "EDGEPLANE_OIDC_JWKS",
  "EDGEPLANE_CLIENT_CERT_AUTH",
  "EDGEPLANE_ABAC_POLICY",
  "EDGEPLANE_AUTHZ_WEBHOOK_URL",
  "EDGEPLANE_AUTHZ_WEBHOOK_TOKEN",
  "EDGEPLANE_CA_KEY",
];

/** One environment per cluster key, kept: caches keyed by the environment stay warm. */
const envs = new WeakMap<Env, Map<string, Env>>();

/** The environment a child cluster's requests and objects run with. */
export function childEnv(root: Env, key: string): Env {
  let byKey = envs.get(root);
  if (!byKey) envs.set(root, (byKey = new Map()));
  let env = byKey.get(key);
  if (env) return env;
  const name = key.split("@")[1];
  const e: Record<string, unknown> = { ...root, EDGEPLANE_CLUSTER: key };
  for (const k of ROOT_ONLY) delete e[k];
  e.EDGEPLANE_SA_ISSUER = childIssuer(root, name);
  e.EDGEPLANE_AUTHORIZATION_MODES = "Node,RBAC";
  env = e as unknown as Env;
  byKey.set(key, env);
  return env;
}

/** Forgets a deleted cluster's environment. */
export function forgetChildEnv(root: Env, key: string): void {
  envs.get(root)?.delete(key);
}

/**
 * The environment of a Durable Object: its cluster's, read off the object's name. Objects
 * of the root cluster (and ones made by id, without a name) keep the Worker's own.
 */
export function objectEnv(ctx: DurableObjectState, env: Env): Env {
  const name = ctx.id.name;
  if (!name?.startsWith(`${env.EDGEPLANE_CLUSTER}@`)) return env;
  const slash = name.indexOf("/");
  const key = slash < 0 ? name : name.slice(0, slash);
  return key.split("@").length === 3 ? childEnv(env, key) : env;
}

/** A cluster's object limits and its counts as last published (docs/clusters.md). */
export interface ClusterUsage {
  name: string;
  /** spec.limits.objects */
  objects?: number;
  /** spec.limits' count/<resource>[.<group>], by the name status.counts gives the resource */
  perResource?: Record<string, number>;
  /** status.counts: objects per resource */
  counts: Record<string, number>;
}

/** A Cluster object's object limits: spec.limits.objects and its count/<resource> keys. */
export function objectLimitsOf(obj: unknown): Pick<ClusterUsage, "objects" | "perResource"> {
  const limits = (obj as { spec?: { limits?: Record<string, unknown> } })?.spec?.limits;
  if (!limits || typeof limits !== "object") return {};
  const objects = typeof limits.objects === "number" && limits.objects > 0 ? limits.objects : undefined;
  let perResource: Record<string, number> | undefined;
  for (const [k, v] of Object.entries(limits))
    if (k.startsWith("count/") && typeof v === "number" && Number.isInteger(v) && v >= 0)
      (perResource ??= {})[k.slice("count/".length)] = v;
  return { objects, perResource };
}

/** per cluster key, in this isolate: noted by the Worker's lookup and the manager's publish */
const usage = new Map<string, ClusterUsage>();

export function noteClusterUsage(key: string, u: ClusterUsage): void {
  usage.set(key, u);
}

export function clusterUsage(key: string): ClusterUsage | undefined {
  return usage.get(key);
}

export function forgetClusterUsage(key: string): void {
  usage.delete(key);
}
