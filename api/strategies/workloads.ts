// apps/v1 deployments and replicasets.

import { field, type StatusCause } from "../errors";
import type { ResourceDef, TableColumn } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import {
  deepEqual,
  formatLabelSelector,
  formatLabels,
  type LabelSelector,
  validateLabelSelector,
  validateMeta,
} from "../validation/metadata";
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
import { validatePodTemplate } from "./pod-validation";

export const SCALE_AND_STATUS = (kind: string) => ({
  scale: { kind: "Scale", group: "autoscaling", version: "v1", verbs: ["get", "patch", "update"] },
  status: { kind, verbs: ["get", "patch", "update"] },
});

/**
 * What every workload's pod template must be: restarted always, with no deadline. `kind` names
 * the workload in the deadline's refusal, as upstream words it per kind.
 */
export function alwaysRestartedTemplate(template: any, kind: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const rp = template.spec?.restartPolicy;
  if (rp && rp !== "Always")
    causes.push(field.notSupported("spec.template.spec.restartPolicy", rp, ["Always"]));
  if (template.spec?.activeDeadlineSeconds != null)
    causes.push(
      field.forbidden(
        "spec.template.spec.activeDeadlineSeconds",
        `activeDeadlineSeconds in ${kind} is not Supported`,
      ),
    );
  return causes;
}

/**
 * The selector/template checks the apps/v1 controllers share. `owner` is the word upstream's
 * empty-selector message names ("deployment" for ReplicaSets too); `kind` the one its
 * template deadline refusal names.
 */
export function validateSelectorAndTemplate(
  spec: any,
  old: KubeObject | undefined,
  owner = "deployment",
  kind = "ReplicaSet",
): StatusCause[] {
  const causes: StatusCause[] = [];
  const sel: LabelSelector | undefined = isObject(spec.selector) ? spec.selector : undefined;
  if (!sel) causes.push(field.required("spec.selector"));
  else {
    causes.push(...validateLabelSelector(sel, "spec.selector"));
    if (Object.keys(sel.matchLabels ?? {}).length + (sel.matchExpressions ?? []).length === 0)
      causes.push(field.invalid("spec.selector", sel, `empty selector is invalid for ${owner}`));
  }
  const template = spec.template;
  causes.push(...validatePodTemplate(template, "spec.template", sel));
  if (!isObject(template)) return causes;
  causes.push(...alwaysRestartedTemplate(template, kind));
  if (old && isObject(old.spec) && !deepEqual(spec.selector, old.spec.selector))
    causes.push(field.invalid("spec.selector", spec.selector ?? null, "field is immutable"));
  return causes;
}

const INT_OR_PERCENT = /^(\d+)%$/;

/** An int-or-percent field's checks, and whether its value is zero. */
export function intOrPercent(
  value: unknown,
  path: string,
  maxPercent: boolean,
): { causes: StatusCause[]; zero: boolean } {
  if (value === undefined || value === null) return { causes: [], zero: false };
  if (typeof value === "number") return { causes: nonNegative(value, path), zero: value === 0 };
  const m = typeof value === "string" ? INT_OR_PERCENT.exec(value) : null;
  if (!m)
    return {
      causes: [
        field.invalid(
          path,
          value,
          "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
        ),
      ],
      zero: false,
    };
  const n = Number(m[1]);
  const causes = maxPercent && n > 100 ? [field.invalid(path, value, "must not be greater than 100%")] : [];
  return { causes, zero: n === 0 };
}

