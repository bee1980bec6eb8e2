// Pod spec validation in upstream's words (pkg/apis/core/validation): containers,
// ports, volumes and mounts, policies; and the rule for what a pod update may change.

import { field, type StatusCause } from "../errors";
import { parseQuantity } from "../quantity";
import type { KubeObject } from "../types";
import {
  deepEqual,
  type LabelSelector,
  notFoundCause,
  selectorMatches,
  validateAnnotations,
  validateLabels,
  validateObjectMeta,
  validateObjectMetaUpdate,
} from "../validation/metadata";
import { isDNS1123Label, isDNS1123Subdomain, isValidPortName, isValidPortNum } from "../validation/names";
import { isObject } from "./common";
import { validateContainerHooks, validateEnv, validateTolerations } from "./pod-checks";
import { volumeSourceKeys } from "./pod-defaults";
import { validatePreemptionPolicy } from "./priorityclasses";
import { validateOverhead } from "./runtimeclasses";

const RESTART_POLICIES = ["Always", "OnFailure", "Never"];
const DNS_POLICIES = ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"];
const PULL_POLICIES = ["Always", "IfNotPresent", "Never"];
const PROTOCOLS = ["SCTP", "TCP", "UDP"];
const TERMINATION_MESSAGE_POLICIES = ["File", "FallbackToLogsOnError"];

export const UPDATABLE_POD_SPEC_FIELDS = [
  "`spec.containers[*].image`",
  "`spec.initContainers[*].image`",
  "`spec.activeDeadlineSeconds`",
  "`spec.tolerations` (only additions to existing tolerations)",
  "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
];

export function validateVolumes(
  volumes: unknown,
  path: string,
): { causes: StatusCause[]; names: Set<string> } {
  const causes: StatusCause[] = [];
  const names = new Set<string>();
  if (!Array.isArray(volumes)) return { causes, names };
  volumes.forEach((v, i) => {
    const p = `${path}[${i}]`;
    if (!isObject(v)) return;
    if (!v.name) causes.push(field.required(`${p}.name`));
    else {
      for (const msg of isDNS1123Label(v.name)) causes.push(field.invalid(`${p}.name`, v.name, msg));
      if (names.has(v.name)) causes.push(field.duplicate(`${p}.name`, v.name));
      names.add(v.name);
    }
    const sources = volumeSourceKeys(v);
    if (sources.length === 0) causes.push(field.required(p, "must specify a volume type"));
    else if (sources.length > 1)
      causes.push(field.forbidden(`${p}.${sources[1]}`, "may not specify more than 1 volume type"));
    if (isObject(v.configMap) && !v.configMap.name) causes.push(field.required(`${p}.configMap.name`));
    if (isObject(v.secret) && !v.secret.secretName) causes.push(field.required(`${p}.secret.secretName`));
    if (isObject(v.hostPath) && !v.hostPath.path) causes.push(field.required(`${p}.hostPath.path`));
    if (isObject(v.persistentVolumeClaim) && !v.persistentVolumeClaim.claimName)
      causes.push(field.required(`${p}.persistentVolumeClaim.claimName`));
    if (isObject(v.ephemeral) && !isObject(v.ephemeral.volumeClaimTemplate))
      causes.push(field.required(`${p}.ephemeral.volumeClaimTemplate`));
  });
  return { causes, names };
}

function validatePorts(ports: unknown, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!Array.isArray(ports)) return causes;
  const names = new Set<string>();
  ports.forEach((port, i) => {
    const p = `${path}[${i}]`;
    if (!isObject(port)) return;
    if (port.name) {
      for (const msg of isValidPortName(port.name)) causes.push(field.invalid(`${p}.name`, port.name, msg));
      if (names.has(port.name)) causes.push(field.duplicate(`${p}.name`, port.name));
      names.add(port.name);
    }
    if (!port.containerPort) causes.push(field.required(`${p}.containerPort`));
    else
      for (const msg of isValidPortNum(port.containerPort))
        causes.push(field.invalid(`${p}.containerPort`, port.containerPort, msg));
    if (port.hostPort)
      for (const msg of isValidPortNum(port.hostPort))
        causes.push(field.invalid(`${p}.hostPort`, port.hostPort, msg));
    if (!port.protocol) causes.push(field.required(`${p}.protocol`));
    else if (!PROTOCOLS.includes(port.protocol))
      causes.push(field.notSupported(`${p}.protocol`, port.protocol, PROTOCOLS));
  });
  return causes;
}

