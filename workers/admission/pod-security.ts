// PodSecurity (upstream staging/src/k8s.io/pod-security-admission): the namespace's
// pod-security.kubernetes.io/{enforce,warn,audit} labels choose a Pod Security Standards level.
// enforce refuses violating pods; warn answers with a Warning header and audit annotates the
// request's audit events (pod-security.kubernetes.io/audit-violations), both also for the pod
// templates of workload resources. Only version "latest" exists: a pinned version is checked as
// latest but named as asked.
import type { KubeObject } from "../../api/types";
import { Store } from "../../durable-objects/store/client";
import { addAuditAnnotation } from "../audit/index";
import type { AdmissionAttributes, AdmissionPlugin } from "./index";
import { checkPod, describeViolations, type Level } from "./pod-security-checks";
import { admissionForbidden, cachedRead, coreDef, isObj, listIn } from "./util";

const PREFIX = "pod-security.kubernetes.io/";
const LEVELS = new Set(["privileged", "baseline", "restricted"]);
const TEMPLATE_KINDS: Record<string, string[]> = {
  "": ["replicationcontrollers", "podtemplates"],
  apps: ["deployments", "replicasets", "statefulsets", "daemonsets"],
  batch: ["jobs", "cronjobs"],
};

export interface Policy {
  level: Level;
  version: string;
}

export function policyFrom(
  labels: Record<string, string> | undefined,
  mode: "enforce" | "warn" | "audit",
): Policy | undefined {
  const level = labels?.[PREFIX + mode];
  if (!level || !LEVELS.has(level) || level === "privileged") return undefined;
  const v = labels?.[`${PREFIX}${mode}-version`];
  const version = (v && policyVersion(v)) || "latest";
  return { level: level as Level, version };
}

const RANK: Record<Level, number> = { privileged: 0, baseline: 1, restricted: 2 };

/**
 * The policy of each mode a namespace's labels give (undefined: privileged), as upstream's
 * PolicyToEvaluate: without a warn label, warn takes the enforce level (and its version, unless
 * warn-version is set), so a namespace that enforces a level warns of workload templates that
 * would break it: their pods would be refused.
 */
export function namespacePolicy(labels: Record<string, string> | undefined): {
  enforce?: Policy;
  warn?: Policy;
  audit?: Policy;
} {
  const enforce = policyFrom(labels, "enforce");
  let warn = policyFrom(labels, "warn");
  if (enforce && labels?.[`${PREFIX}warn`] === undefined && RANK[enforce.level] > RANK.privileged) {
    const v = labels?.[`${PREFIX}warn-version`];
    warn = {
      level: enforce.level,
      version: v !== undefined ? (policyVersion(v) ?? "latest") : enforce.version,
    };
  }
  return { enforce, warn, audit: policyFrom(labels, "audit") };
}

function policyVersion(v: string): string | undefined {
  return /^(latest|v1\.\d+)$/.test(v) ? v : undefined;
}

/** The pod spec and metadata an object carries: a pod's own, or its template's. */
function podParts(a: AdmissionAttributes, obj: KubeObject): { meta: any; spec: any } | undefined {
  const { group, resource } = a.w.def;
  if (group === "" && resource === "pods") return { meta: obj.metadata, spec: obj.spec };
  if (!TEMPLATE_KINDS[group]?.includes(resource)) return undefined;
  const t =
    resource === "cronjobs"
      ? obj.spec?.jobTemplate?.spec?.template
      : resource === "podtemplates"
        ? (obj as any).template
        : obj.spec?.template;
  return isObj(t) ? { meta: t.metadata ?? {}, spec: t.spec } : undefined;
}

/** A namespace that tightens its enforce level hears which of its pods would now be refused. */
async function warnExistingPods(a: AdmissionAttributes): Promise<void> {
  const next = policyFrom(a.object?.metadata.labels, "enforce");
  const before = policyFrom(a.old?.metadata.labels, "enforce");
  if (!next || (before && before.level === next.level && before.version === next.version)) return;
  const ns = a.object!.metadata.name ?? "";
  const pods = await listIn(a.w.c.env, coreDef("pods"), ns);
  const lines: string[] = [];
  for (const p of pods) {
    const vs = checkPod(next.level, p.metadata, p.spec);
    if (vs.length) lines.push(`${p.metadata.name}: ${vs.map((v) => v.reason).join(", ")}`);
  }
  if (!lines.length) return;
  a.w.warnings.push(
    `existing pods in namespace "${ns}" violate the new PodSecurity enforce level "${next.level}:${next.version}"`,
    ...lines,
  );
}

export const podSecurity: AdmissionPlugin = {
  name: "PodSecurity",
  async validate(a) {
    if (a.operation === "UPDATE" && a.w.def.group === "" && a.w.def.resource === "namespaces" && a.object)
      return warnExistingPods(a);
    if (!a.object || (a.operation !== "CREATE" && a.operation !== "UPDATE") || !a.w.def.namespaced) return;
    if (a.w.info.subresource && a.w.info.subresource !== "ephemeralcontainers") return;
    const parts = podParts(a, a.object);
    if (!parts) return;
    const isPod = a.w.def.group === "" && a.w.def.resource === "pods";
    // a pod update that leaves the pod spec alone (labels, status) is not re-checked; a
    // workload's every create and update is, as upstream's ValidatePodController does
    if (
      isPod &&
      a.operation === "UPDATE" &&
      a.old &&
      JSON.stringify(podParts(a, a.old)?.spec) === JSON.stringify(parts.spec)
    )
      return;
    const nsDef = coreDef("namespaces");
    const nsName = a.object.metadata.namespace ?? "";
    const ns = await cachedRead(a.w.c.env, nsDef, nsName, () => new Store(a.w.c.env, nsDef).find("", nsName));
    const labels = ns?.metadata.labels;
    if (!labels) return;
    const { enforce, warn, audit } = namespacePolicy(labels);
    if (enforce && isPod)
      addAuditAnnotation(
        a.w.c,
        "pod-security.kubernetes.io/enforce-policy",
        `${enforce.level}:${enforce.version}`,
      );
    if (enforce && isPod) {
      const vs = checkPod(enforce.level, parts.meta, parts.spec);
      if (vs.length)
        throw admissionForbidden(
          a,
          `violates PodSecurity "${enforce.level}:${enforce.version}": ${describeViolations(vs)}`,
        );
    }
    if (audit) {
      const vs = checkPod(audit.level, parts.meta, parts.spec);
      if (vs.length)
        addAuditAnnotation(
          a.w.c,
          "pod-security.kubernetes.io/audit-violations",
          `would violate PodSecurity "${audit.level}:${audit.version}": ${describeViolations(vs)}`,
        );
    }
    // a workload is never refused: its template only warns, at the warn level (which defaults
    // to the enforce level), in upstream's words
    if (warn) {
      const vs = checkPod(warn.level, parts.meta, parts.spec);
      if (vs.length)
        a.w.warnings.push(
          `would violate PodSecurity "${warn.level}:${warn.version}": ${describeViolations(vs)}`,
        );
    }
  },
};
