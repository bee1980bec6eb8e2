// The checks of a Job's spec.podFailurePolicy (upstream validatePodFailurePolicy), and its
// one default (a pod condition pattern's status is True).
import { field, type StatusCause } from "../errors";
import { isQualifiedName } from "../validation/names";
import { isObject } from "./common";

const MAX_RULES = 20;
const MAX_EXIT_CODES = 255;
const MAX_CONDITION_PATTERNS = 20;
const ACTIONS = ["Count", "FailIndex", "FailJob", "Ignore"];
const OPERATORS = ["In", "NotIn"];
const STATUSES = ["False", "True", "Unknown"];

/** upstream's "valid values: %q" of a list: ["A" "B"] */
const validValues = (values: string[]) => `valid values: [${values.map((v) => JSON.stringify(v)).join(" ")}]`;

/** field.Invalid with field.OmitValueType: the detail alone. */
const invalidNoValue = (path: string, detail: string): StatusCause => ({
  type: "FieldValueInvalid",
  field: path,
  message: `Invalid value: ${detail}`,
});

export function defaultPodFailurePolicy(policy: unknown): void {
  if (!isObject(policy) || !Array.isArray(policy.rules)) return;
  for (const rule of policy.rules)
    for (const c of Array.isArray(rule?.onPodConditions) ? rule.onPodConditions : [])
      if (isObject(c) && c.status == null) c.status = "True";
}

function exitCodesCauses(req: any, path: string, containers: Set<string>): StatusCause[] {
  const causes: StatusCause[] = [];
  if (req.containerName != null && !containers.has(req.containerName))
    causes.push(
      field.invalid(
        `${path}.containerName`,
        req.containerName,
        "must be one of the container or initContainer names in the pod template",
      ),
    );
  if (!req.operator) causes.push(field.required(`${path}.operator`, validValues(OPERATORS)));
  else if (!OPERATORS.includes(req.operator))
    causes.push(field.notSupported(`${path}.operator`, req.operator, OPERATORS));
  const values: unknown[] = Array.isArray(req.values) ? req.values : [];
  if (values.length === 0)
    causes.push(field.invalid(`${path}.values`, values, "at least one value is required"));
  else if (values.length > MAX_EXIT_CODES)
    causes.push(field.tooMany(`${path}.values`, values.length, MAX_EXIT_CODES));
  const seen = new Set<unknown>();
  let ordered = true;
  values.forEach((v, i) => {
    const p = `${path}.values[${i}]`;
    if (req.operator === "In" && v === 0)
      causes.push(field.invalid(p, v, "must not be 0 for the In operator"));
    if (seen.has(v)) causes.push(field.duplicate(p, v));
    if (i > 0 && (values[i - 1] as number) > (v as number)) ordered = false;
    seen.add(v);
  });
  if (!ordered) causes.push(field.invalid(`${path}.values`, values, "must be ordered"));
  return causes;
}

/** spec.podFailurePolicy of a JobSpec at `at`. */
export function validatePodFailurePolicy(spec: any, at: string): StatusCause[] {
  const policy = spec.podFailurePolicy;
  if (policy == null) return [];
  const path = `${at}.podFailurePolicy`;
  const causes: StatusCause[] = [];
  const rules: any[] = Array.isArray(policy.rules) ? policy.rules : [];
  if (rules.length > MAX_RULES) causes.push(field.tooMany(`${path}.rules`, rules.length, MAX_RULES));
  const podSpec = spec.template?.spec ?? {};
  const containers = new Set<string>(
    [...(podSpec.containers ?? []), ...(podSpec.initContainers ?? [])].map((c: any) => c?.name),
  );
  rules.forEach((rule, i) => {
    const p = `${path}.rules[${i}]`;
    if (!rule?.action) causes.push(field.required(`${p}.action`, validValues(ACTIONS)));
    else if (rule.action === "FailIndex" && spec.backoffLimitPerIndex == null)
      causes.push(field.invalid(`${p}.action`, rule.action, "requires the backoffLimitPerIndex to be set"));
    else if (!ACTIONS.includes(rule.action))
      causes.push(field.notSupported(`${p}.action`, rule.action, ACTIONS));
    const byExit = rule?.onExitCodes != null;
    const patterns: any[] = Array.isArray(rule?.onPodConditions) ? rule.onPodConditions : [];
    if (byExit && isObject(rule.onExitCodes))
      causes.push(...exitCodesCauses(rule.onExitCodes, `${p}.onExitCodes`, containers));
    const cp = `${p}.onPodConditions`;
    if (patterns.length > MAX_CONDITION_PATTERNS)
      causes.push(field.tooMany(cp, patterns.length, MAX_CONDITION_PATTERNS));
    patterns.forEach((c: any, j: number) => {
      for (const m of isQualifiedName(String(c?.type ?? "")))
        causes.push(field.invalid(`${cp}[${j}].type`, c?.type ?? "", m));
      if (!c?.status) causes.push(field.required(`${cp}[${j}].status`, validValues(STATUSES)));
      else if (!STATUSES.includes(c.status))
        causes.push(field.notSupported(`${cp}[${j}].status`, c.status, STATUSES));
    });
    if (byExit && patterns.length)
      causes.push(invalidNoValue(p, "specifying both OnExitCodes and OnPodConditions is not supported"));
    else if (!byExit && !patterns.length)
      causes.push(invalidNoValue(p, "specifying one of OnExitCodes and OnPodConditions is required"));
  });
  if (spec.podReplacementPolicy != null && spec.podReplacementPolicy !== "Failed")
    causes.push(field.notSupported(`${at}.podReplacementPolicy`, spec.podReplacementPolicy, ["Failed"]));
  // a pod's exit codes and conditions are final only with restartPolicy Never
  const rp = podSpec.restartPolicy;
  if (rp === "OnFailure")
    causes.push(
      field.invalid(
        `${at}.template.spec.restartPolicy`,
        rp,
        `only "Never" is supported when podFailurePolicy is specified`,
      ),
    );
  return causes;
}
