// RuntimeClass (upstream plugin/pkg/admission/runtimeclass): a new pod naming a RuntimeClass
// gets the class's overhead and scheduling (its node selector merged in, a conflicting key
// refused; its tolerations added); a class that does not exist, or an overhead the class does
// not define, is refused.

import { lookupGVR } from "../../api/registry";
import type { KubeObject } from "../../api/types";
import { deepEqual } from "../../api/validation/metadata";
import { Store } from "../../durable-objects/store/client";
import type { AdmissionAttributes, AdmissionPlugin } from "./index";
import { admissionForbidden, cachedRead, isCore, isObj } from "./util";

const classes = () => lookupGVR("node.k8s.io", "v1", "runtimeclasses")!;

async function classOf(a: AdmissionAttributes, name: string): Promise<any | undefined> {
  const env = a.w.c.env;
  const cached = await cachedRead(env, classes(), `get:${name}`, () =>
    new Store(env, classes()).find("", name),
  );
  return cached ?? undefined;
}

const applies = (a: AdmissionAttributes) => a.operation === "CREATE" && isCore(a, "pods") && !!a.object;

/** The class's tolerations a pod does not already have. */
function mergeTolerations(own: any[], extra: any[]): any[] {
  const out = [...own];
  for (const t of extra) if (!out.some((o) => deepEqual(o, t))) out.push(t);
  return out;
}

export const runtimeClass: AdmissionPlugin = {
  name: "RuntimeClass",
  async mutate(a) {
    if (!applies(a)) return;
    const spec = isObj(a.object!.spec) ? a.object!.spec : {};
    const name = spec.runtimeClassName;
    if (!name) return;
    const rc = await classOf(a, name);
    if (!rc) throw admissionForbidden(a, `pod rejected: RuntimeClass "${name}" not found`);
    const fixed = rc.overhead?.podFixed;
    if (fixed) {
      if (spec.overhead && Object.keys(spec.overhead).length && !deepEqual(spec.overhead, fixed))
        throw admissionForbidden(
          a,
          "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
        );
      spec.overhead = { ...fixed };
    }
    const scheduling = rc.scheduling;
    if (!scheduling) return;
    const selector: Record<string, string> = scheduling.nodeSelector ?? {};
    if (Object.keys(selector).length) {
      const mine: Record<string, string> = spec.nodeSelector ?? {};
      for (const [k, v] of Object.entries(selector))
        if (k in mine && mine[k] !== v)
          throw admissionForbidden(
            a,
            `conflict: runtimeClass.scheduling.nodeSelector[${k}] = ${v}; pod.spec.nodeSelector[${k}] = ${mine[k]}`,
          );
      spec.nodeSelector = { ...mine, ...selector };
    }
    if (Array.isArray(scheduling.tolerations) && scheduling.tolerations.length)
      spec.tolerations = mergeTolerations(spec.tolerations ?? [], scheduling.tolerations);
  },
  async validate(a) {
    if (!applies(a)) return;
    const spec = a.object!.spec ?? {};
    const rc: KubeObject | undefined = spec.runtimeClassName
      ? await classOf(a, spec.runtimeClassName)
      : undefined;
    const fixed = (rc as any)?.overhead?.podFixed;
    if (fixed && !deepEqual(spec.overhead, fixed))
      throw admissionForbidden(
        a,
        "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
      );
    if (!fixed && spec.overhead != null)
      throw admissionForbidden(
        a,
        "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
      );
  },
};
