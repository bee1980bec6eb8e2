// Adoption and release (upstream ControllerRefManager): an owner claims the orphans its
// selector matches and lets go of the objects it owns that no longer match.
import type { ResourceDef } from "../../../api/resource";
import type { KubeObject } from "../../../api/types";
import type { ControllerContext } from "../runtime/controller";
import { isNotFound } from "./api-errors";
import { keyOf } from "./objects";
import { controllerRefOf, newControllerRef, selects } from "./owners";

export const INDEX_CONTROLLER = "controllerUID";
export const INDEX_OWNER = "ownerUID";
export const INDEX_NODE = "nodeName";

export const byController = (o: KubeObject): string[] => {
  const r = controllerRefOf(o);
  return r ? [r.uid] : [];
};
export const byOwner = (o: KubeObject): string[] => (o.metadata.ownerReferences ?? []).map((r) => r.uid);
export const byNode = (o: KubeObject): string[] => (o.spec?.nodeName ? [o.spec.nodeName] : []);

/** The pods `owner` controls, as the cache has them now (needs the INDEX_CONTROLLER index on pods). */
export const controlledPods = (ctx: ControllerContext, owner: KubeObject): KubeObject[] =>
  ctx.informers.byIndex("/pods", INDEX_CONTROLLER, owner.metadata.uid!);

/** Asks for the pods-by-controller index that controlledPods reads. */
export const indexPodsByController = (ctx: ControllerContext): void =>
  ctx.informers.addIndex("/pods", INDEX_CONTROLLER, byController);

/**
 * The objects among `candidates` that `owner` controls after adopting matching orphans and
 * releasing owned objects that stopped matching. Objects that vanish meanwhile are skipped.
 */
export async function claim(
  ctx: ControllerContext,
  owner: KubeObject,
  ownerApiVersion: string,
  ownerKind: string,
  def: ResourceDef,
  candidates: KubeObject[],
): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  const ownerDeleting = !!owner.metadata.deletionTimestamp;
  for (const obj of candidates) {
    const ref = controllerRefOf(obj);
    const matching = selects(owner, obj);
    if (ref) {
      if (ref.uid !== owner.metadata.uid) continue;
      if (matching) {
        out.push(obj);
        continue;
      }
      if (ownerDeleting || obj.metadata.deletionTimestamp) continue;
      const refs = (obj.metadata.ownerReferences ?? []).filter((r) => r.uid !== owner.metadata.uid);
      await patchOwners(ctx, def, obj, refs);
      continue;
    }
    if (!matching || ownerDeleting || obj.metadata.deletionTimestamp) continue;
    const refs = [
      ...(obj.metadata.ownerReferences ?? []),
      newControllerRef(owner, ownerApiVersion, ownerKind),
    ];
    const adopted = await patchOwners(ctx, def, obj, refs);
    if (adopted) out.push(adopted);
  }
  return out;
}

async function patchOwners(
  ctx: ControllerContext,
  def: ResourceDef,
  obj: KubeObject,
  refs: unknown[],
): Promise<KubeObject | undefined> {
  try {
    return await ctx.api.patch(def, obj.metadata.namespace, obj.metadata.name!, {
      metadata: { ownerReferences: refs.length ? refs : null, resourceVersion: obj.metadata.resourceVersion },
    });
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/**
 * The keys of the owners of `kind` (cached as `res`) that should look at an object: its
 * controller if it has one of that kind, else, an orphan, every owner whose selector matches.
 */
export function ownersOf(obj: KubeObject, kind: string, res: string, ctx: ControllerContext): string[] {
  const ref = controllerRefOf(obj);
  if (ref) return ref.kind === kind ? [`${obj.metadata.namespace}/${ref.name}`] : [];
  return ctx.informers
    .list(res, obj.metadata.namespace)
    .filter((owner) => selects(owner, obj))
    .map(keyOf);
}

/** A watch handler for owned objects: their owners, and the old owners when labels or controller changed. */
export function ownerKeys(kind: string, res: string) {
  return (obj: KubeObject, old: KubeObject | undefined, ctx: ControllerContext): string[] => {
    const keys = new Set(ownersOf(obj, kind, res, ctx));
    if (
      old &&
      (old.metadata.labels !== obj.metadata.labels || controllerRefOf(old)?.uid !== controllerRefOf(obj)?.uid)
    )
      for (const k of ownersOf(old, kind, res, ctx)) keys.add(k);
    return [...keys];
  };
}
