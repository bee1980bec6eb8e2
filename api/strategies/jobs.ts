// batch/v1 jobs: defaulting, the selector a Job gets unless it asks to pick its own, the
// checks upstream's job validation makes, and the columns of `kubectl get jobs`.

import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { domainPrefixedPath } from "../validation/domain-path";
import {
  deepEqual,
  formatLabelSelector,
  type LabelSelector,
  selectorMatches,
  validateLabelSelector,
  validateMeta,
} from "../validation/metadata";
import {
  ageColumn,
  column,
  containersColumn,
  countKeys,
  ensureObject,
  humanDuration,
  imagesColumn,
  isObject,
  nameColumn,
  nonNegative,
} from "./common";
import { defaultPodFailurePolicy, validatePodFailurePolicy } from "./job-failure-policy";
import { validateSuccessPolicy } from "./job-success-policy";
import { defaultTemplate } from "./pod-defaults";
import { validatePodTemplate } from "./pod-validation";

/** The labels upstream puts on a Job's pods (pkg/apis/batch: the legacy pair and the prefixed pair). */
export const JOB_LABELS = {
  legacyJobName: "job-name",
  legacyControllerUid: "controller-uid",
  jobName: "batch.kubernetes.io/job-name",
  controllerUid: "batch.kubernetes.io/controller-uid",
} as const;
/** Keeps a finished pod until the Job controller has counted it. */
export const JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking";

/** The labels a generated selector puts on the template: [key, value] for a Job's uid and name. */
function generatedLabels(uid: string, name: string): [string, string][] {
  return [
    [JOB_LABELS.legacyControllerUid, uid],
    [JOB_LABELS.legacyJobName, name],
    [JOB_LABELS.controllerUid, uid],
    [JOB_LABELS.jobName, name],
  ];
}

const MAX_INT32 = 2147483647;
const MAX_MANAGED_BY = 63;
/** The controller a Job is run by when spec.managedBy does not name another. */
export const JOB_CONTROLLER_NAME = "kubernetes.io/job-controller";
/**
 * What a suspended Job that never started may still change in its template (upstream's
 * mutable scheduling directives): where its pods may run, and their labels and annotations.
 */
const SCHEDULING_DIRECTIVES = ["nodeSelector", "affinity", "tolerations", "schedulingGates"];
const MAX_INDEXED_PARALLELISM = 100000;
/** Limits of maxFailedIndexes (and, past COMPLETIONS_SOFT_LIMIT with backoffLimitPerIndex, of parallelism). */
const MAX_FAILED_INDEXES = 100_000;
const COMPLETIONS_SOFT_LIMIT = 100_000;
const HIGH_COMPLETIONS_LIMIT = 10_000;

export function defaultJob(obj: KubeObject): void {
  const spec = ensureObject(obj, "spec");
  if (spec.completions == null && spec.parallelism == null) {
    spec.completions = 1;
    spec.parallelism = 1;
  }
  if (spec.parallelism == null) spec.parallelism = 1;
  if (spec.backoffLimit == null) spec.backoffLimit = spec.backoffLimitPerIndex != null ? MAX_INT32 : 6;
  if (spec.completionMode == null) spec.completionMode = "NonIndexed";
  if (spec.suspend == null) spec.suspend = false;
  defaultPodFailurePolicy(spec.podFailurePolicy);
  if (spec.podReplacementPolicy == null)
    spec.podReplacementPolicy = spec.podFailurePolicy != null ? "Failed" : "TerminatingOrFailed";
  if (spec.manualSelector == null) spec.manualSelector = false;
  // a Job without labels takes its template's
  const templateLabels = spec.template?.metadata?.labels;
  if (isObject(templateLabels) && countKeys(obj.metadata.labels) === 0)
    obj.metadata.labels = { ...templateLabels };
  defaultTemplate(spec.template);
}

/**
 * A new Job: status is the controller's, and unless spec.manualSelector is true the Job selects
 * its pods by its own uid (given here, before validation, as upstream gives it in BeforeCreate):
 * the uid and name labels go on the template where absent, the uid label into the selector.
 */
function prepareJob(obj: KubeObject): void {
  obj.status = {};
  obj.metadata.generation = 1;
  obj.metadata.uid = crypto.randomUUID();
  const spec = ensureObject(obj, "spec");
  if (spec.manualSelector === true) return;
  const template = ensureObject(spec, "template");
  const meta = ensureObject(template, "metadata");
  const labels = ensureObject(meta, "labels");
  const uid = obj.metadata.uid;
  for (const [key, value] of generatedLabels(uid, obj.metadata.name ?? ""))
    if (!(key in labels)) labels[key] = value;
  const selector = ensureObject(spec, "selector");
  const matchLabels = ensureObject(selector, "matchLabels");
  if (!(JOB_LABELS.controllerUid in matchLabels)) matchLabels[JOB_LABELS.controllerUid] = uid;
}