function validateResources(res: unknown, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!isObject(res)) return causes;
  for (const part of ["limits", "requests"]) {
    for (const [k, v] of Object.entries(isObject(res[part]) ? res[part] : {})) {
      const q = parseQuantity(v);
      if (q === undefined)
        causes.push(
          field.invalid(
            `${path}.${part}[${k}]`,
            v,
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
          ),
        );
      else if (q < 0)
        causes.push(field.invalid(`${path}.${part}[${k}]`, v, "must be greater than or equal to 0"));
    }
  }
  const limits = isObject(res.limits) ? res.limits : {};
  const requests = isObject(res.requests) ? res.requests : {};
  for (const [k, req] of Object.entries(requests)) {
    if (!(k in limits)) continue;
    const r = parseQuantity(req);
    const l = parseQuantity(limits[k]);
    if (r !== undefined && l !== undefined && r > l)
      causes.push(
        field.invalid(
          `${path}.requests`,
          String(req),
          `must be less than or equal to ${k} limit of ${limits[k]}`,
        ),
      );
  }
  return causes;
}

export function validateContainer(c: any, path: string, volumes: Set<string>, init: boolean): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!isObject(c)) return [field.required(path)];
  if (typeof c.image !== "string" || c.image.length === 0) causes.push(field.required(`${path}.image`));
  else if (c.image.trim() !== c.image)
    causes.push(field.invalid(`${path}.image`, c.image, "must not have leading or trailing whitespace"));
  if (c.imagePullPolicy && !PULL_POLICIES.includes(c.imagePullPolicy))
    causes.push(field.notSupported(`${path}.imagePullPolicy`, c.imagePullPolicy, PULL_POLICIES));
  if (c.terminationMessagePolicy && !TERMINATION_MESSAGE_POLICIES.includes(c.terminationMessagePolicy))
    causes.push(
      field.notSupported(
        `${path}.terminationMessagePolicy`,
        c.terminationMessagePolicy,
        TERMINATION_MESSAGE_POLICIES,
      ),
    );
  causes.push(...validatePorts(c.ports, `${path}.ports`));
  causes.push(...validateEnv(c.env, `${path}.env`));
  causes.push(...validateContainerHooks(c, path));
  const mountPaths = new Set<string>();
  if (Array.isArray(c.volumeMounts))
    c.volumeMounts.forEach((m: any, i: number) => {
      const p = `${path}.volumeMounts[${i}]`;
      if (!isObject(m)) return;
      if (!m.name) causes.push(field.required(`${p}.name`));
      else if (!volumes.has(m.name)) causes.push(notFoundCause(`${p}.name`, m.name));
      if (!m.mountPath) causes.push(field.required(`${p}.mountPath`));
      else {
        if (mountPaths.has(m.mountPath))
          causes.push(field.invalid(`${p}.mountPath`, m.mountPath, "must be unique"));
        mountPaths.add(m.mountPath);
      }
    });
  causes.push(...validateResources(c.resources, `${path}.resources`));
  if (init && c.restartPolicy !== undefined && c.restartPolicy !== "Always")
    causes.push(field.notSupported(`${path}.restartPolicy`, c.restartPolicy, ["Always"]));
  if (!init && c.restartPolicy !== undefined)
    causes.push(field.forbidden(`${path}.restartPolicy`, "may not be set for non-init containers"));
  if (init) {
    for (const probe of ["livenessProbe", "readinessProbe", "startupProbe"])
      if (c[probe] && c.restartPolicy !== "Always")
        causes.push(
          field.forbidden(
            `${path}.${probe}`,
            "may not be set for init containers without restartPolicy=Always",
          ),
        );
  }
  return causes;
}

function validateContainerList(
  list: unknown,
  path: string,
  volumes: Set<string>,
  names: Set<string>,
  init: boolean,
): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!Array.isArray(list)) return causes;
  list.forEach((c, i) => {
    const p = `${path}[${i}]`;
    const name = isObject(c) ? c.name : undefined;
    if (!name) causes.push(field.required(`${p}.name`));
    else {
      for (const msg of isDNS1123Label(name)) causes.push(field.invalid(`${p}.name`, name, msg));
      if (names.has(name)) causes.push(field.duplicate(`${p}.name`, name));
      names.add(name);
    }
    causes.push(...validateContainer(c, p, volumes, init));
  });
  return causes;
}

