// autoscaling/v2 horizontalpodautoscalers (stored), and autoscaling/v1 as a view of the same
// objects (hpa-v1.ts). Upstream's defaults (minReplicas 1, a cpu target of 80% when no metric is
// given, behavior's rules filled in when behavior is given), validation in its words, and the
// NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS table. The HPA controller is
// durable-objects/controllers/podautoscaler/horizontal.ts.
import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { validateMeta } from "../validation/metadata";
import { isValidPathSegmentName } from "../validation/names";
import { ageColumn, column, ensureObject, isObject, nameColumn } from "./common";

export const DEFAULT_CPU_UTILIZATION = 80;
const METRIC_TYPES = ["ContainerResource", "External", "Object", "Pods", "Resource"];
const SOURCES: Record<string, string> = {
  Object: "object",
  External: "external",
  Pods: "pods",
  Resource: "resource",
  ContainerResource: "containerResource",
};
const SOURCE_ORDER = ["object", "external", "pods", "resource", "containerResource"];

export const cpuMetric = (utilization = DEFAULT_CPU_UTILIZATION) => ({
  type: "Resource",
  resource: { name: "cpu", target: { type: "Utilization", averageUtilization: utilization } },
});

const SCALE_UP = {
  stabilizationWindowSeconds: 0,
  selectPolicy: "Max",
  policies: [
    { type: "Pods", value: 4, periodSeconds: 15 },
    { type: "Percent", value: 100, periodSeconds: 15 },
  ],
};
const SCALE_DOWN = { selectPolicy: "Max", policies: [{ type: "Percent", value: 100, periodSeconds: 15 }] };

export function defaultHPA(obj: KubeObject): void {
  const spec = ensureObject(obj, "spec");
  spec.minReplicas ??= 1;
  if (!Array.isArray(spec.metrics) || spec.metrics.length === 0) spec.metrics = [cpuMetric()];
  if (isObject(spec.behavior)) {
    for (const [k, d] of [
      ["scaleUp", SCALE_UP],
      ["scaleDown", SCALE_DOWN],
    ] as const) {
      const rules = isObject(spec.behavior[k]) ? spec.behavior[k] : {};
      spec.behavior[k] = {
        ...structuredClone(d),
        ...Object.fromEntries(Object.entries(rules).filter(([, v]) => v != null)),
      };
    }
  }
}

function crossVersionRef(ref: any, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  for (const f of ["kind", "name"]) {
    const v = ref?.[f];
    if (!v) causes.push(field.required(`${path}.${f}`));
    else for (const m of isValidPathSegmentName(String(v))) causes.push(field.invalid(`${path}.${f}`, v, m));
  }
  return causes;
}

function validateTarget(t: any, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!t?.type) causes.push(field.required(`${path}.type`, "must specify a metric target type"));
  else if (!["Utilization", "Value", "AverageValue"].includes(t.type))
    causes.push(field.invalid(`${path}.type`, t.type, "must be either Utilization, Value, or AverageValue"));
  for (const f of ["value", "averageValue"])
    if (t?.[f] != null && String(t[f]).startsWith("-"))
      causes.push(field.invalid(`${path}.${f}`, t[f], "must be positive"));
  if (typeof t?.averageUtilization === "number" && t.averageUtilization < 1)
    causes.push(field.invalid(`${path}.averageUtilization`, t.averageUtilization, "must be greater than 0"));
  return causes;
}

