// apps/v1 statefulsets: upstream's defaults (OrderedReady, RollingUpdate with partition 0,
// one replica, revisionHistoryLimit 10, the PVC retention policy), its validation and the
// fields an update may change, and the columns of `kubectl get sts`.

import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { deepEqual, validateMeta } from "../validation/metadata";
import {
  ageColumn,
  column,
  containersColumn,
  dropZeroTimestamp,
  ensureObject,
  imagesColumn,
  isObject,
  nameColumn,
  nonNegative,
} from "./common";
import { defaultTemplate } from "./pod-defaults";
import { int, SCALE_AND_STATUS, validateSelectorAndTemplate } from "./workloads";

const POLICIES = ["OrderedReady", "Parallel"];
const STRATEGIES = ["RollingUpdate", "OnDelete"];
const RETENTION = ["Retain", "Delete"];
/** The spec fields an update may change (upstream ValidateStatefulSetUpdate). */
const MUTABLE = [
  "replicas",
  "ordinals",
  "template",
  "updateStrategy",
  "persistentVolumeClaimRetentionPolicy",
  "minReadySeconds",
];

export function defaultStatefulSet(obj: KubeObject): void {
  const spec = ensureObject(obj, "spec");
  if (!spec.podManagementPolicy) spec.podManagementPolicy = "OrderedReady";
  const strategy = ensureObject(spec, "updateStrategy");
  // an explicit RollingUpdate without rollingUpdate keeps none, as upstream
  if (!strategy.type) {
    strategy.type = "RollingUpdate";
    ensureObject(strategy, "rollingUpdate");
  }
  if (
    strategy.type === "RollingUpdate" &&
    isObject(strategy.rollingUpdate) &&
    strategy.rollingUpdate.partition == null
  )
    strategy.rollingUpdate.partition = 0;
  const retention = ensureObject(spec, "persistentVolumeClaimRetentionPolicy");
  if (!retention.whenDeleted) retention.whenDeleted = "Retain";
  if (!retention.whenScaled) retention.whenScaled = "Retain";
  if (spec.replicas == null) spec.replicas = 1;
  if (spec.revisionHistoryLimit == null) spec.revisionHistoryLimit = 10;
  defaultTemplate(spec.template);
  // each claim template is defaulted as a claim is (volume mode, and a Pending status)
  for (const t of Array.isArray(spec.volumeClaimTemplates) ? spec.volumeClaimTemplates : [])
    if (isObject(t)) {
      dropZeroTimestamp(t);
      ensureObject(t, "spec").volumeMode ??= "Filesystem";
      ensureObject(t, "status").phase ||= "Pending";
    }
}

/**
 * A pod's volumes with one claim volume per claim template first, on the claim `claimName`
 * names; a volume of the pod's own with a template's name gives way (upstream's updateStorage).
 */
export function withTemplateClaims(volumes: unknown, templates: any[], claimName: (t: any) => string): any[] {
  const names = new Set(templates.map((t) => t?.metadata?.name));
  return [
    ...templates.map((t) => ({
      name: t?.metadata?.name,
      persistentVolumeClaim: { claimName: claimName(t) },
    })),
    ...(Array.isArray(volumes) ? volumes : []).filter((v: any) => !names.has(v?.name)),
  ];
}

/** The spec with a claim volume per volumeClaimTemplate in its template, as its pods will have. */
function withClaimTemplates(spec: any): any {
  const claims = Array.isArray(spec.volumeClaimTemplates) ? spec.volumeClaimTemplates : [];
  if (!claims.length || !isObject(spec.template?.spec)) return spec;
  const volumes = withTemplateClaims(spec.template.spec.volumes, claims, (t) => t?.metadata?.name);
  return { ...spec, template: { ...spec.template, spec: { ...spec.template.spec, volumes } } };
}