export function validateDeployment(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true });
  const spec = isObject(obj.spec) ? obj.spec : {};
  causes.push(...nonNegative(spec.replicas, "spec.replicas"));
  causes.push(...validateSelectorAndTemplate(spec, old));
  const strategy = isObject(spec.strategy) ? spec.strategy : {};
  const types = ["Recreate", "RollingUpdate"];
  if (!strategy.type) causes.push(field.required("spec.strategy.type"));
  else if (!types.includes(strategy.type))
    causes.push(field.notSupported("spec.strategy.type", strategy.type, types));
  if (strategy.type === "Recreate" && strategy.rollingUpdate)
    causes.push(
      field.forbidden(
        "spec.strategy.rollingUpdate",
        "may not be specified when strategy `type` is 'Recreate'",
      ),
    );
  if (strategy.type === "RollingUpdate" && isObject(strategy.rollingUpdate)) {
    const p = "spec.strategy.rollingUpdate";
    const unavailable = intOrPercent(strategy.rollingUpdate.maxUnavailable, `${p}.maxUnavailable`, true);
    const surge = intOrPercent(strategy.rollingUpdate.maxSurge, `${p}.maxSurge`, false);
    causes.push(...surge.causes, ...unavailable.causes);
    if (unavailable.zero && surge.zero)
      causes.push(
        field.invalid(
          `${p}.maxUnavailable`,
          strategy.rollingUpdate.maxUnavailable,
          "may not be 0 when `maxSurge` is 0",
        ),
      );
  }
  causes.push(...nonNegative(spec.revisionHistoryLimit, "spec.revisionHistoryLimit"));
  causes.push(...nonNegative(spec.minReadySeconds, "spec.minReadySeconds"));
  if (typeof spec.progressDeadlineSeconds === "number") {
    causes.push(...nonNegative(spec.progressDeadlineSeconds, "spec.progressDeadlineSeconds"));
    if (spec.progressDeadlineSeconds <= (spec.minReadySeconds ?? 0))
      causes.push(
        field.invalid(
          "spec.progressDeadlineSeconds",
          spec.progressDeadlineSeconds,
          "must be greater than minReadySeconds",
        ),
      );
  }
  return causes;
}

export function validateReplicaSet(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true });
  const spec = isObject(obj.spec) ? obj.spec : {};
  causes.push(...nonNegative(spec.replicas, "spec.replicas"));
  causes.push(...nonNegative(spec.minReadySeconds, "spec.minReadySeconds"));
  causes.push(...validateSelectorAndTemplate(spec, old));
  return causes;
}

export function defaultDeployment(obj: KubeObject): void {
  const spec = ensureObject(obj, "spec");
  if (spec.replicas == null) spec.replicas = 1;
  const strategy = ensureObject(spec, "strategy");
  if (!strategy.type) strategy.type = "RollingUpdate";
  if (strategy.type === "RollingUpdate") {
    const ru = ensureObject(strategy, "rollingUpdate");
    if (ru.maxUnavailable == null) ru.maxUnavailable = "25%";
    if (ru.maxSurge == null) ru.maxSurge = "25%";
  }
  if (spec.revisionHistoryLimit == null) spec.revisionHistoryLimit = 10;
  if (spec.progressDeadlineSeconds == null) spec.progressDeadlineSeconds = 600;
  defaultTemplate(spec.template);
}

export function defaultReplicaSet(obj: KubeObject): void {
  const spec = ensureObject(obj, "spec");
  if (spec.replicas == null) spec.replicas = 1;
  defaultTemplate(spec.template);
}

const prepare = (obj: KubeObject) => {
  // status is reset on create; a ReplicaSet's replicas count is not omitempty upstream
  obj.status = obj.kind === "ReplicaSet" ? { replicas: 0 } : {};
  obj.metadata.generation = 1;
};

export const int = (v: unknown) => (typeof v === "number" ? v : 0);

