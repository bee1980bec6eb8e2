// A DaemonSet's ControllerRevisions (upstream pkg/controller/daemon/update.go, history part):
// one per distinct template, named <ds>-<hash>, holding the strategic merge patch that puts
// that template back (what `kubectl rollout undo` sends), numbered in the order the templates
// were current; the oldest beyond spec.revisionHistoryLimit are deleted unless pods still use them.
import { lookupGVR } from "../../api/registry";
import type { KubeObject } from "../../api/types";
import { claim } from "./claim";
import { isAlreadyExists, isNotFound, newControllerRef, pathFor, stableStringify } from "./controller-utils";
import { REVISION_HASH } from "./daemonset-util";
import { computeHash } from "./deployment-util";
import type { ControllerContext } from "./runtime/controller";

export const REVISIONS = "apps/controllerrevisions";
const CR = lookupGVR("apps", "v1", "controllerrevisions")!;

/**
 * The patch that restores the DaemonSet's template, as upstream serialises it (keys sorted at
 * every level, the template metadata's null creationTimestamp) so that kubectl, which makes the
 * same bytes from the DaemonSet to tell whether an undo would change anything, finds them equal.
 */
export function templatePatch(ds: KubeObject): unknown {
  const template = structuredClone(ds.spec?.template ?? {});
  template.metadata = { creationTimestamp: null, ...template.metadata };
  template.$patch = "replace";
  return JSON.parse(stableStringify({ spec: { template } }));
}

const revisionOf = (cr: KubeObject) => (typeof cr.revision === "number" ? cr.revision : 0);

/** The revision hash of the DaemonSet's current template. */
export function templateHash(ds: KubeObject): string {
  return computeHash(ds.spec?.template, ds.status?.collisionCount);
}

/**
 * The current revision (made, or renumbered to come after the others when an old template is
 * current again) and the old ones. Duplicates of the current one are deleted, keeping the newest.
 */
export async function constructHistory(
  ctx: ControllerContext,
  ds: KubeObject,
): Promise<{ current: KubeObject; old: KubeObject[] }> {
  const ns = ds.metadata.namespace;
  const histories = await claim(ctx, ds, "apps/v1", "DaemonSet", CR, ctx.informers.list(REVISIONS, ns));
  const patch = stableStringify(templatePatch(ds));
  const matching: KubeObject[] = [];
  const old: KubeObject[] = [];
  for (const h of histories) (stableStringify(h.data) === patch ? matching : old).push(h);
  const next = Math.max(0, ...old.map(revisionOf)) + 1;
  if (!matching.length) return { current: await snapshot(ctx, ds, next), old };
  matching.sort((a, b) => revisionOf(b) - revisionOf(a));
  const [keep, ...dups] = matching as [KubeObject, ...KubeObject[]];
  for (const d of dups)
    await ctx.api.remove(CR, ns, d.metadata.name!, { preconditions: { uid: d.metadata.uid } }).catch((e) => {
      if (!isNotFound(e)) throw e;
    });
  if (revisionOf(keep) >= next) return { current: keep, old };
  const renumbered = await ctx.api.update(CR, { ...keep, revision: next });
  return { current: renumbered, old };
}

async function snapshot(ctx: ControllerContext, ds: KubeObject, revision: number): Promise<KubeObject> {
  const hash = templateHash(ds);
  const cr: KubeObject = {
    apiVersion: "apps/v1",
    kind: "ControllerRevision",
    metadata: {
      name: `${ds.metadata.name}-${hash}`,
      namespace: ds.metadata.namespace,
      labels: { ...ds.spec?.template?.metadata?.labels, [REVISION_HASH]: hash },
      ownerReferences: [newControllerRef(ds, "apps/v1", "DaemonSet")],
    },
    data: templatePatch(ds),
    revision,
  };
  if (ds.metadata.annotations) cr.metadata.annotations = { ...ds.metadata.annotations };
  try {
    return await ctx.api.create(CR, cr);
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
    // the name is taken: by this template (a write we have not seen yet), or by another one
    // whose hash collides, which the collision count in status moves past on the next sync
    const existing: KubeObject = await ctx.api.request(
      "GET",
      pathFor(CR, ds.metadata.namespace, cr.metadata.name),
    );
    const ours = existing.metadata.ownerReferences?.some((r) => r.uid === ds.metadata.uid && r.controller);
    if (ours && stableStringify(existing.data) === stableStringify(cr.data)) return existing;
    throw new Error(`controllerrevision ${cr.metadata.name} already exists with another template`);
  }
}

/** Deletes the oldest old revisions beyond spec.revisionHistoryLimit whose hash no pod still carries. */
export async function cleanupHistory(
  ctx: ControllerContext,
  ds: KubeObject,
  old: KubeObject[],
  pods: KubeObject[],
): Promise<void> {
  let toKill = old.length - (ds.spec?.revisionHistoryLimit ?? 10);
  if (toKill <= 0) return;
  const live = new Set(pods.map((p) => p.metadata.labels?.[REVISION_HASH]).filter(Boolean));
  for (const h of [...old].sort((a, b) => revisionOf(a) - revisionOf(b))) {
    if (toKill <= 0) break;
    if (live.has(h.metadata.labels?.[REVISION_HASH])) continue;
    await ctx.api
      .remove(CR, h.metadata.namespace, h.metadata.name!, { preconditions: { uid: h.metadata.uid } })
      .catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    toKill--;
  }
}