function validateSpec(spec: any, old: KubeObject | undefined): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!spec.podManagementPolicy) causes.push(field.required("spec.podManagementPolicy"));
  else if (!POLICIES.includes(spec.podManagementPolicy))
    causes.push(
      field.invalid(
        "spec.podManagementPolicy",
        spec.podManagementPolicy,
        "must be 'OrderedReady' or 'Parallel'",
      ),
    );
  const strategy = isObject(spec.updateStrategy) ? spec.updateStrategy : {};
  if (!strategy.type) causes.push(field.required("spec.updateStrategy"));
  else if (!STRATEGIES.includes(strategy.type))
    causes.push(field.invalid("spec.updateStrategy", strategy, "must be 'RollingUpdate' or 'OnDelete'"));
  else if (strategy.type === "OnDelete" && strategy.rollingUpdate != null)
    causes.push(
      field.invalid(
        "spec.updateStrategy.rollingUpdate",
        strategy.rollingUpdate,
        "only allowed for updateStrategy 'RollingUpdate'",
      ),
    );
  else if (isObject(strategy.rollingUpdate))
    causes.push(
      ...nonNegative(strategy.rollingUpdate.partition, "spec.updateStrategy.rollingUpdate.partition"),
    );
  const retention = isObject(spec.persistentVolumeClaimRetentionPolicy)
    ? spec.persistentVolumeClaimRetentionPolicy
    : {};
  for (const k of ["whenDeleted", "whenScaled"]) {
    const v = retention[k];
    if (v !== undefined && !RETENTION.includes(v))
      causes.push(field.notSupported(`spec.persistentVolumeClaimRetentionPolicy.${k}`, v, RETENTION));
  }
  causes.push(...nonNegative(spec.replicas, "spec.replicas"));
  causes.push(...nonNegative(spec.minReadySeconds, "spec.minReadySeconds"));
  // a negative revisionHistoryLimit is allowed upstream: history is then never pruned
  if (isObject(spec.ordinals)) causes.push(...nonNegative(spec.ordinals.start, "spec.ordinals.start"));
  // immutability of the selector is part of the spec rule below
  // the pods' mounts may name the claim templates (each pod gets a claim volume of that name)
  causes.push(
    ...validateSelectorAndTemplate(withClaimTemplates(spec), undefined, "statefulset", "StatefulSet"),
  );
  if (old && isObject(old.spec)) {
    const rest = (s: any) => Object.fromEntries(Object.entries(s).filter(([k]) => !MUTABLE.includes(k)));
    if (!deepEqual(rest(spec), rest(old.spec)))
      causes.push(
        field.forbidden(
          "spec",
          "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ),
      );
  }
  return causes;
}

/**
 * rollingUpdate.maxUnavailable is behind an alpha feature gate that is off upstream by
 * default: dropped unless the stored object already has it, as upstream drops it.
 */
function dropMaxUnavailable(obj: KubeObject): void {
  const ru = obj.spec?.updateStrategy?.rollingUpdate;
  if (isObject(ru)) delete ru.maxUnavailable;
}

export function validateStatefulSet(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true });
  causes.push(...validateSpec(isObject(obj.spec) ? obj.spec : {}, old));
  return causes;
}

export const statefulsets: ResourceDef = {
  group: "apps",
  version: "v1",
  resource: "statefulsets",
  kind: "StatefulSet",
  listKind: "StatefulSetList",
  singular: "statefulset",
  namespaced: true,
  shortNames: ["sts"],
  categories: ["all"],
  verbs: STANDARD_VERBS,
  subresources: SCALE_AND_STATUS("StatefulSet"),
  strategy: {
    defaults: defaultStatefulSet,
    validate: validateStatefulSet,
    prepareForCreate: (obj) => {
      // replicas and availableReplicas are not omitempty upstream
      obj.status = { replicas: 0, availableReplicas: 0 };
      dropMaxUnavailable(obj);
    },
    prepareForUpdate: (obj, old) => {
      if (old.spec?.updateStrategy?.rollingUpdate?.maxUnavailable == null) dropMaxUnavailable(obj);
    },
    generation: true,
    columns: [
      nameColumn,
      column(
        "Ready",
        "string",
        "Number of the pod with ready state",
        (o) => `${int(o.status?.readyReplicas)}/${int(o.spec?.replicas)}`,
      ),
      ageColumn,
      containersColumn,
      imagesColumn,
    ],
  },
};
