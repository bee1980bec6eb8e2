// batch/v1 cronjobs: defaulting, upstream's checks (the schedule parsed as the controller will
// parse it, the time zone known, the job template checked as a Job's spec), and the columns
// of `kubectl get cronjobs`.

import { CronError, parseSchedule, zoneFormatter } from "../cron";
import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import {
  formatLabelSelector,
  validateAnnotations,
  validateLabels,
  validateMeta,
} from "../validation/metadata";
import {
  ageColumn,
  column,
  containerCells,
  dropZeroTimestamp,
  ensureObject,
  isObject,
  nameColumn,
  nonNegative,
  translateAge,
} from "./common";
import { validateJobSpec } from "./jobs";
import { defaultTemplate } from "./pod-defaults";

/** Job names get an 11-character suffix (the scheduled minute), within the 63 of a label. */
const MAX_NAME = 52;

export function defaultCronJob(obj: KubeObject): void {
  const spec = ensureObject(obj, "spec");
  if (spec.concurrencyPolicy == null) spec.concurrencyPolicy = "Allow";
  if (spec.suspend == null) spec.suspend = false;
  if (spec.successfulJobsHistoryLimit == null) spec.successfulJobsHistoryLimit = 3;
  if (spec.failedJobsHistoryLimit == null) spec.failedJobsHistoryLimit = 1;
  dropZeroTimestamp(spec.jobTemplate);
  defaultTemplate(spec.jobTemplate?.spec?.template);
}

function scheduleCauses(spec: any, old: any): StatusCause[] {
  const schedule = spec.schedule;
  if (typeof schedule !== "string" || schedule === "") return [field.required("spec.schedule")];
  const causes: StatusCause[] = [];
  try {
    // the parser takes a leading TZ=/CRON_TZ= zone; validation then refuses it on new schedules
    parseSchedule(schedule.replace(/^\s*(CRON_)?TZ=\S+\s+/, ""));
  } catch (e) {
    if (!(e instanceof CronError)) throw e;
    causes.push(field.invalid("spec.schedule", schedule, e.message));
  }
  const hadTZ = typeof old?.schedule === "string" && old.schedule.includes("TZ");
  if (schedule.includes("TZ") && !hadTZ)
    causes.push(
      field.invalid(
        "spec.schedule",
        schedule,
        "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
      ),
    );
  else if (schedule.includes("TZ") && spec.timeZone != null)
    causes.push(
      field.invalid(
        "spec.schedule",
        schedule,
        "cannot use both timeZone field and TZ or CRON_TZ in schedule",
      ),
    );
  return causes;
}

function timeZoneCauses(spec: any, old: any): StatusCause[] {
  const tz = spec.timeZone;
  if (tz == null || (old && old.timeZone === tz)) return [];
  const path = "spec.timeZone";
  if (tz === "") return [field.invalid(path, tz, "timeZone must be nil or non-empty string")];
  if (String(tz).toLowerCase() === "local")
    return [
      field.invalid(
        path,
        tz,
        "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
      ),
    ];
  try {
    zoneFormatter(String(tz));
    return [];
  } catch (e) {
    if (!(e instanceof RangeError)) throw e;
    return [field.invalid(path, tz, `unknown time zone ${tz}`)];
  }
}

export function validateCronJob(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true });
  const name = obj.metadata.name ?? "";
  if (!old && name.length > MAX_NAME)
    causes.push(field.invalid("metadata.name", name, `must be no more than ${MAX_NAME} characters`));
  const spec = isObject(obj.spec) ? obj.spec : {};
  const oldSpec = old && isObject(old.spec) ? old.spec : undefined;
  causes.push(...scheduleCauses(spec, oldSpec), ...timeZoneCauses(spec, oldSpec));
  const policies = ["Allow", "Forbid", "Replace"];
  if (!spec.concurrencyPolicy) causes.push(field.required("spec.concurrencyPolicy"));
  else if (!policies.includes(spec.concurrencyPolicy))
    causes.push(field.notSupported("spec.concurrencyPolicy", spec.concurrencyPolicy, policies));
  for (const f of ["startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"])
    causes.push(...nonNegative(spec[f], `spec.${f}`));
  const template = spec.jobTemplate;
  if (!isObject(template)) {
    causes.push(field.required("spec.jobTemplate"));
    return causes;
  }
  causes.push(...validateLabels(template.metadata?.labels, "spec.jobTemplate.metadata.labels"));
  causes.push(
    ...validateAnnotations(template.metadata?.annotations, "spec.jobTemplate.metadata.annotations"),
  );
  const jobSpec = isObject(template.spec) ? template.spec : {};
  if (jobSpec.selector != null)
    causes.push(
      field.invalid("spec.jobTemplate.spec.selector", jobSpec.selector, "`selector` will be auto-generated"),
    );
  if (jobSpec.manualSelector === true)
    causes.push(field.notSupported("spec.jobTemplate.spec.manualSelector", true, ["nil", "false"]));
  causes.push(...validateJobSpec(jobSpec, "spec.jobTemplate.spec", false));
  return causes;
}

const TIME_ZONE_DOC =
  "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones";
const SUSPEND_DOC =
  "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.";
const SELECTOR_DOC =
  "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";

const jobTemplateContainers = (o: KubeObject) => o.spec?.jobTemplate?.spec?.template?.spec?.containers;

export const cronjobs: ResourceDef = {
  group: "batch",
  version: "v1",
  resource: "cronjobs",
  kind: "CronJob",
  listKind: "CronJobList",
  singular: "cronjob",
  namespaced: true,
  shortNames: ["cj"],
  categories: ["all"],
  verbs: STANDARD_VERBS,
  subresources: { status: { kind: "CronJob", verbs: ["get", "patch", "update"] } },
  strategy: {
    defaults: defaultCronJob,
    validate: validateCronJob,
    prepareForCreate: (obj) => {
      obj.status = {};
      obj.metadata.generation = 1;
    },
    generation: true,
    columns: [
      nameColumn,
      column(
        "Schedule",
        "string",
        "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
        (o) => String(o.spec?.schedule ?? ""),
      ),
      column("Timezone", "string", TIME_ZONE_DOC, (o) =>
        o.spec?.timeZone ? String(o.spec.timeZone) : "<none>",
      ),
      column("Suspend", "boolean", SUSPEND_DOC, (o) => (o.spec?.suspend === true ? "True" : "False")),
      column("Active", "integer", "A list of pointers to currently running jobs.", (o) =>
        Array.isArray(o.status?.active) ? o.status.active.length : 0,
      ),
      column(
        "Last Schedule",
        "string",
        "Information when was the last time the job was successfully scheduled.",
        (o, now) => (o.status?.lastScheduleTime ? translateAge(o.status.lastScheduleTime, now) : "<none>"),
      ),
      ageColumn,
      column(
        "Containers",
        "string",
        "Names of each container in the template.",
        (o) => containerCells(jobTemplateContainers(o)).names,
        1,
      ),
      column(
        "Images",
        "string",
        "Images referenced by each container in the template.",
        (o) => containerCells(jobTemplateContainers(o)).images,
        1,
      ),
      column(
        "Selector",
        "string",
        SELECTOR_DOC,
        (o) => formatLabelSelector(o.spec?.jobTemplate?.spec?.selector),
        1,
      ),
    ],
  },
};
