// The names of the CustomResourceDefinitions of one API group, claimed first come, first
// served, as upstream's naming controller claims them: a CRD's plural, singular and short
// names must not be another CRD's resource names, nor its kind and list kind another's kinds.
// A name taken by another CRD is not accepted (status.acceptedNames keeps what it had, and
// NamesAccepted is False with the conflict); the CRD is established once its names are all
// accepted, and stays established after that. This runs in the CRDs' store shard at every
// write (an Allocator), so two CRDs written at once cannot both claim one name; a CRD left
// waiting is looked at again when another of its group changes or goes
// (durable-objects/controllers/crd/naming.ts).

import { deepEqual, isObject } from "../patch/util";
import type { Allocator, AllocatorContext } from "../resource";
import type { KubeObject } from "../types";
import { type Crd, setCrdCondition } from "./definition";

export interface CrdNames {
  plural?: string;
  singular?: string;
  shortNames?: string[];
  kind?: string;
  listKind?: string;
  categories?: string[];
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

const resourceKey = (group: string, name: string) => `resource:${group}:${name}`;
const kindKey = (group: string, name: string) => `kind:${group}:${name}`;

const namesOf = (crd: Crd): CrdNames =>
  isObject(crd.spec?.names) ? (crd.spec.names as CrdNames) : ({} as CrdNames);
const acceptedOf = (crd: Crd | undefined): CrdNames =>
  isObject(crd?.status?.acceptedNames) ? (crd.status.acceptedNames as CrdNames) : {};

/** Whether the CRD's names wait on another CRD: some are not accepted yet. */
export function namesPending(crd: Crd): boolean {
  const accepted = crd.status?.conditions?.find((c: Condition) => c.type === "NamesAccepted");
  return accepted?.status !== "True";
}

/**
 * The names the CRD asks for that other CRDs of its group leave it (upstream's
 * calculateNamesAndConditions), with the NamesAccepted condition they give.
 */
export function acceptNames(
  requested: CrdNames,
  accepted: CrdNames,
  taken: { resource(name: string): boolean; kind(name: string): boolean },
): { names: CrdNames; condition: Condition } {
  const names: CrdNames = { ...accepted };
  let failed: { reason: string; message: string } | undefined;
  const inUse = (name: string) => `"${name}" is already in use`;
  // a name is had when it is the one accepted already, or no other CRD holds it
  const free = (want: string | undefined, had: string | undefined, holds: (n: string) => boolean) =>
    want === had || !want || !holds(want);

  const one = (field: "plural" | "singular" | "kind" | "listKind", reason: string, kind: boolean) => {
    const want = requested[field];
    if (free(want, accepted[field], kind ? taken.kind : taken.resource)) names[field] = want;
    else failed = { reason, message: inUse(want!) };
  };
  one("plural", "PluralConflict", false);
  one("singular", "SingularConflict", false);
  if (!deepEqual(requested.shortNames, accepted.shortNames)) {
    const had = new Set(accepted.shortNames ?? []);
    const errors = [
      ...new Set(
        (requested.shortNames ?? []).filter((s) => !had.has(s) && taken.resource(s)).map((s) => inUse(s)),
      ),
    ];
    if (errors.length === 0) names.shortNames = requested.shortNames;
    else
      failed = {
        reason: "ShortNamesConflict",
        // Go's aggregate error: one message as it is, more in brackets
        message: errors.length === 1 ? errors[0] : `[${errors.join(", ")}]`,
      };
  }
  one("kind", "KindConflict", true);
  one("listKind", "ListKindConflict", true);
  names.categories = requested.categories;
  // as Go writes them: empty names and lists left out
  for (const k of Object.keys(names) as (keyof CrdNames)[]) {
    const v = names[k];
    if (v === undefined || v === "" || (Array.isArray(v) && v.length === 0)) delete names[k];
  }
  const condition: Condition = failed
    ? { type: "NamesAccepted", status: "False", ...failed }
    : { type: "NamesAccepted", status: "True", reason: "NoConflicts", message: "no conflicts found" };
  return { names, condition };
}

/** The names and conditions of a CRD about to be stored, against the other CRDs of its group. */
function settleNames(crd: Crd, old: Crd | undefined, ctx: AllocatorContext): void {
  const group = typeof crd.spec?.group === "string" ? crd.spec.group : "";
  const { names, condition } = acceptNames(namesOf(crd), acceptedOf(old), {
    resource: (n) => ctx.taken(resourceKey(group, n)),
    kind: (n) => ctx.taken(kindKey(group, n)),
  });
  // the server's status: the names accepted before this write (never a client's), and its conditions
  crd.status = { ...(isObject(crd.status) ? crd.status : {}), acceptedNames: names };
  setCrdCondition(crd, "NamesAccepted", condition.status, condition.reason, condition.message);
  // established once all its names were accepted (upstream's establishing controller), for good
  const established = crd.status.conditions.find((c: Condition) => c.type === "Established");
  if (established?.status === "True") return;
  if (condition.status === "True")
    setCrdCondition(
      crd,
      "Established",
      "True",
      "InitialNamesAccepted",
      "the initial names have been accepted",
    );
  else setCrdCondition(crd, "Established", "False", "NotAccepted", "not all names are accepted");
}

/** The CRDs' names as their store shard allocates them. */
export const crdNames: Allocator = {
  held(obj: KubeObject): string[] {
    const crd = obj as Crd;
    const group = typeof crd.spec?.group === "string" ? crd.spec.group : "";
    const a = acceptedOf(crd);
    const keys: string[] = [];
    for (const n of [a.plural, a.singular, ...(a.shortNames ?? [])]) if (n) keys.push(resourceKey(group, n));
    for (const n of [a.kind, a.listKind]) if (n) keys.push(kindKey(group, n));
    return keys;
  },
  allocate(obj, old, ctx) {
    settleNames(obj as Crd, old as Crd | undefined, ctx);
    return [];
  },
};
