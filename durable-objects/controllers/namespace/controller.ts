// The namespace controller (upstream pkg/controller/namespace): a namespace being deleted is
// marked Terminating, everything in it is deleted, and once nothing is left the "kubernetes"
// finalizer is removed from spec.finalizers (namespaces/<name>/finalize) so it can go.

import { type Crd, isEstablished } from "../../../api/custom/definition";
import { allResources, lookupGVR } from "../../../api/registry";
import type { ResourceDef } from "../../../api/resource";
import { rfc3339, timeOf } from "../../../api/time";
import type { KubeObject } from "../../../api/types";
import { CRDS, storedDef } from "../crd/custom-kinds";
import { errorMessage, isConflict, isNotFound } from "../lib/api-errors";
import { type Condition, setCondition } from "../lib/conditions";
import { jsonEqual } from "../lib/json-equal";
import { pathFor } from "../lib/objects";
import type { Controller, ControllerContext } from "../runtime/controller";

const NS = lookupGVR("", "v1", "namespaces")!;
export const NAMESPACE_FINALIZER = "kubernetes";

export interface ContentReport {
  /** "pods has 2 resource instances", sorted */
  remaining: string[];
  /** "example.com/x in 1 resource instances", sorted */
  finalizers: string[];
  errors: string[];
  /** ms until the slowest remaining pod should be gone */
  estimateMs: number;
}

function groupResource(def: ResourceDef): string {
  return def.group ? `${def.resource}.${def.group}` : def.resource;
}

/** The namespace conditions upstream's deleter reports, from one pass over the content. */
export function namespaceConditions(
  old: Condition[] | undefined,
  r: ContentReport,
  nowIso: string,
): Condition[] {
  const c = (type: string, status: Condition["status"], reason: string, message: string): Condition => ({
    type,
    status,
    lastTransitionTime: nowIso,
    reason,
    message,
  });
  let list = old ?? [];
  list = setCondition(
    list,
    c(
      "NamespaceDeletionDiscoveryFailure",
      "False",
      "ResourcesDiscovered",
      "All resources successfully discovered",
    ),
  );
  list = setCondition(
    list,
    c(
      "NamespaceDeletionGroupVersionParsingFailure",
      "False",
      "ParsedGroupVersions",
      "All legacy kube types successfully parsed",
    ),
  );
  list = setCondition(
    list,
    r.errors.length
      ? c(
          "NamespaceDeletionContentFailure",
          "True",
          "ContentDeletionFailed",
          `Failed to delete all resource types, ${r.errors.length} remaining: ${r.errors.join(", ")}`,
        )
      : c(
          "NamespaceDeletionContentFailure",
          "False",
          "ContentDeleted",
          "All content successfully deleted, may be waiting on finalization",
        ),
  );
  list = setCondition(
    list,
    r.remaining.length
      ? c(
          "NamespaceContentRemaining",
          "True",
          "SomeResourcesRemain",
          `Some resources are remaining: ${r.remaining.join(", ")}`,
        )
      : c("NamespaceContentRemaining", "False", "ContentRemoved", "All content successfully removed"),
  );
  list = setCondition(
    list,
    r.finalizers.length
      ? c(
          "NamespaceFinalizersRemaining",
          "True",
          "SomeFinalizersRemain",
          `Some content in the namespace has finalizers remaining: ${r.finalizers.join(", ")}`,
        )
      : c(
          "NamespaceFinalizersRemaining",
          "False",
          "ContentHasNoFinalizers",
          "All content-preserving finalizers finished",
        ),
  );
  return list;
}

/**
 * Namespaced resources whose objects a namespace deletion must remove: the built-in ones, and
 * the custom resources of the CRDs in the informer cache (in their stored version).
 */
export function contentResources(ctx?: ControllerContext): ResourceDef[] {
  const builtIn = allResources().filter(
    (d) => d.namespaced && d.verbs.includes("list") && d.verbs.includes("delete"),
  );
  if (!ctx) return builtIn;
  const custom = ctx.informers
    .list(CRDS)
    .map((crd) => (isEstablished(crd as Crd) ? storedDef(crd as Crd) : undefined))
    .filter((d): d is ResourceDef => !!d?.namespaced);
  return [...builtIn, ...custom];
}