function validateMetric(m: any, p: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!m?.type) causes.push(field.required(`${p}.type`, "must specify a metric source type"));
  else if (!METRIC_TYPES.includes(m.type)) causes.push(field.notSupported(`${p}.type`, m.type, METRIC_TYPES));
  const present = SOURCE_ORDER.filter((s) => m?.[s] != null);
  const first = present[0];
  if (first === "resource" || first === "containerResource") {
    const r = m[first];
    if (!r?.name) causes.push(field.required(`${p}.${first}.name`, "must specify a resource name"));
    if (first === "containerResource" && !r?.container)
      causes.push(field.required(`${p}.${first}.container`, "must specify a container"));
    causes.push(...validateTarget(r?.target, `${p}.${first}.target`));
    const t = r?.target ?? {};
    if (t.averageUtilization == null && t.averageValue == null)
      causes.push(
        field.required(
          `${p}.${first}.target.averageUtilization`,
          "must set either a target raw value or a target utilization",
        ),
      );
    else if (t.averageUtilization != null && t.averageValue != null)
      causes.push(
        field.forbidden(
          `${p}.${first}.target.averageValue`,
          "may not set both a target raw value and a target utilization",
        ),
      );
  } else if (first) {
    const s = m[first];
    if (first === "object")
      causes.push(...crossVersionRef(s?.describedObject, `${p}.object.describedObject`));
    if (!s?.metric?.name)
      causes.push(field.required(`${p}.${first}.metric.name`, "must specify a metric name"));
    causes.push(...validateTarget(s?.target, `${p}.${first}.target`));
  }
  const wanted = SOURCES[m?.type];
  if (wanted && m[wanted] == null)
    causes.push(field.required(`${p}.${wanted}`, "must populate information for the given metric source"));
  for (const s of present)
    if (s !== wanted) causes.push(field.forbidden(`${p}.${s}`, "must populate the given metric source only"));
  return causes;
}

function validateRules(rules: any, path: string): StatusCause[] {
  if (!isObject(rules)) return [];
  const causes: StatusCause[] = [];
  const w = rules.stabilizationWindowSeconds;
  if (typeof w === "number" && w < 0)
    causes.push(
      field.invalid(`${path}.stabilizationWindowSeconds`, w, "must be greater than or equal to zero"),
    );
  if (typeof w === "number" && w > 3600)
    causes.push(field.invalid(`${path}.stabilizationWindowSeconds`, w, "must be less than or equal to 3600"));
  if (rules.selectPolicy != null && !["Disabled", "Max", "Min"].includes(rules.selectPolicy))
    causes.push(field.notSupported(`${path}.selectPolicy`, rules.selectPolicy, ["Disabled", "Max", "Min"]));
  const policies: any[] = Array.isArray(rules.policies) ? rules.policies : [];
  if (!policies.length) causes.push(field.required(`${path}.policies`, "must specify at least one Policy"));
  policies.forEach((pol, j) => {
    const p = `${path}.policies[${j}]`;
    if (!["Percent", "Pods"].includes(pol?.type))
      causes.push(field.notSupported(`${p}.type`, pol?.type ?? "", ["Percent", "Pods"]));
    if (!(pol?.value > 0))
      causes.push(field.invalid(`${p}.value`, pol?.value ?? 0, "must be greater than zero"));
    if (!(pol?.periodSeconds > 0))
      causes.push(field.invalid(`${p}.periodSeconds`, pol?.periodSeconds ?? 0, "must be greater than zero"));
    else if (pol.periodSeconds > 1800)
      causes.push(
        field.invalid(`${p}.periodSeconds`, pol.periodSeconds, "must be less than or equal to 1800"),
      );
  });
  return causes;
}

export function validateHPA(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true });
  const spec = isObject(obj.spec) ? obj.spec : {};
  const min = spec.minReplicas ?? 1;
  const max = spec.maxReplicas ?? 0;
  const floor = old?.spec?.minReplicas === 0 ? 0 : 1;
  if (min < floor)
    causes.push(field.invalid("spec.minReplicas", min, `must be greater than or equal to ${floor}`));
  if (max < 1) causes.push(field.invalid("spec.maxReplicas", max, "must be greater than 0"));
  if (max < min)
    causes.push(field.invalid("spec.maxReplicas", max, "must be greater than or equal to `minReplicas`"));
  causes.push(...crossVersionRef(spec.scaleTargetRef, "spec.scaleTargetRef"));
  const metrics: any[] = Array.isArray(spec.metrics) ? spec.metrics : [];
  metrics.forEach((m, i) => {
    causes.push(...validateMetric(m, `spec.metrics[${i}]`));
  });
  if (min === 0 && !metrics.some((m) => m?.type === "Object" || m?.type === "External"))
    causes.push(
      field.forbidden(
        "spec.metrics",
        "must specify at least one Object or External metric to support scaling to zero replicas",
      ),
    );
  causes.push(...validateRules(spec.behavior?.scaleUp, "spec.behavior.scaleUp"));
  causes.push(...validateRules(spec.behavior?.scaleDown, "spec.behavior.scaleDown"));
  return causes;
}

