// apiregistration.k8s.io/v1 apiservices: which server answers a group/version. A local one
// (spec.service null) is served in this process; another names a Service whose endpoints the
// aggregator proxies to (workers/aggregation/). Upstream's validation (name "<version>.<group>",
// priority ranges, TLS settings only for a service, a service's namespace, name and port),
// defaults (port 443) and `kubectl get apiservices` columns.
import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { validateMeta } from "../validation/metadata";
import { isDNS1035Label, isDNS1123Subdomain, nameIsPathSegment } from "../validation/names";
import { ageColumn, column, isObject, nameColumn } from "./common";

export interface ServiceReference {
  namespace?: string;
  name?: string;
  port?: number;
}

export interface APIServiceCondition {
  type: string;
  status: "True" | "False" | "Unknown";
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface APIService extends KubeObject {
  spec?: {
    group?: string;
    version?: string;
    service?: ServiceReference | null;
    caBundle?: string;
    insecureSkipTLSVerify?: boolean;
    groupPriorityMinimum?: number;
    versionPriority?: number;
  };
  status?: { conditions?: APIServiceCondition[] };
}

/** The label upstream's autoregister controller marks the APIServices it keeps with. */
export const AUTOMANAGED_LABEL = "kube-aggregator.kubernetes.io/automanaged";

/** The name an APIService for group/version must have: "<version>.<group>" ("v1." for core). */
export const apiServiceName = (group: string, version: string) => `${version}.${group}`;

/** The Available condition, if the status has one. */
export function availableCondition(svc: APIService): APIServiceCondition | undefined {
  return svc.status?.conditions?.find((c) => c.type === "Available");
}

export const isAvailable = (svc: APIService) => availableCondition(svc)?.status === "True";

/** Bytes of a base64 caBundle (what upstream's messages count). */
function caBundleBytes(ca: unknown): number {
  if (typeof ca !== "string" || !ca) return 0;
  const pad = ca.endsWith("==") ? 2 : ca.endsWith("=") ? 1 : 0;
  return Math.floor((ca.length * 3) / 4) - pad;
}

const CONDITION_STATUSES = ["True", "False", "Unknown"];

export function validateAPIService(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: false, name: nameIsPathSegment });
  const spec = (isObject(obj.spec) ? obj.spec : {}) as NonNullable<APIService["spec"]>;
  const group = String(spec.group ?? "");
  const version = String(spec.version ?? "");
  const want = apiServiceName(group, version);
  const name = obj.metadata.name ?? "";
  if (name && nameIsPathSegment(name, false).length === 0 && name !== want)
    causes.push(field.invalid("metadata.name", name, `must be \`spec.version+"."+spec.group\`: "${want}"`));
  if (!group && version !== "v1")
    causes.push(field.required("spec.group", "only v1 may have an empty group and it better be legacy kube"));
  if (group)
    for (const msg of isDNS1123Subdomain(group)) causes.push(field.invalid("spec.group", group, msg));
  for (const msg of isDNS1035Label(version)) causes.push(field.invalid("spec.version", version, msg));
  const gpm = Number(spec.groupPriorityMinimum ?? 0);
  if (!(gpm > 0 && gpm <= 20000))
    causes.push(field.invalid("spec.groupPriorityMinimum", gpm, "must be positive and less than 20000"));
  const vp = Number(spec.versionPriority ?? 0);
  if (!(vp > 0 && vp <= 1000))
    causes.push(field.invalid("spec.versionPriority", vp, "must be positive and less than 1000"));
  const caBytes = caBundleBytes(spec.caBundle);
  const skip = spec.insecureSkipTLSVerify === true;
  const service = spec.service;
  if (service == null) {
    if (caBytes)
      causes.push(
        field.invalidShown(
          "spec.caBundle",
          `"${caBytes} bytes"`,
          "local APIServices may not have a caBundle",
        ),
      );
    if (skip)
      causes.push(
        field.invalid(
          "spec.insecureSkipTLSVerify",
          true,
          "local APIServices may not have insecureSkipTLSVerify",
        ),
      );
  } else {
    if (!service.namespace) causes.push(field.required("spec.service.namespace"));
    if (!service.name) causes.push(field.required("spec.service.name"));
    const port = Number(service.port ?? 0);
    if (!(Number.isInteger(port) && port >= 1 && port <= 65535))
      causes.push(
        field.invalid("spec.service.port", port, "port is not valid: must be between 1 and 65535, inclusive"),
      );
    if (skip && caBytes)
      causes.push(
        field.invalid("spec.insecureSkipTLSVerify", true, "may not be true if caBundle is present"),
      );
  }
  (obj as APIService).status?.conditions?.forEach((c, i) => {
    if (!CONDITION_STATUSES.includes(c?.status))
      causes.push(field.notSupported(`status.conditions[${i}].status`, c?.status, CONDITION_STATUSES));
  });
  return causes;
}

export const apiservices: ResourceDef = {
  group: "apiregistration.k8s.io",
  version: "v1",
  resource: "apiservices",
  kind: "APIService",
  listKind: "APIServiceList",
  singular: "apiservice",
  namespaced: false,
  categories: ["api-extensions"],
  verbs: STANDARD_VERBS,
  subresources: { status: { kind: "APIService", verbs: ["get", "patch", "update"] } },
  strategy: {
    defaults: (obj) => {
      const svc = (obj as APIService).spec?.service;
      if (svc && svc.port == null) svc.port = 443;
    },
    prepareForCreate: (obj) => {
      obj.status = {};
    },
    validate: validateAPIService,
    columns: [
      nameColumn,
      column("Service", "string", "The reference to the service that hosts this API endpoint.", (o) => {
        const s = (o as APIService).spec?.service;
        return s ? `${s.namespace}/${s.name}` : "Local";
      }),
      column("Available", "string", "Whether this service is available.", (o) => {
        const c = availableCondition(o as APIService);
        if (!c) return "Unknown";
        return c.status === "True" ? "True" : `${c.status} (${c.reason ?? ""})`;
      }),
      ageColumn,
    ],
  },
};
