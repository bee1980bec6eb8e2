// Indexed Jobs (completionMode: Indexed): each pod runs one completion index in
// [0, completions), carried in the batch.kubernetes.io/job-completion-index annotation and
// label, as its hostname (<job>-<index>) and in JOB_COMPLETION_INDEX; status.completedIndexes
// lists the succeeded ones as ranges ("0-2,4").
import type { KubeObject } from "../../../api/types";

export const INDEX_KEY = "batch.kubernetes.io/job-completion-index";

export const isIndexed = (job: KubeObject) => job.spec?.completionMode === "Indexed";

/** A pod's completion index, or undefined when it has none valid for the Job. */
export function indexOf(pod: KubeObject, completions: number): number | undefined {
  const text = pod.metadata.annotations?.[INDEX_KEY];
  if (text === undefined || !/^\d+$/.test(text)) return undefined;
  const i = Number(text);
  return i < completions ? i : undefined;
}

/** "1,3-5" -> {1,3,4,5} */
export function parseIndexes(text: string | undefined): Set<number> {
  const out = new Set<number>();
  for (const part of (text ?? "").split(",")) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) continue;
    for (let i = Number(m[1]); i <= Number(m[2] ?? m[1]); i++) out.add(i);
  }
  return out;
}

/** {1,3,4,5} -> "1,3-5" */
export function formatIndexes(set: Set<number>): string {
  const sorted = [...set].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    parts.push(j > i ? `${sorted[i]}-${sorted[j]}` : `${sorted[i]}`);
    i = j + 1;
  }
  return parts.join(",");
}

/** Dresses a pod from the template as the one for `index`. */
export function indexPod(job: KubeObject, pod: KubeObject, index: number): KubeObject {
  const i = String(index);
  pod.metadata.generateName = `${job.metadata.name}-${i}-`;
  pod.metadata.annotations = { ...(pod.metadata.annotations ?? {}), [INDEX_KEY]: i };
  pod.metadata.labels = { ...(pod.metadata.labels ?? {}), [INDEX_KEY]: i };
  const spec = pod.spec ?? (pod.spec = {});
  if (!spec.hostname) spec.hostname = `${job.metadata.name}-${i}`;
  const env = {
    name: "JOB_COMPLETION_INDEX",
    valueFrom: { fieldRef: { fieldPath: `metadata.labels['${INDEX_KEY}']` } },
  };
  for (const list of ["initContainers", "containers"])
    for (const c of spec[list] ?? [])
      if (!(c.env ?? []).some((e: any) => e.name === env.name)) c.env = [...(c.env ?? []), env];
  return pod;
}

/**
 * The first rule of an Indexed Job's spec.successPolicy that the succeeded indexes meet, as
 * upstream words it ("Matched rules at index 0"), or undefined.
 */
export function matchSuccessPolicy(
  policy: any,
  succeeded: Set<number>,
  completions: number,
): string | undefined {
  if (!succeeded.size) return undefined;
  const rules: any[] = Array.isArray(policy?.rules) ? policy.rules : [];
  for (let i = 0; i < rules.length; i++) {
    const { succeededIndexes, succeededCount } = rules[i] ?? {};
    if (succeededIndexes != null) {
      const wanted = [...parseIndexes(String(succeededIndexes))].filter((x) => x < completions);
      if (!wanted.length) continue;
      const met = wanted.filter((x) => succeeded.has(x)).length;
      if (met === wanted.length || (typeof succeededCount === "number" && met >= succeededCount))
        return `Matched rules at index ${i}`;
    } else if (typeof succeededCount === "number" && succeeded.size >= succeededCount)
      return `Matched rules at index ${i}`;
  }
  return undefined;
}

/** Active pods of an Indexed Job with no valid index, a completed one, or one another pod holds. */
export function misplacedPods(
  active: KubeObject[],
  completed: Set<number>,
  completions: number,
): KubeObject[] {
  const held = new Set<number>();
  return active.filter((p) => {
    const i = indexOf(p, completions);
    if (i === undefined || completed.has(i) || held.has(i)) return true;
    held.add(i);
    return false;
  });
}

/** The indexes still to run that no active pod holds, lowest first. */
export function pendingIndexes(
  active: KubeObject[],
  completed: Set<number>,
  completions: number,
  failed = new Set<number>(),
): number[] {
  const held = new Set(active.map((p) => indexOf(p, completions)));
  const out: number[] = [];
  for (let i = 0; i < completions; i++) if (!completed.has(i) && !held.has(i) && !failed.has(i)) out.push(i);
  return out;
}
