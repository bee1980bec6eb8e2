// Ephemeral containers (kubectl debug): added to a running pod through the pods/ephemeralcontainers
// subresource only, never on create, and never changed or removed once there. Upstream's
// ValidatePodEphemeralContainersUpdate and validateEphemeralContainers, in its words.

import { field, type StatusCause } from "../errors";
import type { KubeObject } from "../types";
import { deepEqual, notFoundCause, validateObjectMetaUpdate } from "../validation/metadata";
import { isDNS1123Label } from "../validation/names";
import { isObject } from "./common";
import { specDiff, validateContainer, validateVolumes } from "./pod-validation";

const PATH = "spec.ephemeralContainers";
const MIRROR_ANNOTATION = "kubernetes.io/config.mirror";
const NOT_HERE = "cannot be set for an Ephemeral Container";
/** Container fields an ephemeral container may not set (upstream's allow list, the false entries). */
const FORBIDDEN_FIELDS = [
  "ports",
  "resources",
  "resizePolicy",
  "restartPolicy",
  "livenessProbe",
  "readinessProbe",
  "startupProbe",
  "lifecycle",
];

/** Whether Go would see a non-zero value: absent, "", false, 0, [] and {} of zeros are not set. */
function isSet(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === "" || v === 0) return false;
  if (Array.isArray(v)) return v.length > 0;
  if (isObject(v)) return Object.values(v).some(isSet);
  return true;
}

/** Ephemeral containers are refused on create ("cannot be set on create"). */
export function ephemeralOnCreate(spec: unknown): StatusCause[] {
  return isObject(spec) && Array.isArray(spec.ephemeralContainers) && spec.ephemeralContainers.length
    ? [field.forbidden(PATH, "cannot be set on create")]
    : [];
}

function validateEphemeral(spec: Record<string, any>): StatusCause[] {
  const list: unknown[] = Array.isArray(spec.ephemeralContainers) ? spec.ephemeralContainers : [];
  if (!list.length) return [];
  const volumes = validateVolumes(spec.volumes, "spec.volumes").names;
  const others = new Set<string>();
  for (const key of ["containers", "initContainers"])
    for (const c of Array.isArray(spec[key]) ? spec[key] : []) if (isObject(c)) others.add(c.name);
  const all = new Set(others);
  const causes: StatusCause[] = [];
  list.forEach((c: any, i) => {
    const p = `${PATH}[${i}]`;
    if (!isObject(c)) {
      causes.push(field.required(p));
      return;
    }
    if (!c.name) causes.push(field.required(`${p}.name`));
    else for (const msg of isDNS1123Label(c.name)) causes.push(field.invalid(`${p}.name`, c.name, msg));
    // the fields it may not have are reported once, as forbidden, not also checked as values
    const common = { ...c };
    for (const f of FORBIDDEN_FIELDS) delete common[f];
    causes.push(...validateContainer(common, p, volumes, false));
    if (c.name) {
      if (all.has(c.name)) causes.push(field.duplicate(`${p}.name`, c.name));
      all.add(c.name);
    }
    if (c.targetContainerName && !others.has(c.targetContainerName))
      causes.push(notFoundCause(`${p}.targetContainerName`, c.targetContainerName));
    for (const f of FORBIDDEN_FIELDS) if (isSet(c[f])) causes.push(field.forbidden(`${p}.${f}`, NOT_HERE));
    (Array.isArray(c.volumeMounts) ? c.volumeMounts : []).forEach((m: any, j: number) => {
      for (const f of ["subPath", "subPathExpr"])
        if (isObject(m) && m[f]) causes.push(field.forbidden(`${p}.volumeMounts[${j}].${f}`, NOT_HERE));
    });
  });
  return causes;
}

/** An update through pods/ephemeralcontainers: new ones valid, existing ones as they were. */
export function validateEphemeralUpdate(obj: KubeObject, old: KubeObject): StatusCause[] {
  if (isObject(old.metadata.annotations) && MIRROR_ANNOTATION in old.metadata.annotations)
    return [field.forbidden("", "static pods do not support ephemeral containers")];
  const spec = isObject(obj.spec) ? obj.spec : {};
  const causes = [...validateObjectMetaUpdate(obj.metadata, old.metadata), ...validateEphemeral(spec)];
  const now = new Map<string, Record<string, any>>();
  for (const c of Array.isArray(spec.ephemeralContainers) ? spec.ephemeralContainers : [])
    if (isObject(c)) now.set(c.name, c);
  for (const was of Array.isArray(old.spec?.ephemeralContainers) ? old.spec.ephemeralContainers : []) {
    const c = now.get(was.name);
    if (!c)
      causes.push(field.forbidden(PATH, `existing ephemeral containers "${was.name}" may not be removed\n`));
    else if (!deepEqual(c, was))
      causes.push(
        field.forbidden(
          `${PATH}[${was.name}]`,
          `existing ephemeral containers "${was.name}" may not be changed\n${specDiff(was, c, "core.EphemeralContainer")}`,
        ),
      );
  }
  return causes;
}
