// apps/v1 daemonsets: upstream's defaults (RollingUpdate, maxUnavailable 1, maxSurge 0,
// revisionHistoryLimit 10), its validation, the template generation it keeps in the
// `deprecated.daemonset.template.generation` annotation, and the columns of `kubectl get ds`.

import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { deepEqual, formatLabelSelector, formatLabels, validateMeta } from "../validation/metadata";
import {
  ageColumn,
  column,
  containersColumn,
  ensureObject,
  imagesColumn,
  isObject,
  nameColumn,
  nonNegative,
} from "./common";
import { defaultTemplate } from "./pod-defaults";
import { int, intOrPercent, validateSelectorAndTemplate } from "./workloads";

/** Where apps/v1 keeps a DaemonSet's template generation (its internal spec.templateGeneration). */
export const TEMPLATE_GENERATION = "deprecated.daemonset.template.generation";

const STRATEGIES = ["RollingUpdate", "OnDelete"];

export function defaultDaemonSet(obj: KubeObject): void {
  const spec = ensureObject(obj, "spec");
  const strategy = ensureObject(spec, "updateStrategy");
  if (!strategy.type) strategy.type = "RollingUpdate";
  if (strategy.type === "RollingUpdate") {
    const ru = ensureObject(strategy, "rollingUpdate");
    if (ru.maxUnavailable == null) ru.maxUnavailable = 1;
    if (ru.maxSurge == null) ru.maxSurge = 0;
  }
  if (spec.revisionHistoryLimit == null) spec.revisionHistoryLimit = 10;
  defaultTemplate(spec.template);
}

function validateUpdateStrategy(strategy: any): StatusCause[] {
  const p = "spec.updateStrategy";
  if (!isObject(strategy)) return [];
  if (strategy.type === "OnDelete") return [];
  if (strategy.type !== "RollingUpdate") return [field.notSupported(`${p}.type`, strategy.type, STRATEGIES)];
  if (!isObject(strategy.rollingUpdate)) return [field.required(`${p}.rollingUpdate`)];
  const ru = strategy.rollingUpdate;
  const unavailable = intOrPercent(ru.maxUnavailable, `${p}.rollingUpdate.maxUnavailable`, true);
  const surge = intOrPercent(ru.maxSurge, `${p}.rollingUpdate.maxSurge`, true);
  const causes = [...unavailable.causes, ...surge.causes];
  const set = (v: unknown, zero: boolean) => v !== undefined && v !== null && !zero;
  const hasUnavailable = set(ru.maxUnavailable, unavailable.zero);
  const hasSurge = set(ru.maxSurge, surge.zero);
  if (hasUnavailable && hasSurge)
    causes.push(
      field.invalid(
        `${p}.rollingUpdate.maxSurge`,
        ru.maxSurge,
        "may not be set when maxUnavailable is non-zero",
      ),
    );
  else if (!hasUnavailable && !hasSurge)
    causes.push(field.required(`${p}.rollingUpdate.maxUnavailable`, "cannot be 0 when maxSurge is 0"));
  return causes;
}

export function validateDaemonSet(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true });
  const spec = isObject(obj.spec) ? obj.spec : {};
  causes.push(...validateSelectorAndTemplate(spec, old, "daemonset", "DaemonSet"));
  causes.push(...nonNegative(spec.minReadySeconds, "spec.minReadySeconds"));
  causes.push(...validateUpdateStrategy(spec.updateStrategy));
  causes.push(...nonNegative(spec.revisionHistoryLimit, "spec.revisionHistoryLimit"));
  return causes;
}

/** The template generation an object carries, when it is a whole number of at least 1. */
export function templateGeneration(obj: KubeObject): number | undefined {
  const v = obj.metadata.annotations?.[TEMPLATE_GENERATION];
  const n = v !== undefined && /^\d+$/.test(v) ? Number(v) : 0;
  return n >= 1 ? n : undefined;
}

function setTemplateGeneration(obj: KubeObject, n: number): void {
  obj.metadata.annotations = { ...obj.metadata.annotations, [TEMPLATE_GENERATION]: String(n) };
}

/** A new DaemonSet: status is the controller's (its four counters always shown), template generation 1. */
function prepareDaemonSet(obj: KubeObject): void {
  obj.status = {
    currentNumberScheduled: 0,
    numberMisscheduled: 0,
    desiredNumberScheduled: 0,
    numberReady: 0,
  };
  setTemplateGeneration(obj, templateGeneration(obj) ?? 1);
}

/** The template generation is the server's: kept from the stored object, plus one when the template changes. */
function prepareDaemonSetUpdate(obj: KubeObject, old: KubeObject): void {
  const before = templateGeneration(old) ?? 1;
  // compared as stored: defaults are applied to the new template after this
  const template = structuredClone(obj.spec?.template);
  if (isObject(template)) defaultTemplate(template);
  setTemplateGeneration(obj, deepEqual(template, old.spec?.template) ? before : before + 1);
}

export const daemonsets: ResourceDef = {
  group: "apps",
  version: "v1",
  resource: "daemonsets",
  kind: "DaemonSet",
  listKind: "DaemonSetList",
  singular: "daemonset",
  namespaced: true,
  shortNames: ["ds"],
  categories: ["all"],
  verbs: STANDARD_VERBS,
  subresources: { status: { kind: "DaemonSet", verbs: ["get", "patch", "update"] } },
  strategy: {
    defaults: defaultDaemonSet,
    validate: validateDaemonSet,
    prepareForCreate: prepareDaemonSet,
    prepareForUpdate: prepareDaemonSetUpdate,
    generation: true,
    columns: [
      nameColumn,
      column(
        "Desired",
        "integer",
        "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
        (o) => int(o.status?.desiredNumberScheduled),
      ),
      column(
        "Current",
        "integer",
        "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
        (o) => int(o.status?.currentNumberScheduled),
      ),
      column(
        "Ready",
        "integer",
        "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.",
        (o) => int(o.status?.numberReady),
      ),
      column("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod", (o) =>
        int(o.status?.updatedNumberScheduled),
      ),
      column(
        "Available",
        "integer",
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
        (o) => int(o.status?.numberAvailable),
      ),
      column(
        "Node Selector",
        "string",
        "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/",
        (o) => formatLabels(o.spec?.template?.spec?.nodeSelector),
      ),
      ageColumn,
      containersColumn,
      imagesColumn,
      column(
        "Selector",
        "string",
        "A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        (o) => formatLabelSelector(o.spec?.selector),
        1,
      ),
    ],
  },
};
