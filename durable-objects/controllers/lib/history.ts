// The ControllerRevisions of a DaemonSet or a StatefulSet (upstream pkg/controller/history and
// the two controllers' use of it): one per distinct template, named <owner>-<hash>, holding the
// strategic merge patch that puts that template back (what `kubectl rollout undo` sends),
// numbered in the order the templates were current; the oldest beyond
// spec.revisionHistoryLimit are deleted unless still in use.
import { lookupGVR } from "../../../api/registry";
import type { KubeObject } from "../../../api/types";
import { REVISION_HASH } from "../daemonset/pods";
import { computeHash } from "../deployment/revisions";
import type { ControllerContext } from "../runtime/controller";
import { isAlreadyExists, isNotFound } from "./api-errors";
import { claim } from "./claim";
import { stableStringify } from "./json-equal";
import { pathFor } from "./objects";
import { newControllerRef } from "./owners";

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

/** The owners of revisions, and the label each puts its revision's hash under. */
export type HistoryOwner = "DaemonSet" | "StatefulSet";
const HASH_LABEL: Record<HistoryOwner, string> = {
  DaemonSet: REVISION_HASH,
  StatefulSet: "controller.kubernetes.io/hash",
};

/** The revision hash of the owner's current template. */
export function templateHash(owner: KubeObject): string {
  return computeHash(owner.spec?.template, owner.status?.collisionCount);
}

/** The hash a revision carries under its owner kind's label. */
export const revisionHash = (cr: KubeObject, kind: HistoryOwner): string | undefined =>
  cr.metadata.labels?.[HASH_LABEL[kind]];

/**
 * The revision of the owner's current template (made, or renumbered to come after the others
 * when an old template is current again) and the others. Duplicates of it are deleted, keeping
 * the newest.
 */
export async function constructHistory(
  ctx: ControllerContext,
  owner: KubeObject,
  kind: HistoryOwner,
): Promise<{ current: KubeObject; old: KubeObject[] }> {
  const ns = owner.metadata.namespace;
  const histories = await claim(ctx, owner, "apps/v1", kind, CR, ctx.informers.list(REVISIONS, ns));
  const patch = stableStringify(templatePatch(owner));
  const matching: KubeObject[] = [];
  const old: KubeObject[] = [];
  for (const h of histories) (stableStringify(h.data) === patch ? matching : old).push(h);
  const next = Math.max(0, ...old.map(revisionOf)) + 1;
  if (!matching.length) return { current: await snapshot(ctx, owner, kind, next), old };
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

async function snapshot(
  ctx: ControllerContext,
  owner: KubeObject,
  kind: HistoryOwner,
  revision: number,
): Promise<KubeObject> {
  const hash = templateHash(owner);
  const cr: KubeObject = {
    apiVersion: "apps/v1",
    kind: "ControllerRevision",
    metadata: {
      name: `${owner.metadata.name}-${hash}`,
      namespace: owner.metadata.namespace,
      labels: { ...owner.spec?.template?.metadata?.labels, [HASH_LABEL[kind]]: hash },
      ownerReferences: [newControllerRef(owner, "apps/v1", kind)],
    },
    data: templatePatch(owner),
    revision,
  };
  if (owner.metadata.annotations) cr.metadata.annotations = { ...owner.metadata.annotations };
  try {
    return await ctx.api.create(CR, cr);
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
    // the name is taken: by this template (a write we have not seen yet), or by another one
    // whose hash collides, which the collision count in status moves past on the next sync
    const existing: KubeObject = await ctx.api.request(
      "GET",
      pathFor(CR, owner.metadata.namespace, cr.metadata.name),
    );
    const ours = existing.metadata.ownerReferences?.some((r) => r.uid === owner.metadata.uid && r.controller);
    if (ours && stableStringify(existing.data) === stableStringify(cr.data)) return existing;
    throw new Error(`controllerrevision ${cr.metadata.name} already exists with another template`);
  }
}

/** Deletes the oldest old revisions beyond spec.revisionHistoryLimit that are not `live`. */
export async function cleanupHistory(
  ctx: ControllerContext,
  owner: KubeObject,
  old: KubeObject[],
  live: (cr: KubeObject) => boolean,
): Promise<void> {
  let toKill = old.length - (owner.spec?.revisionHistoryLimit ?? 10);
  if (toKill <= 0) return;
  for (const h of [...old].sort((a, b) => revisionOf(a) - revisionOf(b))) {
    if (toKill <= 0) break;
    if (live(h)) continue;
    await ctx.api
      .remove(CR, h.metadata.namespace, h.metadata.name!, { preconditions: { uid: h.metadata.uid } })
      .catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    toKill--;
  }
}
