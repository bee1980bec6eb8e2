// scheduling.k8s.io/v1 priorityclasses: the priorities pods get by name (Priority admission
// resolves a pod's priorityClassName; the scheduler's queue and preemption use the value).
// Upstream's validation (user classes up to 1e9, the system- prefix reserved for the two system
// classes, value and preemptionPolicy immutable), defaults and table; the system classes every
// cluster has.
import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { validateMeta } from "../validation/metadata";
import { ageColumn, column, nameColumn } from "./common";

export const HIGHEST_USER_PRIORITY = 1_000_000_000;
const SYSTEM_CRITICAL = 2 * HIGHEST_USER_PRIORITY;
const PREEMPTION_POLICIES = ["PreemptLowerPriority", "Never"];

/** The classes the apiserver makes at start (upstream's SystemPriorityClasses), in its order. */
export const SYSTEM_PRIORITY_CLASSES = [
  {
    name: "system-node-critical",
    value: SYSTEM_CRITICAL + 1000,
    description: "Used for system critical pods that must not be moved from their current node.",
  },
  {
    name: "system-cluster-critical",
    value: SYSTEM_CRITICAL,
    description:
      "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
  },
];

/** Why a system- name is not one of the system classes as they are, if it is not. */
function notSystemClass(name: string, value: unknown, globalDefault: unknown): string | undefined {
  const known = SYSTEM_PRIORITY_CLASSES.find((c) => c.name === name);
  if (!known) return `${name} is not a known system priority class`;
  if (value !== known.value) return `value of ${name} PriorityClass must be ${known.value}`;
  if ((globalDefault ?? false) !== false) return `globalDefault of ${name} PriorityClass must be false`;
  return undefined;
}

/** spec.preemptionPolicy-like fields: required when empty, one of the two policies. */
export function validatePreemptionPolicy(policy: unknown, path: string): StatusCause[] {
  if (policy == null) return [];
  if (policy === "") return [field.required(path)];
  return PREEMPTION_POLICIES.includes(String(policy))
    ? []
    : [field.notSupported(path, policy, PREEMPTION_POLICIES)];
}

export function validatePriorityClass(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: false });
  const pc = obj as any;
  const name = obj.metadata.name ?? "";
  if (old) {
    if (pc.value !== (old as any).value)
      causes.push(field.forbidden("value", "may not be changed in an update."));
    if ((pc.preemptionPolicy ?? null) !== ((old as any).preemptionPolicy ?? null))
      causes.push(field.invalid("preemptionPolicy", pc.preemptionPolicy ?? null, "field is immutable"));
    return causes;
  }
  if (name.startsWith("system-")) {
    const why = notSystemClass(name, pc.value, pc.globalDefault);
    if (why)
      causes.push(
        field.forbidden(
          "metadata.name",
          `priority class names with 'system-' prefix are reserved for system use only. error: ${why}`,
        ),
      );
  } else if (typeof pc.value === "number" && pc.value > HIGHEST_USER_PRIORITY)
    causes.push(
      field.forbidden(
        "value",
        `maximum allowed value of a user defined priority is ${HIGHEST_USER_PRIORITY}`,
      ),
    );
  causes.push(...validatePreemptionPolicy(pc.preemptionPolicy, "preemptionPolicy"));
  return causes;
}

export const priorityclasses: ResourceDef = {
  group: "scheduling.k8s.io",
  version: "v1",
  resource: "priorityclasses",
  kind: "PriorityClass",
  listKind: "PriorityClassList",
  singular: "priorityclass",
  namespaced: false,
  shortNames: ["pc"],
  verbs: STANDARD_VERBS,
  strategy: {
    defaults: (obj) => {
      const pc = obj as any;
      pc.value ??= 0;
      pc.preemptionPolicy ??= "PreemptLowerPriority";
    },
    prepareForCreate: (obj) => {
      obj.metadata.generation = 1;
    },
    validate: validatePriorityClass,
    columns: [
      nameColumn,
      column(
        "Value",
        "integer",
        "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.",
        (o: any) => o.value ?? 0,
      ),
      column(
        "Global-Default",
        "boolean",
        "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority.",
        (o: any) => o.globalDefault === true,
      ),
      ageColumn,
      column(
        "PreemptionPolicy",
        "string",
        "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.",
        (o: any) => o.preemptionPolicy ?? "",
      ),
    ],
  },
};