async function deleteContent(ctx: ControllerContext, ns: string): Promise<ContentReport> {
  const report: ContentReport = { remaining: [], finalizers: [], errors: [], estimateMs: 0 };
  const finalizerCounts = new Map<string, number>();
  const now = ctx.now();
  for (const def of contentResources(ctx)) {
    try {
      if (def.verbs.includes("deletecollection")) {
        await ctx.api.request("DELETE", pathFor(def, ns), { kind: "DeleteOptions", apiVersion: "v1" });
      } else {
        const list = await ctx.api.request("GET", pathFor(def, ns));
        for (const item of (list?.items ?? []) as KubeObject[]) {
          if (item.metadata.deletionTimestamp) continue;
          await ctx.api
            .request("DELETE", pathFor(def, ns, item.metadata.name), {
              kind: "DeleteOptions",
              apiVersion: "v1",
            })
            .catch((e) => {
              if (!isNotFound(e)) throw e;
            });
        }
      }
      const left = ((await ctx.api.request("GET", pathFor(def, ns)))?.items ?? []) as KubeObject[];
      if (!left.length) continue;
      report.remaining.push(`${groupResource(def)} has ${left.length} resource instances`);
      for (const item of left) {
        for (const f of item.metadata.finalizers ?? [])
          finalizerCounts.set(f, (finalizerCounts.get(f) ?? 0) + 1);
        const until = timeOf(item.metadata.deletionTimestamp);
        if (until !== undefined) report.estimateMs = Math.max(report.estimateMs, until - now);
      }
    } catch (e) {
      if (isNotFound(e)) continue;
      report.errors.push(`${groupResource(def)}: ${errorMessage(e)}`);
    }
  }
  report.remaining.sort();
  report.finalizers = [...finalizerCounts].map(([f, n]) => `${f} in ${n} resource instances`).sort();
  return report;
}

async function finalize(ctx: ControllerContext, ns: KubeObject): Promise<void> {
  const next = structuredClone(ns);
  next.spec = {
    ...(next.spec ?? {}),
    finalizers: (ns.spec?.finalizers ?? []).filter((f: string) => f !== NAMESPACE_FINALIZER),
  };
  try {
    await ctx.api.update(NS, next, "finalize");
  } catch (e) {
    if (isConflict(e)) throw e;
    if (isNotFound(e) && !ctx.informers.get("/namespaces", ns.metadata.name!)) return;
    // the finalize subresource is not served: fall back to a plain update of spec.finalizers
    try {
      await ctx.api.update(NS, next);
    } catch (e2) {
      if (!isNotFound(e2)) throw e2;
    }
  }
}

/**
 * Writes the namespace status; undefined when the namespace is gone. A 404 while the
 * namespace still exists means the status subresource is not served: carry on without it.
 */
async function writeStatus(
  ctx: ControllerContext,
  ns: KubeObject,
  status: any,
): Promise<KubeObject | undefined> {
  try {
    return await ctx.api.update(NS, { ...ns, status }, "status");
  } catch (e) {
    if (!isNotFound(e)) throw e;
    const still = ctx.informers.get("/namespaces", ns.metadata.name!);
    if (!still || still.metadata.uid !== ns.metadata.uid) return undefined;
    console.warn(`namespace ${ns.metadata.name}: status not written: ${errorMessage(e)}`);
    return still;
  }
}

export async function syncNamespace(name: string, ctx: ControllerContext): Promise<void> {
  let ns: KubeObject | undefined = ctx.informers.get("/namespaces", name);
  if (!ns?.metadata.deletionTimestamp) return;
  const nowIso = rfc3339(ctx.now());
  if (ns.status?.phase !== "Terminating") {
    ns = await writeStatus(ctx, ns, { ...(ns.status ?? {}), phase: "Terminating" });
    if (!ns) return;
  }
  if (!(ns.spec?.finalizers ?? []).includes(NAMESPACE_FINALIZER)) return;
  const report = await deleteContent(ctx, name);
  const conditions = namespaceConditions(ns.status?.conditions, report, nowIso);
  if (!jsonEqual(conditions, ns.status?.conditions ?? [])) {
    ns = await writeStatus(ctx, ns, { ...(ns.status ?? {}), phase: "Terminating", conditions });
    if (!ns) return;
  }
  if (report.errors.length) throw new Error(`namespace ${name}: ${report.errors.join("; ")}`);
  if (report.remaining.length) {
    ctx.enqueue(name, Math.min(15_000, Math.max(1000, report.estimateMs)));
    return;
  }
  await finalize(ctx, ns);
}

export const namespaceController: Controller = {
  name: "namespace-controller",
  workers: 2,
  watches: {
    "/namespaces": (ns) => (ns.metadata.deletionTimestamp ? [ns.metadata.name!] : []),
    // content of a terminating namespace going away: look again sooner
    "/pods": (pod, _old, ctx) => {
      const ns = ctx.informers.get("/namespaces", pod.metadata.namespace!);
      return ns?.metadata.deletionTimestamp &&
        !ctx.informers.get("/pods", `${pod.metadata.namespace}/${pod.metadata.name}`)
        ? [ns.metadata.name!]
        : [];
    },
  },
  resync: (ctx) =>
    ctx.informers
      .list("/namespaces")
      .filter((n) => n.metadata.deletionTimestamp)
      .map((n) => n.metadata.name!),
  sync: syncNamespace,
};
