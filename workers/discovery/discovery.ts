// Discovery documents: legacy (/api, /apis, /api/v1, /apis/<g>/<v>), the
// aggregated form (apidiscovery.k8s.io v2 and v2beta1) with its Accept
// negotiation, and /version. Pure functions over ResourceDef[].

import type { ResourceDef } from "../../api/resource";

/** Upstream's order of groups in /apis; kubectl prefers earlier groups for ambiguous names. */
const GROUP_ORDER = [
  "apiregistration.k8s.io",
  "apps",
  "events.k8s.io",
  "authentication.k8s.io",
  "authorization.k8s.io",
  "autoscaling",
  "batch",
  "certificates.k8s.io",
  "networking.k8s.io",
  "policy",
  "rbac.authorization.k8s.io",
  "storage.k8s.io",
  "admissionregistration.k8s.io",
  "apiextensions.k8s.io",
  "scheduling.k8s.io",
  "coordination.k8s.io",
  "node.k8s.io",
  "discovery.k8s.io",
  "flowcontrol.apiserver.k8s.io",
];

export interface GroupVersions {
  group: string;
  versions: string[];
}

/** Groups (core "" first) with their versions, in upstream's order; preferred version first. */
export function groupsOf(defs: ResourceDef[]): GroupVersions[] {
  const map = new Map<string, string[]>();
  for (const d of defs) {
    const vs = map.get(d.group) ?? [];
    if (!vs.includes(d.version)) vs.push(d.version);
    map.set(d.group, vs);
  }
  const rank = (g: string) =>
    g === "" ? -1 : GROUP_ORDER.includes(g) ? GROUP_ORDER.indexOf(g) : GROUP_ORDER.length;
  return [...map.entries()]
    .map(([group, versions]) => ({ group, versions: versions.sort(compareVersions) }))
    .sort((a, b) => rank(a.group) - rank(b.group));
}

/** Kube version priority: GA > beta > alpha, higher numbers first. */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return [0, 0, 0];
    const stage = m[2] === "alpha" ? 1 : m[2] === "beta" ? 2 : 3;
    return [stage, Number(m[1]), Number(m[3] ?? 0)];
  };
  const [sa, ma, na] = parse(a);
  const [sb, mb, nb] = parse(b);
  return sb - sa || mb - ma || nb - na || a.localeCompare(b);
}

function defsFor(defs: ResourceDef[], group: string, version: string): ResourceDef[] {
  return defs.filter((d) => d.group === group && d.version === version);
}

/** A stable 8-byte hash (FNV-1a 64), base64: the shape of upstream's storageVersionHash. */
export function storageVersionHash(group: string, version: string, kind: string): string {
  let h = 0xcbf29ce484222325n;
  for (const ch of new TextEncoder().encode(`${group}/${version}/${kind}`)) {
    h ^= BigInt(ch);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  const bytes = new Uint8Array(8);
  for (let i = 7; i >= 0; i--) {
    bytes[i] = Number(h & 0xffn);
    h >>= 8n;
  }
  return btoa(String.fromCharCode(...bytes));
}

// ---- legacy documents ----

export function apiVersionsBody(serverAddress = ""): Record<string, unknown> {
  return {
    kind: "APIVersions",
    versions: ["v1"],
    serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }],
  };
}

function apiGroup(g: GroupVersions): Record<string, unknown> {
  const versions = g.versions.map((v) => ({ groupVersion: `${g.group}/${v}`, version: v }));
  return { name: g.group, versions, preferredVersion: versions[0] };
}

export function apiGroupListBody(defs: ResourceDef[]): Record<string, unknown> {
  return {
    kind: "APIGroupList",
    apiVersion: "v1",
    groups: groupsOf(defs)
      .filter((g) => g.group !== "")
      .map(apiGroup),
  };
}

/** /apis/<group>: an APIGroup, or undefined when the group is not served. */
export function apiGroupBody(defs: ResourceDef[], group: string): Record<string, unknown> | undefined {
  const g = groupsOf(defs).find((x) => x.group === group && group !== "");
  return g ? { kind: "APIGroup", apiVersion: "v1", ...apiGroup(g) } : undefined;
}

/** /api/v1 or /apis/<g>/<v>: an APIResourceList, or undefined when not served. */
export function apiResourceListBody(
  defs: ResourceDef[],
  group: string,
  version: string,
): Record<string, unknown> | undefined {
  const list = defsFor(defs, group, version);
  if (!list.length) return undefined;
  const resources: Record<string, unknown>[] = [];
  for (const d of [...list].sort((a, b) => a.resource.localeCompare(b.resource))) {
    const r: Record<string, unknown> = {
      name: d.resource,
      singularName: d.singular,
      namespaced: d.namespaced,
      kind: d.kind,
      verbs: d.verbs,
    };
    if (d.shortNames?.length) r.shortNames = d.shortNames;
    if (d.categories?.length) r.categories = d.categories;
    r.storageVersionHash = storageVersionHash(d.group, d.version, d.kind);
    resources.push(r);
    for (const [sub, s] of Object.entries(d.subresources ?? {}).sort(([a], [b]) => a.localeCompare(b))) {
      const e: Record<string, unknown> = {
        name: `${d.resource}/${sub}`,
        singularName: "",
        namespaced: d.namespaced,
      };
      if (s.group !== undefined && (s.group !== d.group || (s.version ?? d.version) !== d.version)) {
        e.group = s.group;
        e.version = s.version ?? d.version;
      }
      e.kind = s.kind;
      e.verbs = s.verbs;
      resources.push(e);
    }
  }
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: group ? `${group}/${version}` : version,
    resources,
  };
}