export const deployments: ResourceDef = {
  group: "apps",
  version: "v1",
  resource: "deployments",
  kind: "Deployment",
  listKind: "DeploymentList",
  singular: "deployment",
  namespaced: true,
  shortNames: ["deploy"],
  categories: ["all"],
  verbs: STANDARD_VERBS,
  subresources: SCALE_AND_STATUS("Deployment"),
  strategy: {
    defaults: defaultDeployment,
    validate: validateDeployment,
    prepareForCreate: prepare,
    generation: true,
    columns: [
      nameColumn,
      column(
        "Ready",
        "string",
        "Number of the pod with ready state",
        (o) => `${int(o.status?.readyReplicas)}/${int(o.spec?.replicas)}`,
      ),
      column(
        "Up-to-date",
        "string",
        "Total number of non-terminating pods targeted by this deployment that have the desired template spec.",
        (o) => int(o.status?.updatedReplicas),
      ),
      column(
        "Available",
        "string",
        "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.",
        (o) => int(o.status?.availableReplicas),
      ),
      ageColumn,
      containersColumn,
      imagesColumn,
      column(
        "Selector",
        "string",
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment. It must match the pod template's labels.",
        (o) => {
          const s = formatLabelSelector(o.spec?.selector);
          return s === "<none>" ? "" : s;
        },
        1,
      ),
    ],
  },
};

export const replicasets: ResourceDef = {
  group: "apps",
  version: "v1",
  resource: "replicasets",
  kind: "ReplicaSet",
  listKind: "ReplicaSetList",
  singular: "replicaset",
  namespaced: true,
  shortNames: ["rs"],
  categories: ["all"],
  verbs: STANDARD_VERBS,
  subresources: SCALE_AND_STATUS("ReplicaSet"),
  strategy: {
    defaults: defaultReplicaSet,
    validate: validateReplicaSet,
    prepareForCreate: prepare,
    generation: true,
    columns: [
      nameColumn,
      column(
        "Desired",
        "integer",
        "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset/#how-a-replicaset-works",
        (o) => int(o.spec?.replicas),
      ),
      column(
        "Current",
        "integer",
        "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset/#how-a-replicaset-works",
        (o) => int(o.status?.replicas),
      ),
      column(
        "Ready",
        "integer",
        "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.",
        (o) => int(o.status?.readyReplicas),
      ),
      ageColumn,
      containersColumn,
      imagesColumn,
      column(
        "Selector",
        "string",
        "Selector is a label query over pods that should match the replica count. Label keys and values that must match in order to be controlled by this replica set. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        (o) => formatLabelSelector(o.spec?.selector),
        1,
      ),
    ],
    fields: (o) => ({ "status.replicas": String(int(o.status?.replicas)) }),
  },
};

/** The autoscaling/v1 Scale a deployment or replicaset shows at its /scale subresource. */
export function scaleOf(obj: KubeObject): KubeObject {
  // a ReplicationController's selector is a map of labels
  const sel =
    obj.kind === "ReplicationController"
      ? formatLabels(obj.spec?.selector)
      : formatLabelSelector(obj.spec?.selector);
  return scaleDocument(obj, int(obj.spec?.replicas), int(obj.status?.replicas), sel === "<none>" ? "" : sel);
}

/** The autoscaling/v1 Scale of an object, with its desired and current counts and selector. */
export function scaleDocument(
  obj: KubeObject,
  replicas: number,
  current: number,
  selector: string,
): KubeObject {
  const m = obj.metadata ?? {};
  return {
    apiVersion: "autoscaling/v1",
    kind: "Scale",
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      creationTimestamp: m.creationTimestamp,
    },
    spec: { replicas },
    status: { replicas: current, selector },
  };
}

/** `kubectl get --subresource=scale`: upstream's columns for a Scale. */
export const scaleColumns: TableColumn[] = [
  nameColumn,
  column("Desired", "integer", "replicas is the desired number of instances for the scaled object.", (o) =>
    int(o.spec?.replicas),
  ),
  column(
    "Available",
    "integer",
    "replicas is the actual number of observed instances of the scaled object.",
    (o) => int(o.status?.replicas),
  ),
  ageColumn,
];

/** ValidateScale: replicas must not be negative. */
export function validateScale(scale: KubeObject): StatusCause[] {
  return nonNegative(scale.spec?.replicas, "spec.replicas");
}