/**
 * The completion mode, what Indexed asks of completions and parallelism, and the per-index
 * backoff fields that only an Indexed Job may have.
 */
function completionModeCauses(spec: any, at: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const modes = ["NonIndexed", "Indexed"];
  if (spec.completionMode != null && !modes.includes(spec.completionMode))
    causes.push(field.notSupported(`${at}.completionMode`, spec.completionMode, modes));
  const maxFailed = spec.maxFailedIndexes;
  const tooMany = (limit: number, why = "") =>
    typeof maxFailed === "number" && maxFailed > limit
      ? [field.invalid(`${at}.maxFailedIndexes`, maxFailed, `must be less than or equal to ${why || limit}`)]
      : [];
  if (spec.completionMode === "Indexed") {
    const completions = spec.completions;
    if (completions == null)
      causes.push(field.required(`${at}.completions`, "when completion mode is Indexed"));
    if (typeof spec.parallelism === "number" && spec.parallelism > MAX_INDEXED_PARALLELISM)
      causes.push(
        field.invalid(
          `${at}.parallelism`,
          spec.parallelism,
          `must be less than or equal to ${MAX_INDEXED_PARALLELISM} when completion mode is Indexed`,
        ),
      );
    if (typeof completions === "number") causes.push(...tooMany(completions, "completions"));
    causes.push(...tooMany(MAX_FAILED_INDEXES));
    if (
      typeof completions === "number" &&
      completions > COMPLETIONS_SOFT_LIMIT &&
      spec.backoffLimitPerIndex != null
    ) {
      const high = `when completions are above ${COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index`;
      if (maxFailed == null)
        causes.push(
          field.required(
            `${at}.maxFailedIndexes`,
            `must be specified when completions is above ${COMPLETIONS_SOFT_LIMIT}`,
          ),
        );
      if (typeof spec.parallelism === "number" && spec.parallelism > HIGH_COMPLETIONS_LIMIT)
        causes.push(
          field.invalid(
            `${at}.parallelism`,
            spec.parallelism,
            `must be less than or equal to ${HIGH_COMPLETIONS_LIMIT} ${high}`,
          ),
        );
      causes.push(...tooMany(HIGH_COMPLETIONS_LIMIT, `${HIGH_COMPLETIONS_LIMIT} ${high}`));
    }
  } else {
    for (const f of ["backoffLimitPerIndex", "maxFailedIndexes"])
      if (spec[f] != null)
        causes.push(field.invalid(`${at}.${f}`, spec[f], "requires indexed completion mode"));
  }
  return causes;
}

/** With a generated selector, the template must carry the Job's own labels (ValidateGeneratedSelector). */
function generatedSelectorCauses(obj: KubeObject, spec: any): StatusCause[] {
  if (spec.manualSelector === true) return [];
  const labels = spec.template?.metadata?.labels;
  if (!isObject(labels)) return [];
  const causes: StatusCause[] = [];
  const uid = obj.metadata.uid;
  if (!uid) return [field.required("metadata.uid")];
  for (const [key, value] of generatedLabels(uid, obj.metadata.name ?? "")) {
    const path = `spec.template.metadata.labels[${key}]`;
    if (!(key in labels)) causes.push(field.required(path, `must be '${value}'`));
    else if (labels[key] !== value) causes.push(field.invalid(path, labels, `must be '${value}'`));
  }
  // the selector must select the pods by the uid label alone
  const sel: LabelSelector | undefined = isObject(spec.selector) ? spec.selector : undefined;
  if (sel && !selectorMatches(sel, { [JOB_LABELS.controllerUid]: uid }))
    causes.push(field.invalid("spec.selector", sel, "`selector` not auto-generated"));
  return causes;
}

/**
 * The checks of a JobSpec at `at` ("spec", or a CronJob's "spec.jobTemplate.spec"); the
 * selector is required of a Job only (a CronJob's template has none until its Jobs are made).
 */
