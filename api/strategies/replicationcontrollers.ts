// core/v1 replicationcontrollers: the ReplicaSet's forerunner, with a plain map of labels as
// its selector (defaulted, with the controller's own labels, from the template's), upstream's
// validation and table. The ReplicaSet controller's loop runs them.

import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { formatLabels, validateLabels, validateMeta } from "../validation/metadata";
import {
  ageColumn,
  column,
  containersColumn,
  countKeys,
  ensureObject,
  imagesColumn,
  isObject,
  nameColumn,
  nonNegative,
} from "./common";
import { defaultTemplate } from "./pod-defaults";
import { validatePodTemplate } from "./pod-validation";
import { alwaysRestartedTemplate, int, SCALE_AND_STATUS } from "./workloads";

export function defaultReplicationController(obj: KubeObject): void {
  const spec = ensureObject(obj, "spec");
  const labels = spec.template?.metadata?.labels;
  if (isObject(labels)) {
    if (countKeys(spec.selector) === 0) spec.selector = { ...labels };
    if (countKeys(obj.metadata.labels) === 0) obj.metadata.labels = { ...labels };
  }
  if (spec.replicas == null) spec.replicas = 1;
  defaultTemplate(spec.template);
}

export function validateReplicationController(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true });
  const spec = isObject(obj.spec) ? obj.spec : {};
  causes.push(...nonNegative(spec.minReadySeconds, "spec.minReadySeconds"));
  const selector = isObject(spec.selector) ? (spec.selector as Record<string, string>) : {};
  if (countKeys(selector) === 0) causes.push(field.required("spec.selector"));
  else causes.push(...validateLabels(selector, "spec.selector"));
  causes.push(...nonNegative(spec.replicas, "spec.replicas"));
  const template = spec.template;
  if (!isObject(template)) {
    causes.push(field.required("spec.template"));
    return causes;
  }
  causes.push(...validatePodTemplate(template, "spec.template", { matchLabels: selector }));
  causes.push(...alwaysRestartedTemplate(template, "ReplicationController"));
  return causes;
}

export const replicationcontrollers: ResourceDef = {
  group: "",
  version: "v1",
  resource: "replicationcontrollers",
  kind: "ReplicationController",
  listKind: "ReplicationControllerList",
  singular: "replicationcontroller",
  namespaced: true,
  shortNames: ["rc"],
  categories: ["all"],
  verbs: STANDARD_VERBS,
  subresources: SCALE_AND_STATUS("ReplicationController"),
  strategy: {
    defaults: defaultReplicationController,
    validate: validateReplicationController,
    prepareForCreate: (obj) => {
      // replicas is not omitempty upstream
      obj.status = { replicas: 0 };
    },
    generation: true,
    columns: [
      nameColumn,
      column(
        "Desired",
        "integer",
        "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        (o) => int(o.spec?.replicas),
      ),
      column(
        "Current",
        "integer",
        "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        (o) => int(o.status?.replicas),
      ),
      column("Ready", "integer", "The number of ready replicas for this replication controller.", (o) =>
        int(o.status?.readyReplicas),
      ),
      ageColumn,
      containersColumn,
      imagesColumn,
      column(
        "Selector",
        "string",
        "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        (o) => formatLabels(o.spec?.selector),
        1,
      ),
    ],
  },
};