/**
 * A pod template at `path` (a controller's spec.template): present, its labels and annotations
 * valid and selected by `selector` (unless that is empty), and its pod spec valid.
 */
export function validatePodTemplate(
  template: unknown,
  path: string,
  selector?: LabelSelector,
): StatusCause[] {
  if (!isObject(template)) return [field.required(path)];
  const labels = template.metadata?.labels;
  const causes = validateLabels(labels, `${path}.metadata.labels`);
  causes.push(...validateAnnotations(template.metadata?.annotations, `${path}.metadata.annotations`));
  const terms = selector
    ? Object.keys(selector.matchLabels ?? {}).length + (selector.matchExpressions ?? []).length
    : 0;
  if (selector && terms > 0 && !selectorMatches(selector, labels))
    causes.push(
      field.invalid(`${path}.metadata.labels`, labels ?? {}, "`selector` does not match template `labels`"),
    );
  causes.push(...validatePodSpec(template.spec, `${path}.spec`));
  return causes;
}

/** ValidatePodSpec essentials; `path` is where the spec sits ("spec", "spec.template.spec"). */
export function validatePodSpec(spec: unknown, path = "spec"): StatusCause[] {
  if (!isObject(spec)) return [field.required(path)];
  const causes: StatusCause[] = [];
  const vols = validateVolumes(spec.volumes, `${path}.volumes`);
  causes.push(...vols.causes);
  const names = new Set<string>();
  if (!Array.isArray(spec.containers) || spec.containers.length === 0)
    causes.push(field.required(`${path}.containers`));
  causes.push(
    ...validateContainerList(spec.initContainers, `${path}.initContainers`, vols.names, names, true),
  );
  causes.push(...validateContainerList(spec.containers, `${path}.containers`, vols.names, names, false));
  if (!spec.restartPolicy) causes.push(field.required(`${path}.restartPolicy`));
  else if (!RESTART_POLICIES.includes(spec.restartPolicy))
    causes.push(field.notSupported(`${path}.restartPolicy`, spec.restartPolicy, RESTART_POLICIES));
  if (!spec.dnsPolicy) causes.push(field.required(`${path}.dnsPolicy`));
  else if (!DNS_POLICIES.includes(spec.dnsPolicy))
    causes.push(field.notSupported(`${path}.dnsPolicy`, spec.dnsPolicy, DNS_POLICIES));
  if (spec.activeDeadlineSeconds !== undefined && spec.activeDeadlineSeconds !== null) {
    const v = spec.activeDeadlineSeconds;
    if (!Number.isInteger(v) || v < 1 || v > 2147483647)
      causes.push(
        field.invalid(`${path}.activeDeadlineSeconds`, v, "must be between 1 and 2147483647, inclusive"),
      );
  }
  if (spec.nodeName)
    for (const msg of isDNS1123Subdomain(spec.nodeName))
      causes.push(field.invalid(`${path}.nodeName`, spec.nodeName, msg));
  if (spec.serviceAccountName)
    for (const msg of isDNS1123Subdomain(spec.serviceAccountName))
      causes.push(field.invalid(`${path}.serviceAccountName`, spec.serviceAccountName, msg));
  if (spec.hostname)
    for (const msg of isDNS1123Label(spec.hostname))
      causes.push(field.invalid(`${path}.hostname`, spec.hostname, msg));
  if (spec.subdomain)
    for (const msg of isDNS1123Label(spec.subdomain))
      causes.push(field.invalid(`${path}.subdomain`, spec.subdomain, msg));
  causes.push(...validateLabels(spec.nodeSelector, `${path}.nodeSelector`));
  causes.push(...validateTolerations(spec.tolerations, `${path}.tolerations`));
  if (spec.runtimeClassName != null)
    for (const msg of isDNS1123Subdomain(String(spec.runtimeClassName)))
      causes.push(field.invalid(`${path}.runtimeClassName`, spec.runtimeClassName, msg));
  causes.push(...validateOverhead(spec.overhead, `${path}.overhead.limits`));
  if (spec.priorityClassName)
    for (const msg of isDNS1123Subdomain(String(spec.priorityClassName)))
      causes.push(field.invalid(`${path}.priorityClassName`, spec.priorityClassName, msg));
  causes.push(...validatePreemptionPolicy(spec.preemptionPolicy, `${path}.preemptionPolicy`));
  if (
    typeof spec.terminationGracePeriodSeconds === "number" &&
    !Number.isInteger(spec.terminationGracePeriodSeconds)
  )
    causes.push(
      field.invalid(
        `${path}.terminationGracePeriodSeconds`,
        spec.terminationGracePeriodSeconds,
        "must be an integer",
      ),
    );
  return causes;
}

