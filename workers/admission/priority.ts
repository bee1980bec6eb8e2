// Priority (upstream plugin/pkg/admission/priority): a new pod's spec.priority and
// preemptionPolicy come from its PriorityClass (or the global default class, whose name it then
// carries; 0 without one), and may not be given otherwise. Only one class may be the global
// default, and the system classes cannot be deleted.
import { lookupGVR } from "../../api/registry";
import { SYSTEM_PRIORITY_CLASSES } from "../../api/strategies/priorityclasses";
import type { KubeObject } from "../../api/types";
import type { AdmissionAttributes, AdmissionPlugin } from "./index";
import { admissionForbidden, cachedListIn, isCore, isObj } from "./util";

const classesDef = () => lookupGVR("scheduling.k8s.io", "v1", "priorityclasses")!;

function listClasses(a: AdmissionAttributes): Promise<KubeObject[]> {
  return cachedListIn(a.w.c.env, classesDef());
}

/** The global default: the lowest value among the classes marked globalDefault. */
function globalDefault(all: KubeObject[]): any | undefined {
  return (all as any[])
    .filter((c) => c.globalDefault === true)
    .sort((x, y) => (x.value ?? 0) - (y.value ?? 0))[0];
}

const isPriorityClasses = (a: AdmissionAttributes) =>
  a.w.def.group === "scheduling.k8s.io" && a.w.def.resource === "priorityclasses" && !a.w.info.subresource;

async function admitPod(a: AdmissionAttributes): Promise<void> {
  const pod = a.object!;
  const spec = isObj(pod.spec) ? pod.spec : (pod.spec = {});
  if (a.operation === "UPDATE") {
    // left out of an update: kept (the pod's validation refuses a change)
    spec.priority ??= a.old?.spec?.priority;
    spec.preemptionPolicy ??= a.old?.spec?.preemptionPolicy;
    return;
  }
  let priority = 0;
  let policy: string | undefined = "PreemptLowerPriority";
  const all = await listClasses(a);
  if (!spec.priorityClassName) {
    const def = globalDefault(all);
    if (def) {
      priority = def.value ?? 0;
      policy = def.preemptionPolicy;
      spec.priorityClassName = def.metadata.name;
    }
  } else {
    const pc = all.find((c) => c.metadata.name === spec.priorityClassName) as any;
    if (!pc) throw admissionForbidden(a, `no PriorityClass with name ${spec.priorityClassName} was found`);
    priority = pc.value ?? 0;
    policy = pc.preemptionPolicy;
  }
  if (spec.priority != null && spec.priority !== priority)
    throw admissionForbidden(
      a,
      `the integer value of priority (${spec.priority}) must not be provided in pod spec; priority admission controller computed ${priority} from the given PriorityClass name`,
    );
  spec.priority = priority;
  if (policy != null) {
    if (spec.preemptionPolicy != null && spec.preemptionPolicy !== policy)
      throw admissionForbidden(
        a,
        `the string value of PreemptionPolicy (${spec.preemptionPolicy}) must not be provided in pod spec; priority admission controller computed ${policy} from the given PriorityClass name`,
      );
    spec.preemptionPolicy = policy;
  }
}

export const priority: AdmissionPlugin = {
  name: "Priority",
  async mutate(a) {
    if (isCore(a, "pods") && a.object && (a.operation === "CREATE" || a.operation === "UPDATE"))
      await admitPod(a);
  },
  async validate(a) {
    if (!isPriorityClasses(a)) return;
    if (a.operation === "DELETE") {
      const name = a.old?.metadata.name ?? a.w.info.name;
      if (SYSTEM_PRIORITY_CLASSES.some((c) => c.name === name))
        throw admissionForbidden(a, "this is a system priority class and cannot be deleted");
      return;
    }
    const pc = a.object as any;
    if (pc?.globalDefault !== true) return;
    const existing = globalDefault(await listClasses(a));
    if (existing && (a.operation === "CREATE" || existing.metadata.name !== pc.metadata.name))
      throw admissionForbidden(
        a,
        `PriorityClass ${existing.metadata.name} is already marked as default. Only one default can exist`,
      );
  },
};