function statusCauses(obj: KubeObject, old: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true });
  for (const f of ["currentReplicas", "desiredReplicas"]) {
    const v = obj.status?.[f];
    if (typeof v === "number" && v < 0)
      causes.push(field.invalid(`status.${f}`, v, "must be greater than or equal to 0"));
  }
  return causes;
}

/** One metric's TARGETS entry: "<current>/<target>", as `kubectl get hpa` prints it. */
function metricCell(spec: any, status: any): string {
  const cur = (s: any, get: (x: any) => unknown, fmt = (v: unknown) => String(v)) => {
    const v = s ? get(s) : undefined;
    return v == null ? "<unknown>" : fmt(v);
  };
  const pct = (v: unknown) => `${v}%`;
  switch (spec?.type) {
    case "Resource":
    case "ContainerResource": {
      const k = spec.type === "Resource" ? "resource" : "containerResource";
      const r = spec[k] ?? {};
      const st = status?.[k];
      if (r.target?.averageValue != null)
        return `${r.name}: ${cur(st, (x) => x.current?.averageValue)}/${r.target.averageValue}`;
      const target = r.target?.averageUtilization != null ? pct(r.target.averageUtilization) : "<auto>";
      return `${r.name}: ${cur(st, (x) => x.current?.averageUtilization, pct)}/${target}`;
    }
    case "Pods":
      return `${cur(status?.pods, (x) => x.current?.averageValue)}/${spec.pods?.target?.averageValue ?? "<auto>"}`;
    case "Object":
    case "External": {
      const k = spec.type === "Object" ? "object" : "external";
      const t = spec[k]?.target ?? {};
      if (t.averageValue != null)
        return `${cur(status?.[k], (x) => x.current?.averageValue)}/${t.averageValue} (avg)`;
      return `${cur(status?.[k], (x) => x.current?.value)}/${t.value ?? "<auto>"}`;
    }
    default:
      return "<unknown type>";
  }
}

export function targetsCell(o: KubeObject): string {
  const metrics: any[] = o.spec?.metrics ?? [];
  if (!metrics.length) return "<none>";
  const statuses: any[] = o.status?.currentMetrics ?? [];
  const cells = metrics.slice(0, 2).map((m, i) => metricCell(m, statuses[i]?.type ? statuses[i] : undefined));
  return cells.join(", ") + (metrics.length > 2 ? ` + ${metrics.length - 2} more...` : "");
}

export const HPA_COLUMNS = [
  nameColumn,
  column(
    "Reference",
    "string",
    "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.",
    (o) => `${o.spec?.scaleTargetRef?.kind ?? ""}/${o.spec?.scaleTargetRef?.name ?? ""}`,
  ),
  column(
    "Targets",
    "string",
    "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond.",
    targetsCell,
  ),
  column(
    "MinPods",
    "string",
    "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is active as long as at least one metric value is available.",
    (o) => (o.spec?.minReplicas == null ? "<unset>" : String(o.spec.minReplicas)),
  ),
  column(
    "MaxPods",
    "string",
    "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas.",
    (o) => o.spec?.maxReplicas ?? 0,
  ),
  column(
    "Replicas",
    "string",
    "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.",
    (o) => o.status?.currentReplicas ?? 0,
  ),
  ageColumn,
];

export const HPA_STRATEGY = {
  validateSubresource: { status: statusCauses },
  columns: HPA_COLUMNS,
};

/** What both served versions share. */
export const HPA_BASE = {
  group: "autoscaling",
  resource: "horizontalpodautoscalers",
  kind: "HorizontalPodAutoscaler",
  listKind: "HorizontalPodAutoscalerList",
  singular: "horizontalpodautoscaler",
  namespaced: true,
  shortNames: ["hpa"],
  categories: ["all"],
  verbs: STANDARD_VERBS,
  subresources: { status: { kind: "HorizontalPodAutoscaler", verbs: ["get", "patch", "update"] } },
};

export const horizontalpodautoscalers: ResourceDef = {
  ...HPA_BASE,
  version: "v2",
  strategy: {
    ...HPA_STRATEGY,
    defaults: defaultHPA,
    validate: validateHPA,
    prepareForCreate: (obj) => {
      obj.status = { currentMetrics: null, desiredReplicas: 0 };
    },
  },
};
