// What webhooks and admission policies match on: the request's attributes (the
// AdmissionReview request), rules, label selectors, and a per-isolate cache of
// their configuration objects.
import { lookupGVR } from "../../api/registry";
import type { ResourceDef } from "../../api/resource";
import type { KubeObject } from "../../api/types";
import { selectorMatches } from "../../api/validation/metadata";
import type { Env } from "../../durable-objects/env";
import { Store } from "../../durable-objects/store/client";
import type { AdmissionAttributes } from "./index";
import { cachedRead, clearReadCache } from "./util";

const ADMREG = "admissionregistration.k8s.io";

export interface GVK {
  group: string;
  version: string;
  kind: string;
}

/** admission.k8s.io/v1 AdmissionRequest, without object/oldObject. */
export interface RequestView {
  uid: string;
  kind: GVK;
  resource: { group: string; version: string; resource: string };
  subResource?: string;
  requestKind: GVK;
  requestResource: { group: string; version: string; resource: string };
  requestSubResource?: string;
  name: string;
  namespace?: string;
  operation: string;
  userInfo: { username: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  dryRun: boolean;
  options?: Record<string, unknown>;
}

const OPTIONS_KIND: Record<string, string> = {
  CREATE: "CreateOptions",
  UPDATE: "UpdateOptions",
  DELETE: "DeleteOptions",
};

export function kindOf(def: ResourceDef, subresource: string): GVK {
  const sub = subresource ? def.subresources?.[subresource] : undefined;
  if (sub) return { group: sub.group ?? def.group, version: sub.version ?? def.version, kind: sub.kind };
  return { group: def.group, version: def.version, kind: def.kind };
}

/** The request as webhooks and CEL `request` see it. */
export function requestView(a: AdmissionAttributes, uid: string = crypto.randomUUID()): RequestView {
  const { w } = a;
  const meta = (a.object ?? a.old)?.metadata as KubeObject["metadata"] | undefined;
  const sub = w.info.subresource || "";
  const kind = kindOf(w.def, sub);
  const resource = { group: w.def.group, version: w.def.version, resource: w.def.resource };
  const user = w.c.get("user");
  const ns = w.def.namespaced ? w.info.namespace || meta?.namespace : undefined;
  const view: RequestView = {
    uid,
    kind,
    resource,
    requestKind: kind,
    requestResource: resource,
    // the URL's name, else the object's: "" for a create whose name is yet to be generated
    name: w.info.name || meta?.name || "",
    operation: a.operation,
    userInfo: {
      username: user?.name ?? "",
      ...(user?.uid ? { uid: user.uid } : {}),
      ...(user?.groups?.length ? { groups: user.groups } : {}),
      ...(user?.extra && Object.keys(user.extra).length ? { extra: user.extra } : {}),
    },
    dryRun: w.dryRun,
  };
  if (sub) {
    view.subResource = sub;
    view.requestSubResource = sub;
  }
  if (ns) view.namespace = ns;
  const optKind = OPTIONS_KIND[a.operation];
  if (optKind)
    view.options = {
      kind: optKind,
      apiVersion: "meta.k8s.io/v1",
      ...(w.dryRun ? { dryRun: ["All"] } : {}),
    };
  return view;
}

/** Writes to the admission configuration kinds never go to webhooks or policies (upstream exempts them). */
export function isExempt(a: AdmissionAttributes): boolean {
  return (
    a.w.def.group === ADMREG &&
    [
      "mutatingwebhookconfigurations",
      "validatingwebhookconfigurations",
      "validatingadmissionpolicies",
      "validatingadmissionpolicybindings",
    ].includes(a.w.def.resource)
  );
}

/** The subset of admissionregistration RuleWithOperations that matching reads. */
export interface Rule {
  operations?: string[];
  apiGroups?: string[];
  apiVersions?: string[];
  resources?: string[];
  scope?: string;
  resourceNames?: string[];
}

export interface RuleTarget {
  operation: string;
  group: string;
  version: string;
  resource: string;
  subresource: string;
  /** "" for cluster-scoped objects */
  namespace: string;
  name: string;
}

export function ruleTarget(a: AdmissionAttributes): RuleTarget {
  const meta = (a.object ?? a.old)?.metadata as KubeObject["metadata"] | undefined;
  return {
    operation: a.operation,
    group: a.w.def.group,
    version: a.w.def.version,
    resource: a.w.def.resource,
    subresource: a.w.info.subresource || "",
    namespace: a.w.def.namespaced ? a.w.info.namespace || meta?.namespace || "" : "",
    name: a.w.info.name || meta?.name || "",
  };
}

const hasOrStar = (list: string[] | undefined, v: string) =>
  Array.isArray(list) && (list.includes("*") || list.includes(v));

function resourceMatches(patterns: string[] | undefined, resource: string, sub: string): boolean {
  for (const p of patterns ?? []) {
    if (p === "*/*") return true;
    const [pr, ps] = p.split("/", 2);
    if (ps === undefined) {
      if (!sub && (pr === "*" || pr === resource)) return true;
    } else if ((pr === "*" || pr === resource) && (ps === "*" || ps === sub)) return true;
  }
  return false;
}

/** One rule against a request: operations, groups, versions, resources (with subresources), scope. */
export function ruleMatches(rule: Rule, t: RuleTarget): boolean {
  if (!hasOrStar(rule.operations, t.operation)) return false;
  if (!hasOrStar(rule.apiGroups, t.group)) return false;
  if (!hasOrStar(rule.apiVersions, t.version)) return false;
  if (!resourceMatches(rule.resources, t.resource, t.subresource)) return false;
  if (rule.resourceNames?.length && !rule.resourceNames.includes(t.name)) return false;
  const isNamespaceObj = t.group === "" && t.resource === "namespaces";
  switch (rule.scope ?? "*") {
    case "Namespaced":
      return !isNamespaceObj && t.namespace !== "";
    case "Cluster":
      return isNamespaceObj || t.namespace === "";
    default:
      return true;
  }
}

export const anyRuleMatches = (rules: unknown, t: RuleTarget): boolean =>
  Array.isArray(rules) && rules.some((r) => ruleMatches(r as Rule, t));

/** objectSelector: the new or the old object's labels match. */
export function objectSelectorMatches(sel: any, a: AdmissionAttributes): boolean {
  if (!sel || (!sel.matchLabels && !sel.matchExpressions)) return true;
  // an object without metadata (a CONNECT's options) has no labels to match
  return [a.object, a.old].some((o) => o?.metadata && selectorMatches(sel, o.metadata.labels ?? {}));
}

/** Loads the request's namespace object once per request (undefined for cluster-scoped requests). */
export class NamespaceLoader {
  private loaded?: Promise<KubeObject | undefined>;
  constructor(private readonly a: AdmissionAttributes) {}