export function validatePod(obj: KubeObject): StatusCause[] {
  return [...validateObjectMeta(obj.metadata, { namespaced: true }), ...validatePodSpec(obj.spec)];
}

/** What a pod update may change: images, activeDeadlineSeconds, added tolerations, grace period -1 -> 1. */
export function validatePodUpdate(obj: KubeObject, old: KubeObject): StatusCause[] {
  const causes = [...validateObjectMetaUpdate(obj.metadata, old.metadata), ...validatePodSpec(obj.spec)];
  const spec = isObject(obj.spec) ? obj.spec : {};
  const oldSpec = isObject(old.spec) ? old.spec : {};
  for (const key of ["containers", "initContainers"]) {
    (Array.isArray(spec[key]) ? spec[key] : []).forEach((c: any, i: number) => {
      if (isObject(c) && !c.image) causes.push(field.required(`spec.${key}[${i}].image`));
    });
  }
  const oldADS = oldSpec.activeDeadlineSeconds;
  const newADS = spec.activeDeadlineSeconds;
  if (oldADS != null && (newADS == null || newADS > oldADS))
    causes.push(
      field.invalid(
        "spec.activeDeadlineSeconds",
        newADS ?? null,
        "must be less than or equal to previous value",
      ),
    );

  // An unchanged spec (every status write) needs no copies to tell so.
  if (spec === oldSpec || deepEqual(spec, oldSpec)) return causes;
  // Compare the specs with the mutable parts taken from the new one.
  const mutated: Record<string, any> = structuredClone(spec);
  const base: Record<string, any> = structuredClone(oldSpec);
  for (const key of ["containers", "initContainers"]) {
    const a = mutated[key];
    const b = base[key];
    if (Array.isArray(a) && Array.isArray(b) && a.length === b.length)
      a.forEach((c, i) => {
        if (isObject(c) && isObject(b[i])) c.image = b[i].image;
      });
  }
  mutated.activeDeadlineSeconds = base.activeDeadlineSeconds;
  const oldTol: unknown[] = Array.isArray(base.tolerations) ? base.tolerations : [];
  const newTol: unknown[] = Array.isArray(mutated.tolerations) ? mutated.tolerations : [];
  if (oldTol.every((t) => newTol.some((n) => deepEqual(n, t)))) mutated.tolerations = base.tolerations;
  if (
    typeof base.terminationGracePeriodSeconds === "number" &&
    base.terminationGracePeriodSeconds < 0 &&
    mutated.terminationGracePeriodSeconds === 1
  )
    mutated.terminationGracePeriodSeconds = base.terminationGracePeriodSeconds;
  if (!deepEqual(mutated, base)) {
    causes.push(
      field.forbidden(
        "spec",
        `pod updates may not change fields other than ${UPDATABLE_POD_SPEC_FIELDS.join(",")}\n${specDiff(base, mutated)}`,
      ),
    );
  }
  return causes;
}

/** A short, readable diff of two specs: one "-"/"+" pair per changed top-level field. */
export function specDiff(a: Record<string, any>, b: Record<string, any>, type = "core.PodSpec"): string {
  const lines = [`  ${type}{`];
  for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
    if (deepEqual(a[k], b[k])) continue;
    lines.push(`- \t${k}: ${JSON.stringify(a[k] ?? null)},`);
    lines.push(`+ \t${k}: ${JSON.stringify(b[k] ?? null)},`);
  }
  lines.push("  }");
  return lines.join("\n");
}