// ---- aggregated discovery ----

export type AggregatedVersion = "v2" | "v2beta1";

function aggregatedResources(defs: ResourceDef[]): Record<string, unknown>[] {
  return [...defs]
    .sort((a, b) => a.resource.localeCompare(b.resource))
    .map((d) => {
      const r: Record<string, unknown> = {
        resource: d.resource,
        responseKind: { group: d.group, version: d.version, kind: d.kind },
        scope: d.namespaced ? "Namespaced" : "Cluster",
        singularResource: d.singular,
        verbs: d.verbs,
      };
      if (d.shortNames?.length) r.shortNames = d.shortNames;
      if (d.categories?.length) r.categories = d.categories;
      const subs = Object.entries(d.subresources ?? {}).sort(([a], [b]) => a.localeCompare(b));
      if (subs.length) {
        r.subresources = subs.map(([sub, s]) => ({
          subresource: sub,
          responseKind: { group: s.group ?? d.group, version: s.version ?? d.version, kind: s.kind },
          verbs: s.verbs,
        }));
      }
      return r;
    });
}

function discoveryItem(defs: ResourceDef[], g: GroupVersions): Record<string, unknown> {
  const metadata: Record<string, unknown> = { creationTimestamp: null };
  if (g.group) metadata.name = g.group;
  return {
    metadata,
    versions: g.versions.map((v) => ({
      version: v,
      resources: aggregatedResources(defsFor(defs, g.group, v)),
      freshness: "Current",
    })),
  };
}

/** The APIGroupDiscoveryList for /api (legacy=true: the core group) or /apis (every named group). */
export function aggregatedDiscoveryBody(
  defs: ResourceDef[],
  legacy: boolean,
  version: AggregatedVersion = "v2",
): Record<string, unknown> {
  const groups = groupsOf(defs).filter((g) => (legacy ? g.group === "" : g.group !== ""));
  return {
    kind: "APIGroupDiscoveryList",
    apiVersion: `apidiscovery.k8s.io/${version}`,
    metadata: {},
    items: groups.map((g) => discoveryItem(defs, g)),
  };
}

export function aggregatedContentType(version: AggregatedVersion): string {
  return `application/json;g=apidiscovery.k8s.io;v=${version};as=APIGroupDiscoveryList`;
}

export type DiscoveryNegotiation =
  | { kind: "aggregated"; version: AggregatedVersion; contentType: string }
  | { kind: "legacy"; contentType: "application/json" }
  | { kind: "notAcceptable" };

interface MediaRange {
  type: string;
  params: Record<string, string>;
  q: number;
  index: number;
}

/** Parses an Accept header into media ranges, highest q first (ties keep header order). */
export function parseAccept(header: string | null | undefined): MediaRange[] {
  if (!header) return [];
  return header
    .split(",")
    .map((part, index) => {
      const [type, ...rest] = part.split(";").map((s) => s.trim());
      const params: Record<string, string> = {};
      let q = 1;
      for (const p of rest) {
        const eq = p.indexOf("=");
        if (eq < 0) continue;
        const k = p.slice(0, eq).trim().toLowerCase();
        const v = p
          .slice(eq + 1)
          .trim()
          .replace(/^"|"$/g, "");
        if (k === "q") q = Number.isFinite(Number(v)) ? Number(v) : 0;
        else params[k] = v;
      }
      return { type: type.toLowerCase(), params, q, index };
    })
    .filter((m) => m.type && m.q > 0)
    .sort((a, b) => b.q - a.q || a.index - b.index);
}

/**
 * Chooses the form of /api and /apis: aggregated only when the Accept header
 * asks for application/json with g=apidiscovery.k8s.io, v=v2|v2beta1,
 * as=APIGroupDiscoveryList; otherwise the legacy JSON document.
 */
export function negotiateDiscovery(acceptHeader: string | null | undefined): DiscoveryNegotiation {
  const ranges = parseAccept(acceptHeader);
  if (!ranges.length) return { kind: "legacy", contentType: "application/json" };
  for (const m of ranges) {
    const jsonish = m.type === "application/json" || m.type === "application/*" || m.type === "*/*";
    if (!jsonish) continue;
    const { g, v, as } = m.params;
    if (g === undefined && v === undefined && as === undefined) {
      return { kind: "legacy", contentType: "application/json" };
    }
    if (m.type === "application/json" && g === "apidiscovery.k8s.io" && as === "APIGroupDiscoveryList") {
      if (v === "v2" || v === "v2beta1")
        return { kind: "aggregated", version: v, contentType: aggregatedContentType(v) };
    }
  }
  return { kind: "notAcceptable" };
}
