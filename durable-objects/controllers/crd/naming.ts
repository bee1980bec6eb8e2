// The naming controller's second half (upstream apiextensions' NamingConditionController):
// a CRD whose names another CRD of its group holds waits, NamesAccepted False; when a CRD of
// that group changes or goes, the waiting ones are written again (their status, as it is),
// and the CRDs' store shard accepts what is free now (api/custom/naming.ts), establishing
// them once all their names are theirs.
import type { Crd } from "../../../api/custom/definition";
import { namesPending } from "../../../api/custom/naming";
import { lookupGVR } from "../../../api/registry";
import { errorMessage, isConflict, isNotFound } from "../lib/api-errors";
import type { Controller, ControllerContext } from "../runtime/controller";
import { CRDS } from "./custom-kinds";

const CRD = lookupGVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")!;

/** The CRDs of `group` other than `name` that wait on names. */
function waitingIn(ctx: ControllerContext, group: string | undefined, name: string | undefined): string[] {
  return (ctx.informers.list(CRDS) as Crd[])
    .filter((c) => c.spec?.group === group && c.metadata.name !== name && namesPending(c))
    .map((c) => c.metadata.name!);
}

async function syncCrd(name: string, ctx: ControllerContext): Promise<void> {
  const crd = ctx.informers.get(CRDS, name) as Crd | undefined;
  if (!crd || !namesPending(crd) || crd.metadata.deletionTimestamp) return;
  try {
    await ctx.api.update(CRD, crd, "status");
  } catch (e) {
    if (isNotFound(e)) return;
    if (isConflict(e)) {
      ctx.enqueue(name);
      return;
    }
    console.warn(`crd ${name}: names: ${errorMessage(e)}`);
    throw e;
  }
}

export const crdNaming: Controller = {
  name: "crd-naming",
  workers: 1,
  watches: {
    // a change of one CRD may free names another of its group waits on
    [CRDS]: (crd, _old, ctx) => waitingIn(ctx, (crd as Crd).spec?.group, crd.metadata.name),
  },
  resync: (ctx) =>
    (ctx.informers.list(CRDS) as Crd[]).filter((c) => namesPending(c)).map((c) => c.metadata.name!),
  sync: syncCrd,
};
