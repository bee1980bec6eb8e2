// The checks of an Indexed Job's spec.successPolicy (upstream validateSuccessPolicy): rules
// of succeededIndexes (ranges "0-2,5" within completions, increasing) and succeededCount.
import { field, type StatusCause } from "../errors";

const MAX_RULES = 20;
const MAX_INDEXES_LENGTH = 64 * 1024;

/** How many indexes "0-2,5" names, or why it cannot be read (upstream validateIndexesFormat). */
export function countIndexes(text: string, completions: number): { total: number; error?: string } {
  if (text === "") return { total: 0 };
  let total = 0;
  let last = -1;
  for (const interval of text.split(",")) {
    const parts = interval.split("-");
    if (parts.length > 2)
      return {
        total: 0,
        error: `the fragment ${JSON.stringify(interval)} violates the requirement that an index interval can have at most two parts separated by '-'`,
      };
    const nums: number[] = [];
    for (const part of parts) {
      if (!/^\d+$/.test(part))
        return { total: 0, error: `cannot convert string to integer for index: ${JSON.stringify(part)}` };
      const n = Number(part);
      if (n >= completions) return { total: 0, error: `too large index: ${JSON.stringify(part)}` };
      nums.push(n);
    }
    const [x, y = x] = nums as [number, number?];
    if (last >= x) return { total: 0, error: `non-increasing order, previous: ${last}, current: ${x}` };
    if (nums.length === 2 && x >= y!)
      return { total: 0, error: `non-increasing order, previous: ${x}, current: ${y}` };
    total += y! - x + 1;
    last = y!;
  }
  return { total };
}

/** spec.successPolicy of a JobSpec at `at`. */
export function validateSuccessPolicy(spec: any, at: string): StatusCause[] {
  const policy = spec.successPolicy;
  if (policy == null) return [];
  const path = `${at}.successPolicy`;
  if (spec.completionMode !== "Indexed")
    return [field.invalid(path, policy, "requires indexed completion mode")];
  const causes: StatusCause[] = [];
  const rules: any[] = Array.isArray(policy.rules) ? policy.rules : [];
  if (rules.length === 0)
    causes.push(
      field.required(
        `${path}.rules`,
        "at least one rules must be specified when the successPolicy is specified",
      ),
    );
  if (rules.length > MAX_RULES) causes.push(field.tooMany(`${path}.rules`, rules.length, MAX_RULES));
  const completions = typeof spec.completions === "number" ? spec.completions : 0;
  rules.forEach((rule, i) => {
    const p = `${path}.rules[${i}]`;
    if (rule?.succeededIndexes == null && rule?.succeededCount == null) {
      causes.push(field.required(p, "at least one of succeededCount or succeededIndexes must be specified"));
      return;
    }
    let total = 0;
    if (rule.succeededIndexes != null) {
      const text = String(rule.succeededIndexes);
      if (text.length > MAX_INDEXES_LENGTH)
        causes.push(field.tooLong(`${p}.succeededIndexes`, MAX_INDEXES_LENGTH));
      const counted = countIndexes(text, completions);
      if (counted.error)
        causes.push(
          field.invalid(`${p}.succeededIndexes`, text, `error parsing succeededIndexes: ${counted.error}`),
        );
      total = counted.total;
    }
    const count = rule.succeededCount;
    if (typeof count === "number") {
      const cp = `${p}.succeededCount`;
      if (count < 0) causes.push(field.invalid(cp, count, "must be greater than or equal to 0"));
      if (count > completions)
        causes.push(
          field.invalid(
            cp,
            count,
            `must be less than or equal to ${completions} (the number of specified completions)`,
          ),
        );
      if (rule.succeededIndexes != null && count > total)
        causes.push(
          field.invalid(
            cp,
            count,
            `must be less than or equal to ${total} (the number of indexes in the specified succeededIndexes field)`,
          ),
        );
    }
  });
  return causes;
}
