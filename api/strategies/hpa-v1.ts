// autoscaling/v1 HorizontalPodAutoscalers (what `kubectl autoscale` creates): a view of the
// stored autoscaling/v2 objects. targetCPUUtilizationPercentage is the first cpu utilization
// metric, currentCPUUtilizationPercentage its current value; what v1 cannot say (other
// metrics, behavior, conditions, current metrics) rides in the autoscaling.alpha.kubernetes.io
// annotations, as upstream converts it, so a v1 client's update keeps it.
import type { ResourceDef } from "../resource";
import type { KubeObject } from "../types";
import { isObject } from "./common";
import {
  cpuMetric,
  DEFAULT_CPU_UTILIZATION,
  HPA_BASE,
  HPA_STRATEGY,
  validateHPA,
} from "./horizontalpodautoscalers";

const ANN = {
  metrics: "autoscaling.alpha.kubernetes.io/metrics",
  currentMetrics: "autoscaling.alpha.kubernetes.io/current-metrics",
  behavior: "autoscaling.alpha.kubernetes.io/behavior",
  conditions: "autoscaling.alpha.kubernetes.io/conditions",
};

const isCpuUtilization = (m: any) =>
  m?.type === "Resource" && m.resource?.name === "cpu" && m.resource?.target?.averageUtilization != null;

function parse(text: string | undefined): any {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** v1 -> v2 (stored): the cpu target becomes a metric, the annotations come back as fields. */
export function hpaToV2(obj: KubeObject): KubeObject {
  const annotations = { ...(obj.metadata.annotations ?? {}) };
  const spec = isObject(obj.spec) ? { ...obj.spec } : {};
  const status = isObject(obj.status) ? { ...obj.status } : undefined;
  const others: any[] = parse(annotations[ANN.metrics]) ?? [];
  const cpu = spec.targetCPUUtilizationPercentage;
  delete spec.targetCPUUtilizationPercentage;
  const metrics = [...others, ...(cpu != null ? [cpuMetric(cpu)] : [])];
  spec.metrics = metrics.length ? metrics : [cpuMetric(DEFAULT_CPU_UTILIZATION)];
  const behavior = parse(annotations[ANN.behavior]);
  if (behavior) spec.behavior = behavior;
  if (status) {
    const current = parse(annotations[ANN.currentMetrics]);
    const cpuNow = status.currentCPUUtilizationPercentage;
    delete status.currentCPUUtilizationPercentage;
    status.currentMetrics =
      current ??
      (cpuNow != null
        ? [{ type: "Resource", resource: { name: "cpu", current: { averageUtilization: cpuNow } } }]
        : null);
    const conditions = parse(annotations[ANN.conditions]);
    if (conditions) status.conditions = conditions;
  }
  for (const k of Object.values(ANN)) delete annotations[k];
  const metadata: KubeObject["metadata"] = { ...obj.metadata, annotations };
  if (!Object.keys(annotations).length) delete metadata.annotations;
  return { ...obj, apiVersion: "autoscaling/v2", metadata, spec, ...(status ? { status } : {}) };
}

/** v2 (stored) -> v1. */
export function hpaToV1(obj: KubeObject): KubeObject {
  const annotations: Record<string, string> = { ...(obj.metadata.annotations ?? {}) };
  for (const k of Object.values(ANN)) delete annotations[k];
  const { metrics = [], behavior, ...rest } = (obj.spec ?? {}) as any;
  const spec: any = { ...rest };
  const cpu = (metrics as any[]).find(isCpuUtilization);
  if (cpu) spec.targetCPUUtilizationPercentage = cpu.resource.target.averageUtilization;
  const others = (metrics as any[]).filter((m) => m !== cpu);
  if (others.length) annotations[ANN.metrics] = JSON.stringify(others);
  if (behavior) annotations[ANN.behavior] = JSON.stringify(behavior);
  const { currentMetrics, conditions, ...st } = (obj.status ?? {}) as any;
  const status: any = {
    currentReplicas: st.currentReplicas ?? 0,
    desiredReplicas: st.desiredReplicas ?? 0,
    ...st,
  };
  const cpuNow = (currentMetrics ?? []).find(
    (m: any) =>
      m?.type === "Resource" && m.resource?.name === "cpu" && m.resource?.current?.averageUtilization != null,
  );
  if (cpuNow) status.currentCPUUtilizationPercentage = cpuNow.resource.current.averageUtilization;
  if (currentMetrics?.length) annotations[ANN.currentMetrics] = JSON.stringify(currentMetrics);
  if (conditions?.length) annotations[ANN.conditions] = JSON.stringify(conditions);
  const metadata: KubeObject["metadata"] = { ...obj.metadata, annotations };
  if (!Object.keys(annotations).length) delete metadata.annotations;
  return { ...obj, apiVersion: "autoscaling/v1", metadata, spec, status };
}

export const horizontalpodautoscalersV1: ResourceDef = {
  ...HPA_BASE,
  version: "v1",
  storedIn: {
    key: "autoscaling/horizontalpodautoscalers",
    toStorage: hpaToV2,
    fromStorage: hpaToV1,
    fieldLabels: {},
  },
  strategy: {
    ...HPA_STRATEGY,
    defaults: (obj) => {
      if (isObject(obj.spec)) obj.spec.minReplicas ??= 1;
    },
    // v1 is checked as the v2 object it is stored as (upstream validates the internal version)
    validate: (obj, old) => validateHPA(hpaToV2(obj), old && hpaToV2(old)),
    prepareForCreate: (obj) => {
      obj.status = { currentReplicas: 0, desiredReplicas: 0 };
    },
    columns: HPA_STRATEGY.columns.map((c) => ({
      ...c,
      cell: (o: KubeObject, now: number) => c.cell(hpaToV2(o), now),
    })),
  },
};
