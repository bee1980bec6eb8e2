// A Job's spec.podFailurePolicy (upstream pkg/controller/job/pod_failure_policy.go): the
// first rule that a failed pod matches, by the exit code of one of its containers or by one
// of its conditions, says what its failure does: FailJob ends the Job at once, Ignore does not
// count it against backoffLimit, Count counts it as usual. A pod no rule matches is counted.
import type { KubeObject } from "../../../api/types";

export type FailureAction = "FailJob" | "FailIndex" | "Ignore" | "Count";

export interface PolicyMatch {
  action: FailureAction;
  /** why, for the Job's Failed condition (FailJob) */
  message: string;
}

/** A terminated container whose non-zero exit code the requirement matches. */
function matchingExit(pod: KubeObject, req: any): { name: string; code: number } | undefined {
  const statuses = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])];
  for (const s of statuses) {
    const code = s?.state?.terminated?.exitCode;
    if (typeof code !== "number" || code === 0) continue;
    if (req.containerName && req.containerName !== s.name) continue;
    const listed = ((req.values ?? []) as number[]).includes(code);
    if (req.operator === "In" ? listed : req.operator === "NotIn" && !listed) return { name: s.name, code };
  }
  return undefined;
}

/** The action of the first rule a failed pod matches, if any. */
export function matchPodFailurePolicy(policy: any, pod: KubeObject): PolicyMatch | undefined {
  const where = `${pod.metadata.namespace}/${pod.metadata.name}`;
  const rules: any[] = Array.isArray(policy?.rules) ? policy.rules : [];
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i];
    const action = rule?.action as FailureAction;
    if (rule?.onExitCodes) {
      const exit = matchingExit(pod, rule.onExitCodes);
      if (exit)
        return {
          action,
          message: `Container ${exit.name} for pod ${where} failed with exit code ${exit.code} matching ${action} rule at index ${i}`,
        };
    } else if (Array.isArray(rule?.onPodConditions)) {
      const conditions: any[] = pod.status?.conditions ?? [];
      for (const want of rule.onPodConditions) {
        const found = conditions.find((c) => c?.type === want?.type && c.status === (want?.status ?? "True"));
        if (found)
          return {
            action,
            message: `Pod ${where} has condition ${found.type} matching ${action} rule at index ${i}`,
          };
      }
    }
  }
  return undefined;
}