export function validateJobSpec(spec: any, at: string, selectorRequired: boolean): StatusCause[] {
  const causes: StatusCause[] = [];
  for (const f of [
    "parallelism",
    "completions",
    "activeDeadlineSeconds",
    "backoffLimit",
    "ttlSecondsAfterFinished",
    "backoffLimitPerIndex",
    "maxFailedIndexes",
  ])
    causes.push(...nonNegative(spec[f], `${at}.${f}`));
  if (spec.maxFailedIndexes != null && spec.backoffLimitPerIndex == null)
    causes.push(field.required(`${at}.backoffLimitPerIndex`, "when maxFailedIndexes is specified"));
  if (spec.managedBy != null) {
    const by = String(spec.managedBy);
    causes.push(...domainPrefixedPath(`${at}.managedBy`, by));
    if (by.length > MAX_MANAGED_BY) causes.push(field.tooLong(`${at}.managedBy`, MAX_MANAGED_BY));
  }
  causes.push(...completionModeCauses(spec, at));
  causes.push(...validatePodFailurePolicy(spec, at), ...validateSuccessPolicy(spec, at));
  const sel: LabelSelector | undefined = isObject(spec.selector) ? spec.selector : undefined;
  if (sel) causes.push(...validateLabelSelector(sel, `${at}.selector`));
  else if (selectorRequired) causes.push(field.required(`${at}.selector`));
  const template = spec.template;
  causes.push(...validatePodTemplate(template, `${at}.template`, sel));
  if (!isObject(template)) return causes;
  const rp = template.spec?.restartPolicy;
  const path = `${at}.template.spec.restartPolicy`;
  if (!rp || rp === "Always") causes.push(field.required(path, 'valid values: "OnFailure", "Never"'));
  else if (rp !== "OnFailure" && rp !== "Never")
    causes.push(field.notSupported(path, rp, ["OnFailure", "Never"]));
  return causes;
}

export function validateJob(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true });
  const spec = isObject(obj.spec) ? obj.spec : {};
  causes.push(...validateJobSpec(spec, "spec", true));
  causes.push(...generatedSelectorCauses(obj, spec));
  if (old && isObject(old.spec)) {
    const immutable = ["selector", "completions", "completionMode"];
    immutable.push("podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy");
    for (const f of immutable)
      if (!deepEqual(spec[f], old.spec[f]))
        causes.push(field.invalid(`spec.${f}`, spec[f] ?? null, "field is immutable"));
    const mutable = old.spec.suspend === true && !old.status?.startTime;
    if (!deepEqual(templateFixedPart(spec.template, mutable), templateFixedPart(old.spec.template, mutable)))
      causes.push(field.invalid("spec.template", spec.template ?? null, "field is immutable"));
  }
  return causes;
}

/** The part of a template an update may not change (all of it, or all but the scheduling directives). */
function templateFixedPart(template: any, schedulingMutable: boolean): unknown {
  if (!schedulingMutable || !isObject(template)) return template;
  const { labels: _l, annotations: _a, ...meta } = template.metadata ?? {};
  const spec = { ...template.spec };
  for (const k of SCHEDULING_DIRECTIVES) delete spec[k];
  return { ...template, metadata: meta, spec };
}

/** A Job's conditions by type, when True. */
function hasCondition(o: KubeObject, type: string): boolean {
  return ((o.status?.conditions as any[] | undefined) ?? []).some(
    (c) => c?.type === type && c.status === "True",
  );
}

/** The STATUS cell of `kubectl get jobs`, in upstream's order of precedence. */
export function jobStatusCell(o: KubeObject): string {
  if (hasCondition(o, "Complete")) return "Complete";
  if (hasCondition(o, "Failed")) return "Failed";
  if (o.metadata.deletionTimestamp) return "Terminating";
  if (hasCondition(o, "Suspended")) return "Suspended";
  if (hasCondition(o, "FailureTarget")) return "FailureTarget";
  return "Running";
}

function completionsCell(o: KubeObject): string {
  const succeeded = Number(o.status?.succeeded ?? 0);
  if (typeof o.spec?.completions === "number") return `${succeeded}/${o.spec.completions}`;
  const parallelism = Number(o.spec?.parallelism ?? 0);
  return parallelism > 1 ? `${succeeded}/1 of ${parallelism}` : `${succeeded}/1`;
}

function durationCell(o: KubeObject, now: number): string {
  const start = Date.parse(o.status?.startTime ?? "");
  if (Number.isNaN(start)) return "";
  const end = Date.parse(o.status?.completionTime ?? "");
  return humanDuration((Number.isNaN(end) ? now : end) - start);
}

export const jobs: ResourceDef = {
  group: "batch",
  version: "v1",
  resource: "jobs",
  kind: "Job",
  listKind: "JobList",
  singular: "job",
  namespaced: true,
  categories: ["all"],
  verbs: STANDARD_VERBS,
  subresources: { status: { kind: "Job", verbs: ["get", "patch", "update"] } },
  strategy: {
    defaults: defaultJob,
    validate: validateJob,
    prepareForCreate: prepareJob,
    orphanByDefault:
      "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning",
    generation: true,
    columns: [
      nameColumn,
      column("Status", "string", "Status of the job.", jobStatusCell),
      column(
        "Completions",
        "string",
        "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.",
        completionsCell,
      ),
      column("Duration", "string", "Time required to complete the job.", durationCell),
      ageColumn,
      containersColumn,
      imagesColumn,
      column(
        "Selector",
        "string",
        "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        (o) => formatLabelSelector(o.spec?.selector),
        1,
      ),
    ],
    fields: (o) => ({ "status.successful": String(Number(o.status?.succeeded ?? 0)) }),
  },
};
