// DefaultTolerationSeconds (upstream plugin/pkg/admission/defaulttolerationseconds): a new pod
// tolerates a not-ready or unreachable node for a while (300 s) before it is evicted, unless it
// already says how it tolerates those taints.
import type { KubeObject } from "../../api/types";
import type { AdmissionPlugin } from "./index";
import { isCore } from "./util";

export const NOT_READY = "node.kubernetes.io/not-ready";
export const UNREACHABLE = "node.kubernetes.io/unreachable";

/** Whether some toleration already covers `key` with effect NoExecute (or any effect). */
function covers(tolerations: any[], key: string): boolean {
  return tolerations.some(
    (t) =>
      (t?.effect === "NoExecute" || !t?.effect) && (t?.key === key || (!t?.key && t?.operator === "Exists")),
  );
}

export function addDefaultTolerations(pod: KubeObject, seconds = 300): void {
  const spec = pod.spec ?? (pod.spec = {});
  const tolerations: any[] = Array.isArray(spec.tolerations) ? spec.tolerations : [];
  const add = (key: string) => {
    if (!covers(tolerations, key))
      tolerations.push({ key, operator: "Exists", effect: "NoExecute", tolerationSeconds: seconds });
  };
  add(NOT_READY);
  add(UNREACHABLE);
  if (tolerations.length) spec.tolerations = tolerations;
}

export const defaultTolerationSeconds: AdmissionPlugin = {
  name: "DefaultTolerationSeconds",
  mutate(a) {
    if (a.operation !== "CREATE" || !isCore(a, "pods") || !a.object) return;
    const n = Number(a.w.c.env.EDGEPLANE_DEFAULT_TOLERATION_SECONDS ?? "300");
    addDefaultTolerations(a.object, Number.isInteger(n) && n >= 0 ? n : 300);
  },
};
