// The CRD finalizer (upstream apiextensions' finalizer controller): a CustomResourceDefinition
// being deleted keeps the customresourcecleanup finalizer until every object of its resource
// is gone. Objects are deleted namespace by namespace; ones held by finalizers of their own
// are waited for; then the finalizer comes off and the CRD goes.
import { type Crd, setCrdCondition } from "../../../api/custom/definition";
import { lookupGVR } from "../../../api/registry";
import type { ResourceDef } from "../../../api/resource";
import { CRD_CLEANUP_FINALIZER } from "../../../api/strategies/customresourcedefinitions";
import type { KubeObject } from "../../../api/types";
import { errorMessage, isConflict, isNotFound } from "../lib/api-errors";
import { pathFor } from "../lib/objects";
import type { Controller, ControllerContext } from "../runtime/controller";
import { CRDS, storedDef } from "./custom-kinds";

const CRD = lookupGVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")!;
/** How soon to look again while objects wait for their own finalizers. */
const RECHECK_MS = 5000;

async function setCondition(
  ctx: ControllerContext,
  crd: Crd,
  reason: string,
  message: string,
  status = "True",
): Promise<Crd> {
  const next = structuredClone(crd);
  setCrdCondition(next, "Terminating", status, reason, message);
  if (JSON.stringify(next.status) === JSON.stringify(crd.status)) return crd;
  return (await ctx.api.update(CRD, next, "status")) as Crd;
}

/** Deletes every object of the resource; the number still there afterwards. */
async function deleteObjects(ctx: ControllerContext, def: ResourceDef): Promise<number> {
  const all = ((await ctx.api.request("GET", pathFor(def)))?.items ?? []) as KubeObject[];
  const namespaces = new Set(all.map((o) => o.metadata.namespace ?? ""));
  for (const ns of namespaces)
    await ctx.api.request("DELETE", pathFor(def, ns || undefined), {
      kind: "DeleteOptions",
      apiVersion: "v1",
    });
  return ((await ctx.api.request("GET", pathFor(def)))?.items ?? []).length;
}

async function syncCrd(name: string, ctx: ControllerContext): Promise<void> {
  let crd = ctx.informers.get(CRDS, name) as Crd | undefined;
  if (!crd?.metadata.deletionTimestamp || !crd.metadata.finalizers?.includes(CRD_CLEANUP_FINALIZER)) return;
  const def = storedDef(crd);
  try {
    if (def) {
      crd = await setCondition(
        ctx,
        crd,
        "InstanceDeletionInProgress",
        "CustomResource deletion is in progress",
      );
      const left = await deleteObjects(ctx, def);
      if (left > 0) {
        await setCondition(
          ctx,
          crd,
          "InstanceDeletionCheck",
          `could not confirm zero CustomResources remaining: ${left} instances remaining`,
        );
        ctx.enqueue(name, RECHECK_MS);
        return;
      }
      crd = await setCondition(ctx, crd, "InstanceDeletionCompleted", "removed all instances", "False");
    }
    const next = structuredClone(crd);
    next.metadata.finalizers = next.metadata.finalizers?.filter((f) => f !== CRD_CLEANUP_FINALIZER);
    await ctx.api.update(CRD, next);
  } catch (e) {
    if (isNotFound(e)) return;
    if (isConflict(e)) {
      ctx.enqueue(name);
      return;
    }
    console.warn(`crd ${name}: ${errorMessage(e)}`);
    throw e;
  }
}

export const crdFinalizer: Controller = {
  name: "crd-finalizer",
  workers: 1,
  watches: {
    [CRDS]: (crd) => (crd.metadata.deletionTimestamp ? [crd.metadata.name!] : []),
  },
  resync: (ctx) => ctx.informers.keys(CRDS),
  sync: syncCrd,
};
