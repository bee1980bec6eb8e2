// policy/v1 poddisruptionbudgets: upstream's validation (minAvailable or maxUnavailable, each
// an int or a percent), the status the disruption controller keeps and evictions spend, and
// the columns of `kubectl get pdb`. Nothing is defaulted upstream.

import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { selectorMatches, validateLabelSelector, validateMeta } from "../validation/metadata";
import { ageColumn, column, isObject, nameColumn } from "./common";
import { int, intOrPercent } from "./workloads";

const POLICIES = ["AlwaysAllow", "IfHealthyBudget"];

/** Whether a budget covers a pod of its namespace: a null selector covers none, an empty one all. */
export const pdbCovers = (pdb: KubeObject, pod: KubeObject): boolean =>
  pdb.metadata.namespace === pod.metadata.namespace &&
  selectorMatches(pdb.spec?.selector, pod.metadata.labels);

export function validatePodDisruptionBudget(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true });
  const spec = isObject(obj.spec) ? obj.spec : {};
  if (spec.minAvailable != null && spec.maxUnavailable != null)
    causes.push(field.invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set"));
  causes.push(...intOrPercent(spec.minAvailable, "spec.minAvailable", true).causes);
  causes.push(...intOrPercent(spec.maxUnavailable, "spec.maxUnavailable", true).causes);
  if (isObject(spec.selector)) causes.push(...validateLabelSelector(spec.selector, "spec.selector"));
  const policy = spec.unhealthyPodEvictionPolicy;
  if (policy != null && !POLICIES.includes(policy))
    causes.push(field.notSupported("spec.unhealthyPodEvictionPolicy", policy, POLICIES));
  return causes;
}

/** An int-or-percent as kubectl prints it, or N/A. */
const shown = (v: unknown) => (v === undefined || v === null ? "N/A" : String(v));

export const poddisruptionbudgets: ResourceDef = {
  group: "policy",
  version: "v1",
  resource: "poddisruptionbudgets",
  kind: "PodDisruptionBudget",
  listKind: "PodDisruptionBudgetList",
  singular: "poddisruptionbudget",
  namespaced: true,
  shortNames: ["pdb"],
  verbs: STANDARD_VERBS,
  subresources: { status: { kind: "PodDisruptionBudget", verbs: ["get", "patch", "update"] } },
  strategy: {
    validate: validatePodDisruptionBudget,
    prepareForCreate: (obj) => {
      // the four counters are not omitempty upstream
      obj.status = { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 };
    },
    generation: true,
    columns: [
      nameColumn,
      column("Min Available", "string", "The minimum number of pods that must be available.", (o) =>
        shown(o.spec?.minAvailable),
      ),
      column("Max Unavailable", "string", "The maximum number of pods that may be unavailable.", (o) =>
        shown(o.spec?.maxUnavailable),
      ),
      column(
        "Allowed Disruptions",
        "integer",
        "Calculated number of pods that may be disrupted at this time.",
        (o) => int(o.status?.disruptionsAllowed),
      ),
      ageColumn,
    ],
  },
};