  get(): Promise<KubeObject | undefined> {
    if (!this.loaded) {
      const t = ruleTarget(this.a);
      const def = lookupGVR("", "v1", "namespaces")!;
      if (t.group === "" && t.resource === "namespaces")
        this.loaded = Promise.resolve(this.a.object ?? this.a.old);
      else if (!t.namespace) this.loaded = Promise.resolve(undefined);
      else this.loaded = new Store(this.a.w.c.env, def).find("", t.namespace);
    }
    return this.loaded;
  }

  /** namespaceSelector: cluster-scoped objects (other than namespaces) always match. */
  async selectorMatches(sel: any): Promise<boolean> {
    if (!sel || (!sel.matchLabels && !sel.matchExpressions)) return true;
    const t = ruleTarget(this.a);
    if (!t.namespace && !(t.group === "" && t.resource === "namespaces")) return true;
    const ns = await this.get();
    return selectorMatches(sel, ns?.metadata.labels ?? {});
  }
}

// ---- configuration cache ----

/**
 * All objects of an admissionregistration resource, sorted by name; cached per isolate for
 * ~1 s as settled values only (a pending promise from another request's I/O must never be
 * awaited: workerd cancels such a request as hung).
 */
export async function configObjects(env: Env, resource: string): Promise<KubeObject[]> {
  const def = lookupGVR(ADMREG, "v1", resource)!;
  return cachedRead(env, def, "*", async () =>
    ((JSON.parse(await new Store(env, def).listText({})).items ?? []) as KubeObject[]).sort((x, y) =>
      (x.metadata.name ?? "") < (y.metadata.name ?? "") ? -1 : 1,
    ),
  );
}

/** For tests: forget cached configurations. */
export function clearConfigCache(): void {
  clearReadCache();
}
